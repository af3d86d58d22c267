import type { Selectable, Updateable } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { HostsTable } from '../../stores/schema.js';

export type Host = Selectable<HostsTable>;

export async function listHosts(db: ConfigDb, organizationGuid: string): Promise<Host[]> {
  return db.selectFrom('hosts').selectAll().where('organization_guid', '=', organizationGuid).orderBy('created_at').orderBy('guid').execute();
}

export async function findHost(db: ConfigDb, organizationGuid: string, guid: string): Promise<Host | undefined> {
  return db.selectFrom('hosts').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid).executeTakeFirst();
}

export async function insertHost(db: ConfigDb, host: { guid: string; organization_guid: string; name: string }): Promise<Host> {
  return db.insertInto('hosts').values(host).returningAll().executeTakeFirstOrThrow();
}

export async function updateHost(db: ConfigDb, guid: string, change: Updateable<HostsTable>): Promise<Host> {
  return db.updateTable('hosts').set(change).where('guid', '=', guid).returningAll().executeTakeFirstOrThrow();
}

/**
 * Hard delete; connections bound to the host stay, with host_guid set to null (ON DELETE
 * SET NULL). A disabled host's connections are disabled first, in the same transaction:
 * unbound, they would otherwise serve again, and deleting a host must not re-open what
 * disabling it cut off.
 */
export async function deleteHost(db: ConfigDb, host: Pick<Host, 'guid' | 'enabled'>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (!host.enabled) await trx.updateTable('connections').set({ enabled: false }).where('host_guid', '=', host.guid).where('enabled', '=', true).execute();
    await trx.deleteFrom('hosts').where('guid', '=', host.guid).execute();
  });
}
