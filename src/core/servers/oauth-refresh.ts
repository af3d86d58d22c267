import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { OAuthError, OAuthErrorCode, refreshAuthorization, type AuthorizationServerMetadata } from '@modelcontextprotocol/client';
import type { Identity } from '../repositories/identities.js';
import type { Services } from '../services.js';
import type { OAuthTokenSet } from './credentials.js';
import { egressFetch } from './egress-fetch.js';
import { redactSecretValues } from '../redaction.js';
import { engineDetails, responseDebug } from '../alert-debug.js';
import { mayRaiseAlert } from '../alert-gate.js';
import { recordFailedResponses, type FailedResponse } from './failed-response-recorder.js';
import type { OAuthServerSettings } from './oauth-authorize.js';

/** Refresh this long before the access token expires, so a call never races the expiry. */
export const REFRESH_MARGIN_MS = 60_000;
/** How long the token endpoint has to answer a refresh: other processes wait for it meanwhile (refreshOnce). */
export const REFRESH_TIMEOUT_MS = 20_000;
/**
 * How long a process holds an identity's refresh lease: longer than a refresh can take,
 * so that a lease runs out only when its process died or stalled.
 */
const REFRESH_LEASE_MS = REFRESH_TIMEOUT_MS + 10_000;
/** How often a process that waits for another's refresh reads the token set again. */
const LEASE_POLL_MS = 250;

export class OAuthRefreshError extends Error {}

/** What a refresh uses: the sealed token set, the egress rule, and the alert a failure raises. */
export type OAuthRefreshServices = Pick<Services, 'db' | 'secrets' | 'egress' | 'alerts' | 'logger'>;
type RefreshedIdentity = Pick<Identity, 'guid' | 'organization_guid' | 'inbound_server_guid' | 'secret_guid'>;

/** This process's refresh in flight per identity; the refresh lease (refreshOnce) is the same guard across processes. */
const inFlight = new Map<string, Promise<OAuthTokenSet>>();

/** A refused refresh is not tried again with the same refresh token for this long (a storm of calls would each ask, and alert). */
export const REFUSED_REFRESH_BACKOFF_MS = 60_000;
/** Per identity, the last refusal: its refresh token, when, and the error every caller gets meanwhile. */
const refusals = new Map<string, { refreshToken: string; at: number; error: OAuthRefreshError }>();

/** True when the token set should be refreshed now (it can be, and it expires soon or has expired). */
export const needsRefresh = (set: OAuthTokenSet, now = Date.now()): boolean =>
  Boolean(set.refreshToken) && typeof set.expiresAt === 'number' && set.expiresAt - REFRESH_MARGIN_MS <= now;

/**
 * The identity's OAuth token set with an access token that is good for now:
 * refreshed at the token endpoint (RFC 6749 section 6) when it expires within
 * REFRESH_MARGIN_MS, the new set sealed back in place. Used by server validation
 * and by the gateway. Concurrent callers for one identity share one refresh, in this
 * process and across the processes of one Postgres server (refreshOnce). The
 * refresh goes to the authorization server that minted the tokens, with the client it
 * knows; when the server's authorization server has changed since (another issuer),
 * the tokens are not sent anywhere and the identity must be authorized again. A
 * failed refresh raises the `oauth_refresh_failed` alert (no secret in it) and
 * throws OAuthRefreshError.
 */
export async function freshTokenSet(services: OAuthRefreshServices, identity: RefreshedIdentity, opts: { force?: boolean } = {}): Promise<OAuthTokenSet> {
  const set = await storedTokenSet(services, identity);
  if (!(opts.force ? Boolean(set.refreshToken) : needsRefresh(set))) return set;
  const running = inFlight.get(identity.guid);
  if (running) return running;
  // The same refresh token refused a moment ago: the same answer, without asking (or alerting) again; a new token set is tried at once.
  const refusal = refusals.get(identity.guid);
  if (refusal && refusal.refreshToken === set.refreshToken && Date.now() - refusal.at < REFUSED_REFRESH_BACKOFF_MS) throw refusal.error;
  const refresh = refreshOnce(services, identity, set)
    .then(
      (next) => {
        refusals.delete(identity.guid);
        return next;
      },
      (err: unknown) => {
        if (err instanceof OAuthRefreshError) refusals.set(identity.guid, { refreshToken: set.refreshToken!, at: Date.now(), error: err });
        throw err;
      },
    )
    .finally(() => inFlight.delete(identity.guid));
  inFlight.set(identity.guid, refresh);
  return refresh;
}

async function storedTokenSet(services: OAuthRefreshServices, identity: RefreshedIdentity): Promise<OAuthTokenSet> {
  const set = identity.secret_guid ? await services.secrets.get<OAuthTokenSet>(services.db, identity.organization_guid, identity.secret_guid) : undefined;
  if (!set) throw new OAuthRefreshError('the identity holds no OAuth tokens');
  return set;
}

