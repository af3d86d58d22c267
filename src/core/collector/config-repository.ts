import { sql } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { CollectorConfiguration, ForwardedSignal, LogsFormat } from '../../stores/schema.js';
import type { SecretStore } from '../secrets/secret-store.js';

/** A workspace's stored collector, or undefined when none was ever set. */
export async function findCollectorConfiguration(
  db: ConfigDb,
  organizationGuid: string,
  opts: { forUpdate?: boolean } = {},
): Promise<CollectorConfiguration | undefined> {
  let q = db.selectFrom('collector_configurations').selectAll().where('organization_guid', '=', organizationGuid);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

export interface CollectorValues {
  logs_url: string | null;
  logs_format: LogsFormat | null;
  traces_url: string | null;
  header_names: string[];
  headers_secret_guid: string | null;
}

/** Inserts or replaces the workspace's collector row. */
export async function saveCollectorConfiguration(db: ConfigDb, organizationGuid: string, values: CollectorValues): Promise<CollectorConfiguration> {
  return db
    .insertInto('collector_configurations')
    .values({ organization_guid: organizationGuid, ...values })
    .onConflict((oc) => oc.column('organization_guid').doUpdateSet({ ...values, updated_at: sql`now()` }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Removes a headers secret the collector no longer uses ({} clears the header set). */
export async function deleteCollectorHeadersSecret(db: ConfigDb, organizationGuid: string, secretGuid: string): Promise<void> {
  await db.deleteFrom('secrets').where('guid', '=', secretGuid).where('organization_guid', '=', organizationGuid).execute();
}

/**
 * Keeps one forwarder cursor per configured signal. A signal that gains a URL starts
 * at "now": only rows ingested after configuration are forwarded (contract section 5).
 * A signal that keeps its URL keeps its checkpoint, so a changed URL or header set
 * applies from the next batch on and nothing is sent twice or skipped. A signal that
 * loses its URL loses its cursor. Admin audit records follow the logs URL (contract
 * 8.4) with a cursor of their own, so neither stream holds the other back.
 * A kept cursor is due at once: a saved configuration (a new URL, a fixed token) is
 * tried now, not after the backoff or Retry-After the collector it replaces earned.
 */
export async function syncForwarderCursors(db: ConfigDb, organizationGuid: string, urls: { logs: boolean; traces: boolean }): Promise<void> {
  const enabled: Record<ForwardedSignal, boolean> = { ...urls, audit: urls.logs };
  for (const signal of ['logs', 'traces', 'audit'] as const) {
    if (enabled[signal]) {
      await db
        .insertInto('forwarder_cursors')
        .values({ organization_guid: organizationGuid, signal, checkpoint_at: sql<Date>`now()`, lease_expires_at: new Date(0), next_attempt_at: new Date(0) })
        .onConflict((oc) => oc.columns(['organization_guid', 'signal']).doUpdateSet({ attempts: 0, next_attempt_at: new Date(0) }))
        .execute();
    } else {
      await db.deleteFrom('forwarder_cursors').where('organization_guid', '=', organizationGuid).where('signal', '=', signal).execute();
    }
  }
}

/** The decrypted header map of a collector, for the forwarder only: never log or return it. */
export async function openCollectorHeaders(
  db: ConfigDb,
  secrets: SecretStore,
  config: Pick<CollectorConfiguration, 'organization_guid' | 'headers_secret_guid'>,
): Promise<Record<string, string>> {
  if (!config.headers_secret_guid) return {};
  return (await secrets.get<Record<string, string>>(db, config.organization_guid, config.headers_secret_guid)) ?? {};
}
