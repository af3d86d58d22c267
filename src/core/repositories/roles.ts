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
