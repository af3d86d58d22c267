import { AppError } from '../errors.js';
import type { Principal } from '../operation.js';
import type { Services } from '../services.js';
import { expiryOf, tokenHashOf, tokenQuery, tokenUsable } from './token-resolver.js';
import type { TokenKind } from './tokens.js';

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
  const tokenHash = tokenHashOf(token, kind);
  if (!tokenHash) throw new AppError('unauthenticated', UNAUTHENTICATED);
  const cache = kind === 'access' ? services.principalCache : undefined;
  const cached = cache?.get(tokenHash);
  if (cached) {
    services.tokenUsage.note(cached.tokenId);
    return cached;
  }
  const row = await tokenQuery(services.db, tokenHash, kind)
    .innerJoin('organizations as o', 'o.guid', 't.organization_guid')
    .innerJoin('roles as r', 'r.guid', 'u.role_guid')
    .select([
      'u.email',
      'u.display_name',
      'o.name as organization_name',
      'o.type as organization_type',
      'r.guid as role_guid',
      'r.name as role_name',
      'r.granted_capabilities',
    ])
    .executeTakeFirst();
  if (!row || !tokenUsable(row)) throw new AppError('unauthenticated', UNAUTHENTICATED);
  services.tokenUsage.note(row.token_id);
  const principal: Principal = {
    tokenId: row.token_id,
    tokenPrefix: row.token_prefix,
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
  cache?.set(tokenHash, principal, expiryOf(row));
  return principal;
}
