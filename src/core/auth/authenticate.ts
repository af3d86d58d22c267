import { sql } from 'kysely';
import { AppError } from '../errors.js';
import type { Principal } from '../operation.js';
import { holdsAdminEntitlement } from '../repositories/organizations.js';
import type { Services } from '../services.js';
import { hashToken, tokenKindOf, type TokenKind } from './tokens.js';

const UNAUTHENTICATED = 'A valid access token is required: send it as `Authorization: Bearer <token>`.';

/**
 * Resolves a bearer token of the given kind to its caller. One indexed read per
 * request, so a revocation, an expiry or a deactivation takes effect on the very
 * next request in every process; lastUsedAt is noted in memory, not written here.
 * Every failure gives the same answer, whatever the reason.
 */
export async function authenticate(
  services: Pick<Services, 'db' | 'tokenUsage' | 'principalCache'>,
  token: string | null,
  kind: TokenKind,
): Promise<Principal> {
  if (!token || tokenKindOf(token) !== kind) throw new AppError('unauthenticated', UNAUTHENTICATED);
  const tokenHash = hashToken(token);
  const cache = kind === 'access' ? services.principalCache : undefined;
  const cached = cache?.get(tokenHash);
  if (cached) {
    services.tokenUsage.note(cached.tokenId);
    return cached;
  }
  const row = await services.db
    .selectFrom('access_tokens as t')
    .innerJoin('users as u', 'u.guid', 't.user_guid')
    .innerJoin('organizations as o', 'o.guid', 't.organization_guid')
    .innerJoin('roles as r', 'r.guid', 'u.role_guid')
    .select([
      't.id as token_id',
      't.expires_at',
      'u.guid as user_guid',
      'u.email',
      'u.display_name',
      'o.guid as organization_guid',
      'o.name as organization_name',
      'o.type as organization_type',
      'r.guid as role_guid',
      'r.name as role_name',
      'r.granted_capabilities',
      holdsAdminEntitlement('o.guid').as('entitled'),
    ])
    .where('t.token_hash', '=', tokenHash)
    .where('t.kind', '=', kind)
    .where('t.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('t.expires_at', 'is', null), eb('t.expires_at', '>', sql<Date>`now()`)]))
    .where('u.is_active', '=', true)
    .executeTakeFirst();
  if (!row) throw new AppError('unauthenticated', UNAUTHENTICATED);
  services.tokenUsage.note(row.token_id);
  const principal: Principal = {
    tokenId: row.token_id,
    userGuid: row.user_guid,
    emailAddress: row.email,
    displayName: row.display_name,
    organizationGuid: row.organization_guid,
    organizationName: row.organization_name,
    organizationType: row.organization_type,
    roleGuid: row.role_guid,
    roleName: row.role_name,
    capabilities: new Set(row.granted_capabilities),
    entitled: Boolean(row.entitled),
  };
  cache?.set(tokenHash, principal, row.expires_at);
  return principal;
}
