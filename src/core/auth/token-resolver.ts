import { sql } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import { holdsAdminEntitlement } from '../repositories/organizations.js';
import { hashToken, tokenKindOf, type TokenKind } from './tokens.js';

/**
 * The one token resolver (admin access tokens and gateway tokens alike): the token's
 * hash and kind, its row with the user and the workspace's entitlement, and the
 * rules every token obeys (not revoked, not expired, user active). Each caller joins
 * what it needs beyond that (the role for the admin interface; gateway, connection
 * and host for a gateway) and adds only its own checks.
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

/** The expiry as a Date (drivers return a Date or ISO text). */
export const expiryOf = (row: Pick<ResolvedTokenColumns, 'expires_at'>): Date | null => (row.expires_at ? new Date(row.expires_at) : null);

/** The rules every token obeys, checked on every use: a revoked or expired token, or a deactivated user's, authenticates nothing. */
export function tokenUsable(row: Pick<ResolvedTokenColumns, 'revoked' | 'user_active' | 'expires_at'>, now = Date.now()): boolean {
  const expires = expiryOf(row);
  return !row.revoked && Boolean(row.user_active) && (expires === null || expires.getTime() > now);
}
