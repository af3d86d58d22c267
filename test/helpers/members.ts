import { randomUUID } from 'node:crypto';
import { issueAccessToken } from '../../src/core/auth/issue-access-token.js';
import { newGuid } from '../../src/core/ids.js';
import { insertRole } from '../../src/core/repositories/roles.js';
import { insertUser, setUserTeams } from '../../src/core/repositories/users.js';
import type { CreatedWorkspace } from '../../src/core/workspaces.js';
import type { TestApp } from './harness.js';

export interface Member {
  userGuid: string;
  roleGuid: string;
  email: string;
  token: string;
}

/** A second user of a workspace on a fresh role granting exactly `capabilities`, with a token. */
export async function newMember(
  t: TestApp,
  ws: Pick<CreatedWorkspace, 'organizationGuid'>,
  capabilities: string[] = [],
  teamGuids: string[] = [],
): Promise<Member> {
  const db = t.runtime.services.db;
  const role = await insertRole(db, {
    guid: newGuid(),
    organization_guid: ws.organizationGuid,
    name: `role-${randomUUID().slice(0, 6)}`,
    granted_capabilities: capabilities,
  });
  const userGuid = newGuid();
  const email = `member-${randomUUID().slice(0, 8)}@example.test`;
  await insertUser(db, {
    guid: userGuid,
    organization_guid: ws.organizationGuid,
    email,
    display_name: email,
    role_guid: role.guid,
    referrer_guid: null,
    invite_message: null,
  });
  if (teamGuids.length) await setUserTeams(db, userGuid, teamGuids);
  const issued = await issueAccessToken(db, { organizationGuid: ws.organizationGuid, userGuid, label: 'test', expiresInDays: 0 });
  return { userGuid, roleGuid: role.guid, email, token: issued.token! };
}
