import { sql } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { NewUser } from '../../stores/schema.js';

/** A user as the interface reports it: with the role's name and the team guids joined in. */
export interface UserRecord {
  guid: string;
  email: string;
  display_name: string;
  is_active: boolean;
  role_guid: string;
  role_name: string;
  team_guids: string[];
}

function userQuery(db: ConfigDb, organizationGuid: string) {
  return db
    .selectFrom('users as u')
    .innerJoin('roles as r', 'r.guid', 'u.role_guid')
    .select([
      'u.guid',
      'u.email',
      'u.display_name',
      'u.is_active',
      'u.role_guid',
      'r.name as role_name',
      sql<string[]>`coalesce((select array_agg(m.team_guid::text order by m.team_guid) from team_members m where m.user_guid = u.guid), '{}')`.as('team_guids'),
    ])
    .where('u.organization_guid', '=', organizationGuid);
}

/**
 * Users of a workspace; with `visibleTo`, only that user and the members of that
 * user's teams (contract section 6).
 */
export async function listUsers(db: ConfigDb, organizationGuid: string, visibleTo?: string): Promise<UserRecord[]> {
  let q = userQuery(db, organizationGuid);
  if (visibleTo) {
    q = q.where((eb) =>
      eb.or([
        eb('u.guid', '=', visibleTo),
        eb.exists(
          eb
            .selectFrom('team_members as theirs')
            .innerJoin('team_members as mine', 'mine.team_guid', 'theirs.team_guid')
            .select('theirs.user_guid')
            .whereRef('theirs.user_guid', '=', 'u.guid')
            .where('mine.user_guid', '=', visibleTo),
        ),
      ]),
    );
  }
  return q.orderBy('u.created_at').orderBy('u.guid').execute();
}

export async function findUser(db: ConfigDb, organizationGuid: string, guid: string): Promise<UserRecord | undefined> {
  return userQuery(db, organizationGuid).where('u.guid', '=', guid).executeTakeFirst();
}

export async function findUserByEmail(db: ConfigDb, organizationGuid: string, email: string): Promise<{ guid: string } | undefined> {
  return db.selectFrom('users').select('guid').where('organization_guid', '=', organizationGuid).where('email', '=', email).executeTakeFirst();
}

export async function insertUser(db: ConfigDb, user: NewUser): Promise<void> {
  await db.insertInto('users').values(user).execute();
}

export async function setUserRole(db: ConfigDb, guid: string, roleGuid: string): Promise<void> {
  await db.updateTable('users').set({ role_guid: roleGuid }).where('guid', '=', guid).execute();
}

/** Makes the user's teams exactly `teamGuids`: adds the missing memberships, removes the rest. */
export async function setUserTeams(db: ConfigDb, userGuid: string, teamGuids: string[]): Promise<void> {
  let del = db.deleteFrom('team_members').where('user_guid', '=', userGuid);
  if (teamGuids.length > 0) del = del.where('team_guid', 'not in', teamGuids);
  await del.execute();
  if (teamGuids.length > 0) {
    await db
      .insertInto('team_members')
      .values(teamGuids.map((team_guid) => ({ team_guid, user_guid: userGuid })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

export async function teamGuidsOf(db: ConfigDb, userGuid: string): Promise<string[]> {
  const rows = await db.selectFrom('team_members').select('team_guid').where('user_guid', '=', userGuid).execute();
  return rows.map((r) => r.team_guid);
}

/** Deactivation removes workspace membership (teams) and ends every token of the user. */
export async function deactivateUser(db: ConfigDb, guid: string): Promise<void> {
  await db.updateTable('users').set({ is_active: false }).where('guid', '=', guid).execute();
  await db.deleteFrom('team_members').where('user_guid', '=', guid).execute();
  await db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('user_guid', '=', guid).where('revoked_at', 'is', null).execute();
}

export async function reassignRole(db: ConfigDb, fromRoleGuid: string, toRoleGuid: string): Promise<number> {
  const result = await db.updateTable('users').set({ role_guid: toRoleGuid }).where('role_guid', '=', fromRoleGuid).executeTakeFirst();
  return Number(result.numUpdatedRows);
}
