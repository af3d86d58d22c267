import type { Logger } from '../core/logger.js';
import type { ConfigDb } from '../stores/postgres.js';
import type { GatewaySession } from './session-id.js';
import { SingleFlight, TtlCache } from './ttl-cache.js';

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

/**
 * Sessions that are over: past SESSION_MAX_AGE_MS, or ended by their host through
 * any replica. An end is written to Postgres (ended_gateway_sessions) before it is
 * acknowledged, so every replica refuses the id: this one at once, the others as
 * soon as their "still open" verdict for it expires (the gateway's cache TTL, as
 * for the other hot-path caches; 0 makes every request ask the store).
 */
export class EndedSessions {
  /** session key -> when its record may go (the session's own expiry). */
  private readonly ended = new Map<string, number>();
  private readonly open: TtlCache<true>;
  private readonly loads = new SingleFlight<boolean>();
  private lastPrune = 0;

  constructor(
    private readonly db: ConfigDb,
    private readonly logger: Logger,
    cacheTtlMs: number,
  ) {
    this.open = new TtlCache(cacheTtlMs);
  }

  /** Whether a session opened from a valid id may no longer be used. */
  async isOver(session: GatewaySession): Promise<boolean> {
    const expiresAt = expiryOf(session);
    if (expiresAt <= Date.now()) return true;
    const key = keyOf(session);
    if (this.ended.has(key)) return true;
    if (this.open.get(key)) return false;
    let over: boolean;
    try {
      over = await this.loads.run(key, async () => {
        const row = await this.db
          .selectFrom('ended_gateway_sessions')
          .select('session_id')
          .where('connection_guid', '=', session.connectionGuid)
          .where('session_id', '=', session.id)
          .executeTakeFirst();
        return row !== undefined;
      });
    } catch (err) {
      // While the store is away a session this process saw open stays open (no end can be stored meanwhile).
      this.open.staleOr(key, err);
      return false;
    }
    if (over) this.remember(key, expiresAt);
    else this.open.set(key, session.connectionGuid, true);
    return over;
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
    this.open.delete(key);
    this.remember(key, expiresAt);
    this.pruneNowAndThen();
  }

  private remember(key: string, expiresAt: number): void {
    if (this.ended.size >= REMEMBERED_ENDED) this.ended.delete(this.ended.keys().next().value!);
    this.ended.set(key, expiresAt);
  }

  /** Records of sessions past their maximum age serve no purpose: dropped here and in the store, at most once a minute. */
  private pruneNowAndThen(): void {
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    for (const [key, expiresAt] of this.ended) if (expiresAt <= now) this.ended.delete(key);
    this.db
      .deleteFrom('ended_gateway_sessions')
      .where('expires_at', '<', new Date(now))
      .execute()
      .catch((err: unknown) => this.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not prune ended gateway sessions'));
  }
}

const keyOf = (session: GatewaySession): string => `${session.connectionGuid}|${session.id}`;
const expiryOf = (session: GatewaySession): number => (Number.isFinite(session.createdAt) ? session.createdAt : 0) + SESSION_MAX_AGE_MS;
