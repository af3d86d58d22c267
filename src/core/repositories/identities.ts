import type { Selectable } from 'kysely';
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
