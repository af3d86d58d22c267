import { sql } from 'kysely';
import type { Services } from '../services.js';

/**
 * Remembers the protocol revision an upstream was found to speak after validation
 * (a call it refused in the revision learned then, answered in another): the
 * revision goes where feature-learning keeps it, the server's features
 * (`protocolVersion`, see probe.ts), and the change is announced as feature-learning
 * announces its own, so every replica's routing tables are read again. A server
 * never validated (no features) is left to validation. Returns whether it changed.
 */
export async function rememberProtocolVersion(
  services: Pick<Services, 'db' | 'configChanges'>,
  server: { organizationGuid: string; serverGuid: string },
  protocolVersion: string,
): Promise<boolean> {
  const updated = await services.db
    .updateTable('inbound_servers')
    .set({
      features: sql<string>`jsonb_set(features, '{protocolVersion}', ${JSON.stringify(protocolVersion)}::jsonb)`,
      features_updated_at: new Date(),
    })
    .where('organization_guid', '=', server.organizationGuid)
    .where('guid', '=', server.serverGuid)
    .where('features', 'is not', null)
    .where(sql<boolean>`features->>'protocolVersion' is distinct from ${protocolVersion}`)
    .executeTakeFirst();
  const changed = Number(updated.numUpdatedRows) > 0;
  if (changed) services.configChanges.changed(server.organizationGuid);
  return changed;
}
