import { capabilityKeysFor, type OrganizationType } from './capabilities.js';
import { ADMIN_ENTITLEMENT } from './executor.js';
import { newGuid } from './ids.js';
import { issueAccessToken } from './auth/issue-access-token.js';
import { grantEntitlement, insertOrganization } from './repositories/organizations.js';
import { insertRole } from './repositories/roles.js';
import { insertUser } from './repositories/users.js';
import type { ConfigDb } from '../stores/postgres.js';

export interface CreatedWorkspace {
  organizationGuid: string;
  userGuid: string;
  roleGuid: string;
  token: string;
}

/**
 * Creates a workspace with the admin entitlement, an Administrator role granting
 * every capability, one admin user on it and an access token for that user.
 * This is the only way workspaces come to exist (the interface has none).
 */
export async function createWorkspace(
  db: ConfigDb,
  opts: { name: string; adminEmail: string; partner?: boolean; tokenLabel?: string },
): Promise<CreatedWorkspace> {
  const run = async (trx: ConfigDb): Promise<CreatedWorkspace> => {
    const type: OrganizationType = opts.partner ? 'partner' : 'standard';
    const organizationGuid = newGuid();
    await insertOrganization(trx, { guid: organizationGuid, name: opts.name, type });
    await grantEntitlement(trx, organizationGuid, ADMIN_ENTITLEMENT);
    const role = await insertRole(trx, {
      guid: newGuid(),
      organization_guid: organizationGuid,
      name: 'Administrator',
      granted_capabilities: capabilityKeysFor(type),
    });
    const userGuid = newGuid();
    const email = opts.adminEmail.trim().toLowerCase();
    await insertUser(trx, {
      guid: userGuid,
      organization_guid: organizationGuid,
      email,
      display_name: email.split('@')[0] || email,
      role_guid: role.guid,
      referrer_guid: null,
      invite_message: null,
    });
    const issued = await issueAccessToken(trx, {
      organizationGuid,
      userGuid,
      label: opts.tokenLabel ?? 'initial-admin',
      expiresInDays: 0,
    });
    return { organizationGuid, userGuid, roleGuid: role.guid, token: issued.token! };
  };
  return db.isTransaction ? run(db) : db.transaction().execute(run);
}
