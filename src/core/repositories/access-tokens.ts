import type { ConfigDb } from '../../stores/postgres.js';
import type { AccessToken, NewAccessToken } from '../../stores/schema.js';

export async function insertAccessToken(db: ConfigDb, token: NewAccessToken): Promise<AccessToken> {
  return db.insertInto('access_tokens').values(token).returningAll().executeTakeFirstOrThrow();
}

/** The caller's live (unrevoked) access token with this label, if any. */
export async function findLiveAccessTokenByLabel(db: ConfigDb, userGuid: string, label: string): Promise<AccessToken | undefined> {
  return db
    .selectFrom('access_tokens')
    .selectAll()
    .where('user_guid', '=', userGuid)
    .where('label', '=', label)
    .where('kind', '=', 'access')
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function listLiveTokens(db: ConfigDb, userGuid: string): Promise<AccessToken[]> {
  return db
    .selectFrom('access_tokens')
    .selectAll()
    .where('user_guid', '=', userGuid)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Soft-deletes one of the user's tokens; false when the user has no such live token. */
export async function revokeToken(db: ConfigDb, userGuid: string, id: string): Promise<boolean> {
  const result = await db
    .updateTable('access_tokens')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .where('user_guid', '=', userGuid)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
