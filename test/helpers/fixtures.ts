import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { newGuid } from '../../src/core/ids.js';
import type { AuthenticationType } from '../../src/stores/schema.js';
import type { TestApp } from './harness.js';

/**
 * Rows the inbound-server and identity operations would create, inserted directly:
 * the gateway tests need servers and identities without depending on their
 * operations (built and validated against real upstreams on their own branch).
 */
export async function insertServer(
  t: TestApp,
  organizationGuid: string,
  ownerGuid: string,
  opts: { authType?: AuthenticationType; enabled?: boolean; deleted?: boolean } = {},
): Promise<string> {
  const guid = newGuid();
  const authType = opts.authType ?? 'headers';
  await t.runtime.services.db
    .insertInto('inbound_servers')
    .values({
      guid,
      organization_guid: organizationGuid,
      name: `server-${randomUUID().slice(0, 6)}`,
      url: 'http://127.0.0.1:1/mcp',
      enabled: opts.enabled ?? true,
      authentication_type: authType,
      authentication_status: authType === 'none' ? 'open' : 'authenticated',
      status_reason: null,
      owner_guid: ownerGuid,
      oauth_client_secret_guid: null,
      deleted_at: opts.deleted ? new Date() : null,
    })
    .execute();
  return guid;
}

/** An identity of a server, private to its creator unless `global`. */
export async function insertIdentity(
  t: TestApp,
  organizationGuid: string,
  serverGuid: string,
  creatorGuid: string,
  opts: { accessControl?: 'private' | 'global'; enabled?: boolean } = {},
): Promise<string> {
  const guid = newGuid();
  await t.runtime.services.db
    .insertInto('identities')
    .values({
      guid,
      organization_guid: organizationGuid,
      inbound_server_guid: serverGuid,
      name: `identity-${randomUUID().slice(0, 6)}`,
      enabled: opts.enabled ?? true,
      access_control: opts.accessControl ?? 'private',
      creator_guid: creatorGuid,
      kind: 'headers',
      header_names: ['x-api-key'],
      secret_guid: null,
      oauth_expires_at: null,
    })
    .execute();
  return guid;
}

/**
 * Makes any UPDATE of one row fail, so a test can prove an operation that "saves
 * only on change" issued no write at all when nothing changed.
 */
export async function freezeRow(t: TestApp, table: 'gateways' | 'gateway_assignments' | 'hosts' | 'connections', guid: string): Promise<() => Promise<void>> {
  const name = `frozen_${guid.replace(/-/g, '')}`;
  const db = t.runtime.services.db;
  await sql`create or replace function ${sql.raw(name)}() returns trigger language plpgsql as $$ begin raise exception 'row is frozen'; end $$`.execute(db);
  await sql`create trigger ${sql.raw(name)} before update on ${sql.table(table)} for each row when (old.guid = ${sql.lit(guid)}::uuid) execute function ${sql.raw(name)}()`.execute(
    db,
  );
  return async () => {
    await sql`drop trigger ${sql.raw(name)} on ${sql.table(table)}`.execute(db);
    await sql`drop function ${sql.raw(name)}()`.execute(db);
  };
}
