import type { ConfigDb } from '../../stores/postgres.js';
import type { InboundServersTable } from '../../stores/schema.js';
import type { Selectable } from 'kysely';

export type InboundServer = Selectable<InboundServersTable>;

/** A live (not deleted) inbound server of the workspace. */
export async function findServer(db: ConfigDb, organizationGuid: string, guid: string): Promise<InboundServer | undefined> {
  return db
    .selectFrom('inbound_servers')
    .selectAll()
    .where('organization_guid', '=', organizationGuid)
    .where('guid', '=', guid)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}
