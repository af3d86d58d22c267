import type { ConfigDb } from '../../stores/postgres.js';
import type { Team } from '../../stores/schema.js';

export async function listTeams(db: ConfigDb, organizationGuid: string, onlyMemberGuid?: string): Promise<Team[]> {
  let q = db.selectFrom('teams').selectAll('teams').where('teams.organization_guid', '=', organizationGuid);
  if (onlyMemberGuid) {
    q = q.where((eb) =>
      eb.exists(eb.selectFrom('team_members as m').select('m.team_guid').whereRef('m.team_guid', '=', 'teams.guid').where('m.user_guid', '=', onlyMemberGuid)),
    );
  }
  return q.orderBy('teams.created_at').orderBy('teams.guid').execute();
}

export async function findTeam(db: ConfigDb, organizationGuid: string, guid: string): Promise<Team | undefined> {
  return db.selectFrom('teams').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid).executeTakeFirst();
}

export async function insertTeam(db: ConfigDb, team: { guid: string; organization_guid: string; name: string; owner_guid: string }): Promise<Team> {
  return db.insertInto('teams').values(team).returningAll().executeTakeFirstOrThrow();
}

export async function renameTeam(db: ConfigDb, guid: string, name: string): Promise<Team> {
  return db.updateTable('teams').set({ name }).where('guid', '=', guid).returningAll().executeTakeFirstOrThrow();
}

/** Hard delete; memberships and gateway provisioning edges go with it (ON DELETE CASCADE). */
export async function deleteTeam(db: ConfigDb, guid: string): Promise<void> {
  await db.deleteFrom('teams').where('guid', '=', guid).execute();
}

/** Of the given team guids, those that exist in the workspace. */
export async function existingTeamGuids(db: ConfigDb, organizationGuid: string, guids: string[]): Promise<Set<string>> {
  if (guids.length === 0) return new Set();
  const rows = await db.selectFrom('teams').select('guid').where('organization_guid', '=', organizationGuid).where('guid', 'in', guids).execute();
  return new Set(rows.map((r) => r.guid));
}
