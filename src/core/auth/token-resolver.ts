import { sql } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { ConfigChanges } from '../config-changes.js';
import { holdsAdminEntitlement } from '../repositories/organizations.js';
import { hashToken, tokenKindOf, type TokenKind } from './tokens.js';
import { isStoreUnreachable, STALE_WHILE_STORE_AWAY_MS } from '../../stores/store-errors.js';

/**
 * The one token resolver (admin access tokens and gateway tokens alike): the token's
 * hash and kind, its row with the user and the workspace's entitlement, the rules
 * every token obeys (not revoked, not expired, user active), and the one cache of
 * resolved rows. Each caller joins what it needs beyond that (the role for the admin
 * interface; gateway, connection and host for a gateway) and adds only its own checks.
 */
export interface ResolvedTokenColumns {
  token_id: string;
  token_prefix: string;
  organization_guid: string;
  user_guid: string;
  user_active: boolean;
  expires_at: Date | string | null;
  revoked: boolean;
  entitled: boolean;
}

/** The hash under which a bearer token of `kind` is stored, or null when the text is not such a token. */
export function tokenHashOf(token: string | null, kind: TokenKind): string | null {
  return token && tokenKindOf(token) === kind ? hashToken(token) : null;
}

/** The base query of a token's row: token, user, entitlement; callers join and select more. */
export function tokenQuery(db: ConfigDb, tokenHash: string, kind: TokenKind) {
  return db
    .selectFrom('access_tokens as t')
    .innerJoin('users as u', 'u.guid', 't.user_guid')
    .select([
      't.id as token_id',
      't.prefix as token_prefix',
      't.organization_guid',
      'u.guid as user_guid',
      'u.is_active as user_active',
      't.expires_at',
      sql<boolean>`t.revoked_at is not null`.as('revoked'),
      holdsAdminEntitlement('t.organization_guid').as('entitled'),
    ])
    .where('t.token_hash', '=', tokenHash)
    .where('t.kind', '=', kind);
}

export type TokenQuery = ReturnType<typeof tokenQuery>;

/** The expiry as a Date (drivers return a Date or ISO text). */
export const expiryOf = (row: Pick<ResolvedTokenColumns, 'expires_at'>): Date | null => (row.expires_at ? new Date(row.expires_at) : null);

/** The rules every token obeys, checked on every use: a revoked or expired token, or a deactivated user's, authenticates nothing. */
export function tokenUsable(row: Pick<ResolvedTokenColumns, 'revoked' | 'user_active' | 'expires_at'>, now = Date.now()): boolean {
  const expires = expiryOf(row);
  return !row.revoked && Boolean(row.user_active) && (expires === null || expires.getTime() > now);
}

/** A resolved row as cached: booleans are booleans and the expiry a Date, whatever the driver returned. */
export type ResolvedToken<Row extends ResolvedTokenColumns = ResolvedTokenColumns> = Row & { expires_at: Date | null };

interface Entry {
  /** The row, or null for a hash no token has (cached too, so guessing costs no query per try). */
  row: ResolvedToken | null;
  /** The workspace whose change notices drop this entry ('' for an unknown hash: it only expires). */
  organizationGuid: string;
  expiresAt: number;
}

/** How long a resolved row of each kind may be reused; 0 reads the database on every use. */
export type TokenCacheTtls = Record<TokenKind, number>;

/**
 * Resolves bearer tokens to their rows, keeping them by token hash for a short TTL
 * per kind. Every use re-applies `tokenUsable` to the kept row (an expiry is a clock
 * comparison, so a token fails at its expiry without any notice), and a change
 * notice for a workspace (ConfigChanges: the executor posts one after every change,
 * and with a Postgres server the relay carries other processes' notices here) drops
 * that workspace's entries at once, so a revocation, a deactivation or a role or
 * entitlement change takes effect on the next request; the TTL only bounds how long
 * a notice lost on the way could leave an entry stale.
 */
export class TokenResolver {
  private readonly entries = new Map<string, Entry>();
  private readonly loads = new Map<string, Promise<ResolvedToken | null>>();
  /** Counts change notices: a load that a notice overtook is used once but not kept. */
  private generation = 0;
  /** Stops listening for change notices. */
  readonly close: () => void;

  constructor(
    private readonly db: ConfigDb,
    changes: ConfigChanges,
    private readonly ttlMs: TokenCacheTtls,
    private readonly maxEntries = 50_000,
  ) {
    this.close = changes.subscribe((organizationGuid) => {
      this.generation++;
      for (const [hash, entry] of this.entries) if (entry.organizationGuid === organizationGuid) this.entries.delete(hash);
    });
  }

  /**
   * The usable row of `token` (a bearer token of `kind`), or null when it is malformed,
   * unknown, revoked, expired or its user deactivated: one answer for every reason.
   * `select` extends the base query with the caller's joins and columns; one caller
   * per kind, so a kept row always has that caller's shape.
   */
  async resolve<Row extends ResolvedTokenColumns>(
    token: string | null,
    kind: TokenKind,
    select: (base: TokenQuery) => Promise<Row | undefined>,
  ): Promise<ResolvedToken<Row> | null> {
    const hash = tokenHashOf(token, kind);
    if (!hash) return null;
    let row = this.cached(hash);
    if (row === undefined) {
      try {
        row = await this.load(hash, kind, select);
      } catch (err) {
        // While the store is away a row kept lately still answers (tokenUsable re-checks its expiry); else the error.
        const stale = this.entries.get(hash);
        if (!isStoreUnreachable(err) || !stale || stale.expiresAt + STALE_WHILE_STORE_AWAY_MS <= Date.now()) throw err;
        row = stale.row;
      }
    }
    return row && tokenUsable(row) ? (row as ResolvedToken<Row>) : null;
  }

  /** The kept row of a token hash (usable or not), or undefined when none is fresh at `now`. */
  cached(tokenHash: string, now = Date.now()): ResolvedToken | null | undefined {
    const entry = this.entries.get(tokenHash);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.row;
    if (entry.expiresAt + STALE_WHILE_STORE_AWAY_MS <= now) this.entries.delete(tokenHash);
    return undefined;
  }

  /** Reads a row once for concurrent callers of the same hash, and keeps it unless a change notice came meanwhile. */
  private load<Row extends ResolvedTokenColumns>(
    hash: string,
    kind: TokenKind,
    select: (base: TokenQuery) => Promise<Row | undefined>,
  ): Promise<ResolvedToken | null> {
    const running = this.loads.get(hash);
    if (running) return running;
    const generation = this.generation;
    const loading = select(tokenQuery(this.db, hash, kind))
      .then((found): ResolvedToken | null =>
        found
          ? {
              ...found,
              revoked: Boolean(found.revoked),
              entitled: Boolean(found.entitled),
              user_active: Boolean(found.user_active),
              expires_at: expiryOf(found),
            }
          : null,
      )
      .then((row) => {
        if (generation === this.generation) this.keep(hash, kind, row);
        return row;
      })
      .finally(() => this.loads.delete(hash));
    this.loads.set(hash, loading);
    return loading;
  }

  private keep(hash: string, kind: TokenKind, row: ResolvedToken | null): void {
    const ttl = this.ttlMs[kind];
    if (ttl <= 0) return;
    // Bounded: past the limit the oldest entry goes (a Map keeps insertion order).
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    // An entry never outlives its token: past the expiry the next use reads the row again.
    const tokenExpiry = row?.expires_at?.getTime() ?? Infinity;
    this.entries.set(hash, { row, organizationGuid: row?.organization_guid ?? '', expiresAt: Math.min(Date.now() + ttl, tokenExpiry) });
  }
}
