import type { ServerResponse } from 'node:http';
import { followHostEvents, type HostEventsOptions } from './event-stream.js';
import type { ReplayWriter, StreamReplay } from './stream-replay.js';

const KEEPALIVE_MS = 25_000;
/** How long a session's events are still followed, and kept, after its host's GET stream dropped. */
export const DETACHED_FOLLOW_MS = 5 * 60_000;

interface Following {
  writer: ReplayWriter;
  stop(): void;
  /** The host connections reading the stream now. */
  readers: number;
  /** Ends the following when no host came back in time. */
  timer: NodeJS.Timeout | null;
}

/**
 * The 2025 sessions' GET streams (what a session hears besides its answers: log
 * messages, list changes, resource updates; event-stream.ts). Each event has an id
 * and is kept by the replay of the POST streams (stream-replay.ts, one mechanism),
 * and a session's events are still followed for DETACHED_FOLLOW_MS after its host's
 * connection dropped, so a host coming back with Last-Event-ID gets what it missed,
 * then the rest. One following per session: a GET without an id of its stream
 * reads along when another connection reads it, and otherwise starts it anew (a 2025
 * upstream serves one GET stream per session). Kept in the process
 * that served the stream, as the POST streams are (docs/gateway.md).
 */
export class HostEventStreams {
  private readonly bySession = new Map<string, Following>();

  constructor(private readonly replay: StreamReplay) {}

  /** Whether `lastEventId` names an event of the session's GET stream in this process. */
  holds(sessionId: string, lastEventId: string): boolean {
    const following = this.bySession.get(sessionId);
    return following !== undefined && lastEventId.startsWith(`${following.writer.stream}:`);
  }

  /** Serves a host's GET on `out`: the session's stream after `lastEventId` when this process holds it, else a new one. Resolves when the host goes away. */
  async serve(opts: HostEventsOptions, out: ServerResponse, lastEventId: string | undefined): Promise<void> {
    const sessionId = opts.session.id;
    const gone = new AbortController();
    out.on('close', () => gone.abort());
    let following = this.bySession.get(sessionId);
    let events = following && lastEventId && this.holds(sessionId, lastEventId) ? this.replay.resume(sessionId, lastEventId, gone.signal) : null;
    // Another connection of the host reads the stream: this one reads along from now on, as a second GET did before.
    if (following && !events && following.readers > 0)
      events = this.replay.resume(sessionId, `${following.writer.stream}:${following.writer.last()}`, gone.signal);
    if (!following || !events) {
      this.end(sessionId);
      const writer = this.replay.open(sessionId);
      following = { writer, readers: 0, timer: null, stop: followHostEvents(opts, (message) => void writer.event(message)) };
      this.bySession.set(sessionId, following);
      events = this.replay.resume(sessionId, `${writer.stream}:0`, gone.signal);
    }
    following.readers++;
    if (following.timer) clearTimeout(following.timer);
    following.timer = null;
    const keepalive = setInterval(() => !out.destroyed && out.write(': keepalive\n\n'), KEEPALIVE_MS);
    try {
      for await (const text of events ?? []) if (!out.destroyed) out.write(text);
    } finally {
      clearInterval(keepalive);
      following.readers--;
      const left = following;
      if (left.readers === 0 && this.bySession.get(sessionId) === left) left.timer = setTimeout(() => this.end(sessionId, left), DETACHED_FOLLOW_MS).unref();
      // The stream ended under a connected host (DELETE, the process closing, dropped for room): the host is told so.
      if (!out.destroyed) out.end();
    }
  }

  /** Stops following every session (the process is closing). */
  close(): void {
    for (const sessionId of [...this.bySession.keys()]) this.end(sessionId);
  }

  /** Stops following a session and ends its stream (only `which`, when named: a newer one may have taken its place). */
  end(sessionId: string, which?: Following): void {
    const following = this.bySession.get(sessionId);
    if (!following || (which && following !== which)) return;
    this.bySession.delete(sessionId);
    if (following.timer) clearTimeout(following.timer);
    following.stop();
    following.writer.end();
  }
}
