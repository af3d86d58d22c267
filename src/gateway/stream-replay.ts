import { randomBytes } from 'node:crypto';

/** How long an ended stream can still be resumed, and the bounds on what is kept. */
const KEEP_AFTER_END_MS = 60_000;
const MAX_EVENTS_PER_STREAM = 1_000;
/** A kept event older than this goes when the stream's next one comes (a session's GET stream can live for hours). */
const MAX_EVENT_AGE_MS = 5 * 60_000;
const MAX_STREAMS = 10_000;
/** What a process keeps of replayable text at most, per stream and in all: past it the oldest goes first. */
export const REPLAY_BYTE_LIMITS = { perStream: 1 << 20, total: 64 << 20 };

interface Kept {
  sessionId: string;
  events: { seq: number; text: string; at: number }[];
  /** The kept events' text length (UTF-16 units, close enough to bytes for a budget). */
  size: number;
  /** Events dropped from the front when a stream outgrew MAX_EVENTS_PER_STREAM. */
  firstSeq: number;
  ended: boolean;
  listeners: Set<() => void>;
}

/** One response stream as it is written: each message gets an event id the host can resume from. */
export interface ReplayWriter {
  /** The stream's id, the part of its event ids before the colon. */
  readonly stream: string;
  /** The id number of the stream's last event so far (0 before the first). */
  last(): number;
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
  /** The kept text of every stream. */
  private size = 0;

  constructor(private readonly limits = REPLAY_BYTE_LIMITS) {}

  open(sessionId: string): ReplayWriter {
    const id = randomBytes(8).toString('hex');
    const kept: Kept = { sessionId, events: [], size: 0, firstSeq: 1, ended: false, listeners: new Set() };
    if (this.streams.size >= MAX_STREAMS) this.forget(this.streams.keys().next().value!);
    this.streams.set(id, kept);
    let seq = 0;
    const notify = () => {
      for (const listener of kept.listeners) listener();
    };
    return {
      stream: id,
      last: () => seq,
      event: (message) => {
        seq++;
        const text = `id: ${id}:${seq}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`;
        // A stream dropped for room keeps nothing more (a resumption of it finds nothing).
        if (this.streams.get(id) !== kept) return text;
        const at = Date.now();
        kept.events.push({ seq, text, at });
        kept.size += text.length;
        this.size += text.length;
        // The newest event always stays: a live listener reads it from here.
        while (
          kept.events.length > 1 &&
          (kept.events.length > MAX_EVENTS_PER_STREAM || kept.size > this.limits.perStream || kept.events[0]!.at < at - MAX_EVENT_AGE_MS)
        ) {
          const dropped = kept.events.shift()!;
          kept.size -= dropped.text.length;
          this.size -= dropped.text.length;
          kept.firstSeq = dropped.seq + 1;
        }
        for (const oldest of this.streams.keys()) {
          if (this.size <= this.limits.total || oldest === id) break;
          this.forget(oldest);
        }
        notify();
        return text;
      },
      end: () => {
        kept.ended = true;
        notify();
        setTimeout(() => this.forget(id), KEEP_AFTER_END_MS).unref();
      },
    };
  }

  /** Drops a stream and its events (a host resuming it finds nothing). */
  forget(id: string): void {
    const kept = this.streams.get(id);
    if (!kept) return;
    this.size -= kept.size;
    this.streams.delete(id);
    // A host reading it through a resumption is told it ended, rather than left waiting.
    kept.ended = true;
    for (const listener of kept.listeners) listener();
  }

  /**
   * The events of the stream `lastEventId` names that follow it, then those still to
   * come, as SSE text; null when this process does not hold that stream for this
   * session (or has dropped the events it would need, or the stream ended with
   * nothing after it). It ends with the stream, or
   * when `signal` aborts (the reader went away).
   */
  resume(sessionId: string, lastEventId: string, signal?: AbortSignal): AsyncIterable<string> | null {
    const [id, seqText] = lastEventId.split(':');
    const kept = id ? this.streams.get(id) : undefined;
    const after = Number(seqText);
    if (!kept || kept.sessionId !== sessionId || !Number.isInteger(after) || after + 1 < kept.firstSeq) return null;
    // Nothing more will come: the host is better served by a new stream than by one that ends at once (and again when it resumes).
    if (kept.ended && !kept.events.some((e) => e.seq > after)) return null;
    return (async function* () {
      let next = after + 1;
      for (;;) {
        for (const e of kept.events) {
          if (e.seq < next) continue;
          next = e.seq + 1;
          yield e.text;
        }
        if (kept.ended || signal?.aborted) return;
        await new Promise<void>((resolve) => {
          const wake = () => (kept.listeners.delete(wake), signal?.removeEventListener('abort', wake), resolve());
          kept.listeners.add(wake);
          signal?.addEventListener('abort', wake, { once: true });
        });
      }
    })();
  }
}
