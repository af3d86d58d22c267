import { randomBytes } from 'node:crypto';

/** How long an ended stream can still be resumed, and the bounds on what is kept. */
const KEEP_AFTER_END_MS = 60_000;
const MAX_EVENTS_PER_STREAM = 1_000;
const MAX_STREAMS = 10_000;

interface Kept {
  sessionId: string;
  events: { seq: number; text: string }[];
  /** Events dropped from the front when a stream outgrew MAX_EVENTS_PER_STREAM. */
  firstSeq: number;
  ended: boolean;
  listeners: Set<() => void>;
}

/** One response stream as it is written: each message gets an event id the host can resume from. */
export interface ReplayWriter {
  /** Formats the message as an SSE event with its id, and keeps it for a resumption. */
  event(message: unknown): string;
  end(): void;
}

/**
 * The gateway's response streams to 2025 hosts, kept so a host whose connection
 * dropped can come back with GET and Last-Event-ID (MCP Streamable HTTP
 * resumability) and get what it missed, then the rest as it comes. Kept in the
 * process that served the stream, for a minute after it ended: a resumption that
 * reaches another replica finds nothing to replay (docs/gateway.md).
 */
export class StreamReplay {
  private readonly streams = new Map<string, Kept>();

  open(sessionId: string): ReplayWriter {
    const id = randomBytes(8).toString('hex');
    const kept: Kept = { sessionId, events: [], firstSeq: 1, ended: false, listeners: new Set() };
    if (this.streams.size >= MAX_STREAMS) this.streams.delete(this.streams.keys().next().value!);
    this.streams.set(id, kept);
    let seq = 0;
    const notify = () => {
      for (const listener of kept.listeners) listener();
    };
    return {
      event: (message) => {
        seq++;
        const text = `id: ${id}:${seq}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`;
        kept.events.push({ seq, text });
        if (kept.events.length > MAX_EVENTS_PER_STREAM) kept.firstSeq = kept.events.shift()!.seq + 1;
        notify();
        return text;
      },
      end: () => {
        kept.ended = true;
        notify();
        setTimeout(() => this.streams.delete(id), KEEP_AFTER_END_MS).unref();
      },
    };
  }

  /**
   * The events of the stream `lastEventId` names that follow it, then those still to
   * come, as SSE text; null when this process does not hold that stream for this
   * session (or has dropped the events it would need).
   */
  resume(sessionId: string, lastEventId: string): AsyncIterable<string> | null {
    const [id, seqText] = lastEventId.split(':');
    const kept = id ? this.streams.get(id) : undefined;
    const after = Number(seqText);
    if (!kept || kept.sessionId !== sessionId || !Number.isInteger(after) || after + 1 < kept.firstSeq) return null;
    return (async function* () {
      let next = after + 1;
      for (;;) {
        for (const e of kept.events) {
          if (e.seq < next) continue;
          next = e.seq + 1;
          yield e.text;
        }
        if (kept.ended) return;
        await new Promise<void>((resolve) => {
          const wake = () => (kept.listeners.delete(wake), resolve());
          kept.listeners.add(wake);
        });
      }
    })();
  }
}