/** True when the stored token set is no longer the one `seen`: another process refreshed it, or it was authorized again. */
const replaced = (seen: OAuthTokenSet, stored: OAuthTokenSet): boolean => stored.accessToken !== seen.accessToken || stored.refreshToken !== seen.refreshToken;

/**
 * One refresh across every process on the store. The process that takes the identity's
 * refresh lease (a time in its row, claimed by one UPDATE) reads the token set again,
 * uses one another process refreshed since `seen` was read as it is, or refreshes it;
 * the others read the stored set every LEASE_POLL_MS until it is replaced, or take
 * the lease once it is given back or runs out. Without it two replicas would both send
 * the same refresh token, and an authorization server that rotates refresh tokens
 * (OAuth 2.1) refuses the second with invalid_grant: a failed call and a false alert.
 * No store connection is held while the token endpoint answers.
 */
async function refreshOnce(services: OAuthRefreshServices, identity: RefreshedIdentity, seen: OAuthTokenSet): Promise<OAuthTokenSet> {
  // A lease runs out within REFRESH_LEASE_MS: waiting longer means the identity's row is gone.
  const waitUntil = Date.now() + REFRESH_LEASE_MS + 4 * LEASE_POLL_MS;
  for (;;) {
    const lease = await claimRefreshLease(services, identity.guid);
    if (lease) {
      try {
        const current = await storedTokenSet(services, identity);
        if (replaced(seen, current) && !needsRefresh(current)) return current;
        return await refreshTokenSet(services, identity, current);
      } finally {
        await giveBackRefreshLease(services, identity.guid, lease).catch((err: unknown) =>
          services.logger.warn(
            { identityGuid: identity.guid, err: err instanceof Error ? err.message : String(err) },
            'could not give back an OAuth refresh lease',
          ),
        );
      }
    }
    if (Date.now() > waitUntil) throw new OAuthRefreshError('another gateway process took the refresh of these tokens and did not finish it');
    await sleep(LEASE_POLL_MS);
    const current = await storedTokenSet(services, identity);
    if (replaced(seen, current) && !needsRefresh(current)) return current;
  }
}

/** Takes the identity's refresh lease unless another process holds one that has not run out: its end, or null. */
async function claimRefreshLease(services: OAuthRefreshServices, identityGuid: string): Promise<Date | null> {
  const now = new Date();
  const until = new Date(now.getTime() + REFRESH_LEASE_MS);
  const claimed = await services.db
    .updateTable('identities')
    .set({ oauth_refresh_lease_until: until })
    .where('guid', '=', identityGuid)
    .where((eb) => eb.or([eb('oauth_refresh_lease_until', 'is', null), eb('oauth_refresh_lease_until', '<=', now)]))
    .executeTakeFirst();
  return claimed.numUpdatedRows > 0n ? until : null;
}

/** Gives the lease back, unless it ran out and another process took it since. */
async function giveBackRefreshLease(services: OAuthRefreshServices, identityGuid: string, lease: Date): Promise<void> {
  await services.db
    .updateTable('identities')
    .set({ oauth_refresh_lease_until: null })
    .where('guid', '=', identityGuid)
    .where('oauth_refresh_lease_until', '=', lease)
    .execute();
}

