import type { ConfigDb } from '../../stores/postgres.js';
import type { InboundServersTable } from '../../stores/schema.js';
import type { Insertable, Selectable, Updateable } from 'kysely';

export type InboundServer = Selectable<InboundServersTable>;

/** A live (not deleted) inbound server of the workspace; a deleted one too with `includeDeleted`. */
export async function findServer(
  db: ConfigDb,
  organizationGuid: string,
  guid: string,
  { includeDeleted = false }: { includeDeleted?: boolean } = {},
): Promise<InboundServer | undefined> {
  let query = db.selectFrom('inbound_servers').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid);
  if (!includeDeleted) query = query.where('deleted_at', 'is', null);
  return query.executeTakeFirst();
}

/** Every live inbound server of the workspace, oldest first. */
export async function listServers(db: ConfigDb, organizationGuid: string): Promise<InboundServer[]> {
  return db
    .selectFrom('inbound_servers')
    .selectAll()
    .where('organization_guid', '=', organizationGuid)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('guid')
    .execute();
}

export async function insertServer(db: ConfigDb, values: Insertable<InboundServersTable>): Promise<InboundServer> {
  return db.insertInto('inbound_servers').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Changes fields of one server of the workspace and returns the saved row. */
export async function updateServer(db: ConfigDb, organizationGuid: string, guid: string, patch: Updateable<InboundServersTable>): Promise<InboundServer> {
  return db
    .updateTable('inbound_servers')
    .set(patch)
    .where('organization_guid', '=', organizationGuid)
    .where('guid', '=', guid)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Makes a validation job due now for the server, authenticating with `identityGuid`
 * (or the newest enabled identity when null). A server not yet authenticated goes
 * (back) to needs-authentication; an authenticated one keeps its status while the new
 * credential is checked.
 */
export async function scheduleValidation(
  db: ConfigDb,
  server: Pick<InboundServer, 'guid' | 'organization_guid' | 'authentication_type' | 'authentication_status'>,
  identityGuid: string | null,
): Promise<InboundServer> {
  const status = server.authentication_type === 'none' ? 'open' : server.authentication_status === 'authenticated' ? 'authenticated' : 'needs-authentication';
  return updateServer(db, server.organization_guid, server.guid, {
    validation_due_at: new Date(),
    validation_identity_guid: identityGuid,
    authentication_status: status,
    status_reason: null,
  });
}
