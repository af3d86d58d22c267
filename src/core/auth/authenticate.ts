import { AppError } from '../errors.js';
import type { Principal } from '../operation.js';
import type { Services } from '../services.js';
import type { TokenQuery } from './token-resolver.js';

const UNAUTHENTICATED = 'A valid access token is required: send it as `Authorization: Bearer <token>`.';

/** The admin interface's part of a token's row: the user, the workspace and the role. */
const adminColumns = (base: TokenQuery) =>
  base
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

/**
 * Resolves an admin access token to its caller through the one token resolver (which
 * keeps callers only where change notices keep them exact: see runtime/open.ts), so a
 * revocation, an expiry or a deactivation takes effect on the very next request;
 * lastUsedAt is noted in memory, not written here. Every failure gives the same
 * answer, whatever the reason. Entitlement and capabilities are the executor's checks.
 */
export async function authenticate(services: Pick<Services, 'tokens' | 'tokenUsage'>, token: string | null): Promise<Principal> {
  const row = await services.tokens.resolve(token, 'access', adminColumns);
  if (!row) throw new AppError('unauthenticated', UNAUTHENTICATED);
  services.tokenUsage.note(row.token_id);
  return {
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
    entitled: row.entitled,
  };
}