async function refreshTokenSet(services: OAuthRefreshServices, identity: RefreshedIdentity, set: OAuthTokenSet): Promise<OAuthTokenSet> {
  const tokenEndpoint = new URL(set.tokenEndpoint);
  const endpoint = tokenEndpoint.origin + tokenEndpoint.pathname;
  const secrets = [set.accessToken, set.refreshToken ?? '', set.clientSecret ?? ''];
  // What the endpoint answered (nothing when it was not asked), redacted, and what the engine asked with.
  const debugContext = (answer?: FailedResponse | null) => ({
    tokenEndpoint: endpoint,
    ...responseDebug(answer?.status, answer?.headers, answer?.body, secrets),
    ...engineDetails({ tokenEndpoint: endpoint }),
  });
  const minted = await issuers(services, identity);
  if (minted.ofIdentity && minted.ofServer && minted.ofIdentity !== minted.ofServer) {
    const reason =
      `this identity was authorized by ${minted.ofIdentity}, but the server's authorization server is now ${minted.ofServer}: ` +
      'its tokens are not sent there; authorize the server again';
    throw await refused(services, identity, set, reason, debugContext());
  }
  // Only the token endpoint is known for a headless identity; that is all a refresh needs.
  const metadata = {
    issuer: minted.ofIdentity ?? tokenEndpoint.origin,
    authorization_endpoint: tokenEndpoint.href,
    token_endpoint: tokenEndpoint.href,
    response_types_supported: ['code'],
    ...(set.tokenEndpointAuthMethods ? { token_endpoint_auth_methods_supported: set.tokenEndpointAuthMethods } : {}),
  } as AuthorizationServerMetadata;
  const egress = egressFetch(services.egress, 'oauthTokenEndpoint');
  const recorder = recordFailedResponses((input, init) => egress(input, { ...init, signal: AbortSignal.timeout(REFRESH_TIMEOUT_MS) }));
  let tokens;
  try {
    tokens = await refreshAuthorization(tokenEndpoint.origin, {
      metadata,
      clientInformation: { client_id: set.clientId, ...(set.clientSecret ? { client_secret: set.clientSecret } : {}) },
      refreshToken: set.refreshToken!,
      ...(set.resource ? { resource: new URL(set.resource) } : {}),
      fetchFn: recorder.fetch,
    });
  } catch (err) {
    // Refused because the token set was refreshed meanwhile by a process outside the lease (or authorized again): the stored one is good.
    if (err instanceof OAuthError && err.code === OAuthErrorCode.InvalidGrant) {
      const stored = await storedTokenSet(services, identity);
      if (replaced(set, stored)) return stored;
    }
    const reason = redactSecretValues(err instanceof Error ? err.message : String(err), secrets).slice(0, 500);
    throw await refused(services, identity, set, reason, debugContext(await recorder.lastFailure()));
  }
  const next: OAuthTokenSet = {
    ...set,
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token ?? set.refreshToken,
    expiresAt: typeof tokens.expires_in === 'number' ? Date.now() + tokens.expires_in * 1000 : undefined,
    ...(tokens.scope ? { scope: tokens.scope } : {}),
  };
  await services.secrets.replace(services.db, identity.organization_guid, identity.secret_guid!, next);
  await services.db
    .updateTable('identities')
    .set({ oauth_expires_at: next.expiresAt ? new Date(next.expiresAt) : null })
    .where('guid', '=', identity.guid)
    .execute();
  return next;
}

/** The issuer that minted the identity's tokens and the one the server's settings name now; null where unknown (headless). */
async function issuers(services: OAuthRefreshServices, identity: Pick<Identity, 'guid'>): Promise<{ ofIdentity: string | null; ofServer: string | null }> {
  const row = await services.db
    .selectFrom('identities as i')
    .innerJoin('inbound_servers as s', 's.guid', 'i.inbound_server_guid')
    .select(['i.oauth_issuer', 's.oauth_settings'])
    .where('i.guid', '=', identity.guid)
    .executeTakeFirst();
  const settings = row?.oauth_settings as unknown as OAuthServerSettings | null | undefined;
  return { ofIdentity: row?.oauth_issuer ?? null, ofServer: settings?.metadata?.issuer ?? null };
}

/**
 * Logs and alerts a refresh that did not happen (the reason holds no secret) and returns
 * the error to throw. The alert is raised once per token set and cooldown by the whole
 * service (every replica's gateway asks again after REFUSED_REFRESH_BACKOFF_MS); a new
 * token set refused is a new cause, alerted at once. The gate key names the refresh token
 * by a short digest, never the token.
 */
async function refused(
  services: OAuthRefreshServices,
  identity: Pick<Identity, 'guid' | 'organization_guid' | 'inbound_server_guid'>,
  set: OAuthTokenSet,
  reason: string,
  debugContext: Record<string, unknown>,
): Promise<OAuthRefreshError> {
  services.logger.warn({ identityGuid: identity.guid, inboundServerGuid: identity.inbound_server_guid, reason }, 'OAuth token refresh failed');
  const tokenSet = createHash('sha256')
    .update(set.refreshToken ?? '')
    .digest('hex')
    .slice(0, 16);
  const error = new OAuthRefreshError(`the access token could not be refreshed: ${reason}`);
  if (!(await mayRaiseAlert(services, identity.organization_guid, `oauth_refresh_failed ${identity.guid} ${tokenSet}`))) return error;
  await services.alerts
    .raise({
      organizationGuid: identity.organization_guid,
      code: 'oauth_refresh_failed',
      messageType: 'error',
      subject: 'OAuth token refresh failed',
      message: `Refreshing the access token of identity ${identity.guid} failed: ${reason}`,
      dynamicContent: {
        subject: 'OAuth token refresh failed',
        message: 'Refreshing the access token of identity {identityGuid} failed: {reason}',
        values: { identityGuid: identity.guid, reason },
      },
      debugContext,
      relatedResourceIds: [identity.inbound_server_guid, identity.guid],
    })
    .catch(() => undefined);
  return error;
}
