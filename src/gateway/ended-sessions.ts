import type { Logger } from '../core/logger.js';
import type { ConfigDb } from '../stores/postgres.js';
import type { GatewaySession } from './session-id.js';
import { isStoreUnreachable, STALE_WHILE_STORE_AWAY_MS } from '../stores/store-errors.js';
import { SingleFlight } from './ttl-cache.js';

/**
 * How long a gateway session lives at most. A session is its sealed id, valid
 * wherever it is presented, so ending one (DELETE) needs a record; a bound on its
 * life bounds how long that record is kept. A host told 404 initializes again, as
 * the transport requires.
 */
export const SESSION_MAX_AGE_MS = 7 * 24 * 60 * 60_000;
/** Ended sessions this process remembers without asking the store (the oldest is forgotten first, and asked for again). */
const REMEMBERED_ENDED = 10_000;
const PRUNE_EVERY_MS = 60_000;

/** Ends are read from this long before the last read began: the replicas' clocks and the store's may differ by this much. */
const CLOCK_SKEW_MS = 60_000;
/** Sessions this process found open in the store and follows (the oldest is forgotten first, and asked for again). */
const FOLLOWED_OPEN = 50_000;

/**
 * Sessions that are over: past SESSION_MAX_AGE_MS, or ended by their host through
 * any replica. An end is written to Postgres (ended_gateway_sessions, with the store's
 * time) before it is acknowledged, so every replica refuses the id: this one at once,
 * another one at once if it has not seen the id (it asks the store), otherwise within
 * the gateway's cache TTL (0 makes every request ask the store): a session found open
 * is followed, and every TTL one query reads the ends since the last one (less a
 * margin for clocks), for all the sessions this process follows. One read per session
 * and TTL cost a store round trip each (with PGlite, CPU on the event loop) for every
 * host session in use.
 */
export class EndedSessions {
  /** session key -> when its record may go (the session's own expiry). */
  private readonly ended = new Map<string, number>();
  /** session key -> its expiry, for the sessions found open in the store: the sweeps follow them. */
  private readonly followed = new Map<string, number>();
  private readonly loads = new SingleFlight<boolean>();
  private readonly sweeps = new SingleFlight<boolean>();
  /** When (this process's clock) the last successful read of the store's ends began: the next one reads from there, less CLOCK_SKEW_MS. */
  private sweptAt = -Infinity;
  private lastPrune = 0;

  constructor(
    private readonly db: ConfigDb,
    private readonly logger: Logger,
    private readonly cacheTtlMs: number,
  ) {}

  /** Whether a session opened from a valid id may no longer be used. */
  async isOver(session: GatewaySession): Promise<boolean> {
    const expiresAt = expiryOf(session);
    if (expiresAt <= Date.now()) return true;
    const key = keyOf(session);
    if (this.ended.has(key)) return true;
    if (this.followed.has(key)) {
      if (Date.now() - this.sweptAt >= this.cacheTtlMs) await this.sweep();
      return this.ended.has(key);
    }
    // Not seen yet: the store says whether it was ended. The sweeps that follow it read from before this read began.
    if (this.sweptAt === -Infinity) await this.sweep();
    const over = await this.loads.run(key, async () => {
      const row = await this.db
        .selectFrom('ended_gateway_sessions')
        .select('session_id')
        .where('connection_guid', '=', session.connectionGuid)
        .where('session_id', '=', session.id)
        .executeTakeFirst();
      return row !== undefined;
    });
    if (over) this.remember(key, expiresAt);
    else this.follow(key, expiresAt);
    return over;
  }

  /**
   * Reads the ends stored since the last read began (less CLOCK_SKEW_MS), once for concurrent callers. While the
   * store is away the sessions followed stay open, as before for STALE_WHILE_STORE_AWAY_MS (no end can be stored
   * meanwhile), then the error is the caller's.
   */
  private async sweep(): Promise<void> {
    try {
      await this.sweeps.run('', async () => {
        const began = Date.now();
        const rows = await this.db
          .selectFrom('ended_gateway_sessions')
          .select(['connection_guid', 'session_id', 'expires_at'])
          .where('ended_at', '>=', new Date((this.sweptAt === -Infinity ? began : this.sweptAt) - CLOCK_SKEW_MS))
          .execute();
        for (const row of rows) {
          const key = `${row.connection_guid}|${row.session_id}`;
          this.followed.delete(key);
          this.remember(key, new Date(row.expires_at).getTime());
        }
        this.sweptAt = began;
        return true;
      });
    } catch (err) {
      if (!isStoreUnreachable(err) || Date.now() - this.sweptAt >= this.cacheTtlMs + STALE_WHILE_STORE_AWAY_MS) throw err;
    }
  }

  private follow(key: string, expiresAt: number): void {
    if (this.followed.size >= FOLLOWED_OPEN) this.followed.delete(this.followed.keys().next().value!);
    this.followed.set(key, expiresAt);
  }

  /** Ends a session for every replica; resolves once the end is stored. */
  async end(session: GatewaySession): Promise<void> {
    const expiresAt = expiryOf(session);
    await this.db
      .insertInto('ended_gateway_sessions')
      .values({ connection_guid: session.connectionGuid, session_id: session.id, expires_at: new Date(expiresAt) })
      .onConflict((oc) => oc.columns(['connection_guid', 'session_id']).doNothing())
      .execute();
    const key = keyOf(session);
    this.followed.delete(key);
    this.remember(key, expiresAt);
    this.pruneNowAndThen();
  }

  private remember(key: string, expiresAt: number): void {
    // A sweep reads again the ends of its margin: those it has are kept as they are, and make no room.
    if (this.ended.has(key)) return;
    if (this.ended.size >= REMEMBERED_ENDED) this.ended.delete(this.ended.keys().next().value!);
    this.ended.set(key, expiresAt);
  }

  /** Records of sessions past their maximum age serve no purpose: dropped here and in the store, at most once a minute. */
  private pruneNowAndThen(): void {
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    for (const [key, expiresAt] of this.ended) if (expiresAt <= now) this.ended.delete(key);
    for (const [key, expiresAt] of this.followed) if (expiresAt <= now) this.followed.delete(key);
    this.db
      .deleteFrom('ended_gateway_sessions')
      .where('expires_at', '<', new Date(now))
      .execute()
      .catch((err: unknown) => this.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not prune ended gateway sessions'));
  }
}

const keyOf = (session: GatewaySession): string => `${session.connectionGuid}|${session.id}`;
const expiryOf = (session: GatewaySession): number => (Number.isFinite(session.createdAt) ? session.createdAt : 0) + SESSION_MAX_AGE_MS;
