import { createHash } from 'node:crypto';
import { BoundedMemo } from '../core/bounded-memo.js';

/** An upstream session as the proxy keeps it. */
export interface PooledSession {
  sessionId?: string;
  protocolVersion?: string;
}

interface Entry {
  session: Promise<PooledSession>;
  lastUsed: number;
  /** Requests using the session now: an idle sweep never ends a session a call is still on. */
  inUse: number;
  close: (session: PooledSession) => void;
}

/** A session nobody used for this long is ended upstream (DELETE) and forgotten. */
export const POOLED_SESSION_IDLE_MS = 60_000;
const MAX_SESSIONS = 10_000;
/**
 * The digests of the host identities seen, by their JSON (keyOf): a host sends the same identity with every request,
 * and hashing it costs about 20 µs a call, more than the rest of the pool's work.
 */
const identityDigests = new BoundedMemo<string>();

/**
 * 2025 upstream sessions shared by the session-less requests of one caller: a
 * 2026-07-28 host has no session, and opening (initialize, initialized) and ending
 * (DELETE) an upstream session for each of its calls cost three exchanges more than
 * the call. Requests of one connection, to one assignment, from a host of one
 * identity (revision, capabilities, client info: what the upstream's initialize was
 * told) share a session; MCP sessions carry concurrent requests by id. A session the
 * upstream forgot (upstream-http.ts, forgotSession) is dropped and opened again by the caller.
 */
export class UpstreamSessionPool {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly idleMs = POOLED_SESSION_IDLE_MS) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.min(idleMs, 30_000)));
    this.sweeper.unref();
  }

  /** The key of a pooled session: who calls, which assignment, and the host identity the upstream was told. */
  static keyOf(connectionGuid: string, assignmentGuid: string, host: unknown): string {
    const identity = JSON.stringify(host);
    const digest = identityDigests.get(identity, () => createHash('sha256').update(identity).digest('base64url'));
    return `${connectionGuid}|${assignmentGuid}|${digest}`;
  }

  /**
   * The session of `key`, opened with `open` if there is none (once for concurrent
   * callers); `close` ends it later. The caller calls `release` once it is done with it.
   */
  acquire(key: string, open: () => Promise<PooledSession>, close: (session: PooledSession) => void): { session: Promise<PooledSession>; release: () => void } {
    const now = Date.now();
    let entry = this.entries.get(key);
    if (entry) {
      entry.lastUsed = now;
      entry.inUse++;
    } else {
      if (this.entries.size >= MAX_SESSIONS) this.end(this.entries.keys().next().value!);
      const session = open();
      const created: Entry = { session, lastUsed: now, inUse: 1, close };
      this.entries.set(key, created);
      // A failed open is not kept: the next request tries again.
      session.catch(() => {
        if (this.entries.get(key) === created) this.entries.delete(key);
      });
      entry = created;
    }
    const used = entry;
    let released = false;
    return {
      session: used.session,
      // A method, not a named closure (docs/decisions.md, "No named closure made per call on a hot path").
      release() {
        if (released) return;
        released = true;
        used.inUse--;
        used.lastUsed = Date.now();
      },
    };
  }

  /** Forgets the session of `key` (the upstream no longer knows it) without ending it. */
  drop(key: string): void {
    this.entries.delete(key);
  }

  /** Ends every pooled session (the process is closing). */
  close(): void {
    clearInterval(this.sweeper);
    for (const key of [...this.entries.keys()]) this.end(key);
  }

  private sweep(): void {
    const idleSince = Date.now() - this.idleMs;
    for (const [key, entry] of this.entries) if (entry.inUse === 0 && entry.lastUsed < idleSince) this.end(key);
  }

  private end(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.session.then(entry.close, () => undefined);
  }
}
