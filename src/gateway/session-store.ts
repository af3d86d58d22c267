import { SESSION_MAX_AGE_MS } from './ended-sessions.js';
import type { GatewaySession } from './session-id.js';

/** How a process names a 2025 host's session in what it keeps for it. */
export type SessionKey = Pick<GatewaySession, 'connectionGuid' | 'id'>;

export const sessionKeyOf = (session: SessionKey): string => `${session.connectionGuid}|${session.id}`;

/**
 * What a process keeps for a 2025 host's session beside its id: the session is sealed
 * into its id at initialize (session-id.ts), so what the host sets later (a log level,
 * resource subscriptions) cannot join it. Per process, bounded (the session set to
 * longest ago is forgotten first, unless `pinned` says it is in use: then nothing new
 * is kept until room is made), for at most a session's life, forgotten when the
 * host ends the session. Behind several replicas a request that reaches another
 * replica than the one that kept the value does not see it (docs/decisions.md, Gateway).
 */
export class PerSessionStore<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();

  constructor(
    private readonly capacity: number,
    /** Sessions whose value must not be forgotten to make room (e.g. an event stream follows it). */
    private readonly pinned: (key: string) => boolean = () => false,
  ) {}

  /** Keeps the session's value; false when the store is full of values it may not forget (the value is not kept). */
  set(session: SessionKey & Pick<GatewaySession, 'createdAt'>, value: T): boolean {
    const key = sessionKeyOf(session);
    if (!this.entries.has(key) && this.entries.size >= this.capacity) {
      const now = Date.now();
      const evictable = [...this.entries].find(([k, entry]) => entry.until <= now || !this.pinned(k));
      if (!evictable) return false;
      this.entries.delete(evictable[0]);
    }
    this.entries.delete(key);
    this.entries.set(key, { value, until: session.createdAt + SESSION_MAX_AGE_MS });
    return true;
  }

  /** The session's value in this process; undefined when none was set here (or the session is over). */
  get(session: SessionKey): T | undefined {
    const key = sessionKeyOf(session);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > Date.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  forget(session: SessionKey): void {
    this.entries.delete(sessionKeyOf(session));
  }
}
