import type { Selectable } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { ConnectionsTable } from '../../stores/schema.js';

export type Connection = Selectable<ConnectionsTable>;

/** A connection with the names its detail view resolves. */
export interface ConnectionDetailRecord extends Connection {
  gateway_name: string;
  host_name: string | null;
  creator_email: string | null;
}

export interface ConnectionFilters {
  hostGuid?: string | undefined;
  gatewayGuid?: string | undefined;
  /** The establishing user. */
  userGuid?: string | undefined;
}

/** Connections of the workspace, oldest first; the given filters all apply together. */
export async function listConnections(db: ConfigDb, organizationGuid: string, filters: ConnectionFilters): Promise<Connection[]> {
  let q = db.selectFrom('connections').selectAll().where('organization_guid', '=', organizationGuid);
  if (filters.hostGuid) q = q.where('host_guid', '=', filters.hostGuid);
  if (filters.gatewayGuid) q = q.where('gateway_guid', '=', filters.gatewayGuid);
  if (filters.userGuid) q = q.where('creator_guid', '=', filters.userGuid);
  return q.orderBy('created_at').orderBy('guid').execute();
}

export async function findConnection(db: ConfigDb, organizationGuid: string, guid: string): Promise<Connection | undefined> {
  return db.selectFrom('connections').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid).executeTakeFirst();
}

export async function findConnectionDetail(db: ConfigDb, organizationGuid: string, guid: string): Promise<ConnectionDetailRecord | undefined> {
  return db
    .selectFrom('connections as c')
    .innerJoin('gateways as g', 'g.guid', 'c.gateway_guid')
    .leftJoin('hosts as h', 'h.guid', 'c.host_guid')
    .leftJoin('users as u', 'u.guid', 'c.creator_guid')
    .selectAll('c')
    .select(['g.name as gateway_name', 'h.name as host_name', 'u.email as creator_email'])
    .where('c.organization_guid', '=', organizationGuid)
    .where('c.guid', '=', guid)
    .executeTakeFirst();
}

export async function insertConnection(
  db: ConfigDb,
  connection: Pick<Connection, 'guid' | 'organization_guid' | 'name' | 'gateway_guid' | 'host_guid' | 'creator_guid' | 'server_identities'>,
): Promise<Connection> {
  return db
    .insertInto('connections')
    .values({ ...connection, server_identities: JSON.stringify(connection.server_identities) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function setConnectionEnabled(db: ConfigDb, guid: string, enabled: boolean): Promise<Connection> {
  return db.updateTable('connections').set({ enabled }).where('guid', '=', guid).returningAll().executeTakeFirstOrThrow();
}
