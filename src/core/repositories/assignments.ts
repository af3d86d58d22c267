import type { Selectable, Updateable } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { AuthenticationType, GatewayAssignmentsTable } from '../../stores/schema.js';

export type GatewayAssignment = Selectable<GatewayAssignmentsTable>;

/**
 * An assignment with what its `configured` flag depends on: the server's
 * authentication type (null if the server row is gone) and whether its shared
 * identity still exists and is enabled (null when it has none or it is gone).
 */
export interface AssignmentRecord extends GatewayAssignment {
  server_authentication_type: AuthenticationType | null;
  shared_identity_enabled: boolean | null;
  server_name: string | null;
  /** The server's features as feature-learning last found them (its tools, for curation hints and collisions). */
  server_features: Record<string, unknown> | null;
}

function assignmentQuery(db: ConfigDb, organizationGuid: string) {
  return db
    .selectFrom('gateway_assignments as a')
    .leftJoin('inbound_servers as s', (j) => j.onRef('s.guid', '=', 'a.inbound_server_guid').onRef('s.organization_guid', '=', 'a.organization_guid'))
    .leftJoin('identities as i', (j) => j.onRef('i.guid', '=', 'a.shared_identity_guid').onRef('i.organization_guid', '=', 'a.organization_guid'))
    .selectAll('a')
    .select([
      's.authentication_type as server_authentication_type',
      'i.enabled as shared_identity_enabled',
      's.name as server_name',
      's.features as server_features',
    ])
    .where('a.organization_guid', '=', organizationGuid);
}

/** The assignments of one gateway, oldest first. */
export async function listAssignments(db: ConfigDb, organizationGuid: string, gatewayGuid: string): Promise<AssignmentRecord[]> {
  return assignmentQuery(db, organizationGuid).where('a.gateway_guid', '=', gatewayGuid).orderBy('a.created_at').orderBy('a.guid').execute();
}

export async function findAssignment(db: ConfigDb, organizationGuid: string, guid: string): Promise<AssignmentRecord | undefined> {
  return assignmentQuery(db, organizationGuid).where('a.guid', '=', guid).executeTakeFirst();
}

export async function insertAssignment(
  db: ConfigDb,
  assignment: Pick<GatewayAssignment, 'guid' | 'organization_guid' | 'gateway_guid' | 'inbound_server_guid' | 'identity_scheme' | 'shared_identity_guid'> & {
    tool_filter?: string | null;
    tool_overrides?: string | null;
  },
): Promise<void> {
  await db.insertInto('gateway_assignments').values(assignment).execute();
}

export async function updateAssignment(db: ConfigDb, guid: string, change: Updateable<GatewayAssignmentsTable>): Promise<void> {
  await db.updateTable('gateway_assignments').set(change).where('guid', '=', guid).execute();
}

/** Hard delete: an assignment is a link, nothing else refers to it. */
export async function deleteAssignment(db: ConfigDb, guid: string): Promise<void> {
  await db.deleteFrom('gateway_assignments').where('guid', '=', guid).execute();
}

/**
 * The servers of a gateway for which each connecting user must pick an identity:
 * live (not deleted) servers that require authentication and have at least one
 * userIdentity assignment on the gateway, enabled or not (a disabled assignment can
 * be re-enabled at any time, and the connection must then carry an identity).
 */
export async function userIdentityServers(db: ConfigDb, organizationGuid: string, gatewayGuid: string): Promise<{ guid: string; name: string }[]> {
  const rows = await db
    .selectFrom('gateway_assignments as a')
    .innerJoin('inbound_servers as s', (j) => j.onRef('s.guid', '=', 'a.inbound_server_guid').onRef('s.organization_guid', '=', 'a.organization_guid'))
    .select(['a.inbound_server_guid', 's.name'])
    .distinct()
    .where('a.organization_guid', '=', organizationGuid)
    .where('a.gateway_guid', '=', gatewayGuid)
    .where('a.identity_scheme', '=', 'userIdentity')
    .where('s.deleted_at', 'is', null)
    .where('s.authentication_type', '!=', 'none')
    .orderBy('a.inbound_server_guid')
    .execute();
  return rows.map((r) => ({ guid: r.inbound_server_guid, name: r.name }));
}

/** How many distinct servers a gateway carries now: enabled assignments of live, enabled servers. */
export async function countReachableServers(db: ConfigDb, organizationGuid: string, gatewayGuid: string): Promise<number> {
  const row = await db
    .selectFrom('gateway_assignments as a')
    .innerJoin('inbound_servers as s', (j) => j.onRef('s.guid', '=', 'a.inbound_server_guid').onRef('s.organization_guid', '=', 'a.organization_guid'))
    .select((eb) => eb.fn.count<number>('a.inbound_server_guid').distinct().as('n'))
    .where('a.organization_guid', '=', organizationGuid)
    .where('a.gateway_guid', '=', gatewayGuid)
    .where('a.enabled', '=', true)
    .where('s.enabled', '=', true)
    .where('s.deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
