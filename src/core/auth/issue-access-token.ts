import type { ConfigDb } from '../../stores/postgres.js';
import type { AccessToken } from '../../stores/schema.js';
import { newGuid } from '../ids.js';
import { findLiveAccessTokenByLabel, insertAccessToken } from '../repositories/access-tokens.js';
import { mintToken } from './tokens.js';

export interface IssuedAccessToken {
  record: AccessToken;
  /** The plaintext, present only when a token was minted now. */
  token: string | null;
  alreadyExisted: boolean;
}

const DAY_MS = 86_400_000;

/**
 * Mints an admin access token for a user, idempotent by label: when the user
 * already has a live token with that label, that record comes back and nothing is
 * minted. `expiresInDays` 0 means never.
 */
export async function issueAccessToken(
  db: ConfigDb,
  opts: { organizationGuid: string; userGuid: string; label: string; expiresInDays: number },
): Promise<IssuedAccessToken> {
  const existing = await findLiveAccessTokenByLabel(db, opts.userGuid, opts.label);
  if (existing) return { record: existing, token: null, alreadyExisted: true };
  const minted = mintToken('access');
  const now = new Date();
  const record = await insertAccessToken(db, {
    id: newGuid(),
    organization_guid: opts.organizationGuid,
    user_guid: opts.userGuid,
    kind: 'access',
    label: opts.label,
    prefix: minted.prefix,
    token_hash: minted.hash,
    gateway_guid: null,
    connection_guid: null,
    expires_at: opts.expiresInDays === 0 ? null : new Date(now.getTime() + opts.expiresInDays * DAY_MS),
    created_at: now,
  });
  return { record, token: minted.token, alreadyExisted: false };
}
