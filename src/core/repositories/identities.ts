import type { Insertable, Selectable, Updateable } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';
import type { IdentitiesTable } from '../../stores/schema.js';

export type Identity = Selectable<IdentitiesTable>;

/**
 * The one visibility rule for identities: a private identity exists only for its
 * creator (everyone else gets 404, in every operation); a global one for the
 * whole workspace.
 */
export const isIdentityVisibleTo = (identity: Pick<Identity, 'access_control' | 'creator_guid'>, userGuid: string): boolean =>
  identity.access_control === 'global' || identity.creator_guid === userGuid;

/** An identity of the workspace that `userGuid` may see, or undefined. */
export async function findVisibleIdentity(db: ConfigDb, organizationGuid: string, userGuid: string, guid: string): Promise<Identity | undefined> {
  const identity = await db.selectFrom('identities').selectAll().where('organization_guid', '=', organizationGuid).where('guid', '=', guid).executeTakeFirst();
  return identity && isIdentityVisibleTo(identity, userGuid) ? identity : undefined;
}

/** The identities of one server that `userGuid` may see (global ones and their own private ones), oldest first. */
export async function listVisibleIdentities(db: ConfigDb, organizationGuid: string, userGuid: string, inboundServerGuid: string): Promise<Identity[]> {
  return db
    .selectFrom('identities')
    .selectAll()
    .where('organization_guid', '=', organizationGuid)
    .where('inbound_server_guid', '=', inboundServerGuid)
    .where((eb) => eb.or([eb('access_control', '=', 'global'), eb('creator_guid', '=', userGuid)]))
    .orderBy('created_at')
    .orderBy('guid')
    .execute();
}

export async function insertIdentity(db: ConfigDb, values: Insertable<IdentitiesTable>): Promise<Identity> {
  return db.insertInto('identities').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Changes fields of one identity of the workspace and returns the saved row. */
export async function updateIdentity(db: ConfigDb, organizationGuid: string, guid: string, patch: Updateable<IdentitiesTable>): Promise<Identity> {
  return db
    .updateTable('identities')
    .set(patch)
    .where('organization_guid', '=', organizationGuid)
    .where('guid', '=', guid)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Deletes the identity row only: its encrypted credential stays in `secrets` (admin-api identities rule 5). */
export async function deleteIdentityRow(db: ConfigDb, organizationGuid: string, guid: string): Promise<void> {
  await db.deleteFrom('identities').where('organization_guid', '=', organizationGuid).where('guid', '=', guid).execute();
}
