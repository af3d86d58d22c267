import type { Selectable, Updateable } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { GatewaysTable } from '../../stores/schema.js';

export type Gateway = Selectable<GatewaysTable>;

/** Gateways of the workspace, oldest first; archived ones only when asked for (contract section 6). */
export async function listGateways(db: ConfigDb, organizationGuid: string, includeArchived: boolean): Promise<Gateway[]> {
  let q = db.selectFrom('gateways').selectAll().where('organization_guid', '=', organizationGuid);
  if (!includeArchived) q = q.where('archived', '=', false);
  return q.orderBy('created_at').orderBy('guid').execute();
}

/** A gateway of the workspace, archived or not. */
export async function findGateway(db: ConfigDb, organizationGuid: string, guid: string): Promise<Gateway | undefined> {
  return db.selectFrom('gateways').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid).executeTakeFirst();
}

export async function insertGateway(db: ConfigDb, gateway: { guid: string; organization_guid: string; name: string; owner_guid: string }): Promise<Gateway> {
  return db.insertInto('gateways').values(gateway).returningAll().executeTakeFirstOrThrow();
}

export async function updateGateway(db: ConfigDb, guid: string, change: Updateable<GatewaysTable>): Promise<Gateway> {
  return db.updateTable('gateways').set(change).where('guid', '=', guid).returningAll().executeTakeFirstOrThrow();
}

/** Provisions a team to a gateway; a link that already exists is left as it is. */
export async function provisionTeam(db: ConfigDb, gatewayGuid: string, teamGuid: string): Promise<void> {
  await db
    .insertInto('gateway_teams')
    .values({ gateway_guid: gatewayGuid, team_guid: teamGuid, created_at: new Date() })
    .onConflict((oc) => oc.columns(['gateway_guid', 'team_guid']).doNothing())
    .execute();
}

/** Removes a team's provisioning link; false when there was none. */
export async function unprovisionTeam(db: ConfigDb, gatewayGuid: string, teamGuid: string): Promise<boolean> {
  const result = await db.deleteFrom('gateway_teams').where('gateway_guid', '=', gatewayGuid).where('team_guid', '=', teamGuid).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The guids of the teams provisioned to a gateway. */
export async function provisionedTeamGuids(db: ConfigDb, gatewayGuid: string): Promise<string[]> {
  const rows = await db.selectFrom('gateway_teams').select('team_guid').where('gateway_guid', '=', gatewayGuid).orderBy('team_guid').execute();
  return rows.map((r) => r.team_guid);
}
