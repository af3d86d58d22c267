import { sql } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { Role } from '../../stores/schema.js';

export async function listRoles(db: ConfigDb, organizationGuid: string): Promise<Role[]> {
  return db.selectFrom('roles').selectAll().where('organization_guid', '=', organizationGuid).orderBy('created_at').orderBy('guid').execute();
}

export async function findRole(db: ConfigDb, organizationGuid: string, guid: string): Promise<Role | undefined> {
  return db.selectFrom('roles').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid).executeTakeFirst();
}

export async function findRoleByName(db: ConfigDb, organizationGuid: string, name: string): Promise<Role | undefined> {
  return db.selectFrom('roles').selectAll().where('organization_guid', '=', organizationGuid).where('name', '=', name).executeTakeFirst();
}

export async function insertRole(db: ConfigDb, role: { guid: string; organization_guid: string; name: string; granted_capabilities: string[] }): Promise<Role> {
  return db.insertInto('roles').values(role).returningAll().executeTakeFirstOrThrow();
}

export async function updateRole(db: ConfigDb, guid: string, change: { name?: string; granted_capabilities?: string[] }): Promise<Role> {
  return db.updateTable('roles').set(change).where('guid', '=', guid).returningAll().executeTakeFirstOrThrow();
}

export async function deleteRole(db: ConfigDb, guid: string): Promise<void> {
  await db.deleteFrom('roles').where('guid', '=', guid).execute();
}

/** What lets someone give roles back (modify_role, set_user_role): a workspace keeps an active user who holds both. */
export const ROLE_ADMIN_CAPABILITIES = ['manageRoles', 'manageUserRoles'];

/**
 * The workspace's active users who hold every one of ROLE_ADMIN_CAPABILITIES, counted
 * under a lock on the workspace's row, so that two changes in flight cannot each remove
 * one of the last two (the lock is held to the end of the transaction).
 */
export async function countRoleAdmins(trx: ConfigDb, organizationGuid: string): Promise<number> {
  await trx.selectFrom('organizations').select('guid').where('guid', '=', organizationGuid).forUpdate().execute();
  const row = await trx
    .selectFrom('users')
    .innerJoin('roles', 'roles.guid', 'users.role_guid')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('users.organization_guid', '=', organizationGuid)
    .where('users.is_active', '=', true)
    .where(sql<boolean>`roles.granted_capabilities @> ${sql.val(ROLE_ADMIN_CAPABILITIES)}::text[]`)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}
