import { sql, type RawBuilder } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { Organization } from '../../stores/schema.js';

export async function insertOrganization(db: ConfigDb, org: { guid: string; name: string; type: 'standard' | 'partner' }): Promise<void> {
  await db.insertInto('organizations').values(org).execute();
}

export async function findOrganization(db: ConfigDb, guid: string): Promise<Organization | undefined> {
  return db.selectFrom('organizations').selectAll().where('guid', '=', guid).executeTakeFirst();
}

export async function countOrganizations(db: ConfigDb): Promise<number> {
  const row = await db
    .selectFrom('organizations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function grantEntitlement(db: ConfigDb, organizationGuid: string, key: string): Promise<void> {
  await db
    .insertInto('entitlements')
    .values({ organization_guid: organizationGuid, key })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function revokeEntitlement(db: ConfigDb, organizationGuid: string, key: string): Promise<void> {
  await db.deleteFrom('entitlements').where('organization_guid', '=', organizationGuid).where('key', '=', key).execute();
}

/** The entitlement that enables the administration interface (and the gateways) for a workspace. */
export const ADMIN_ENTITLEMENT = 'ff-svc-admin';

/**
 * Whether the workspace in column `organizationColumn` (e.g. 't.organization_guid')
 * holds the admin entitlement, as a select expression: the one place that rule is
 * written for the queries that resolve callers.
 */
export const holdsAdminEntitlement = (organizationColumn: string): RawBuilder<boolean> =>
  sql<boolean>`exists (select 1 from entitlements e where e.organization_guid = ${sql.ref(organizationColumn)} and e.key = ${ADMIN_ENTITLEMENT})`;
