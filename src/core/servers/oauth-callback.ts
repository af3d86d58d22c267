import { exchangeAuthorization, IssuerMismatchError, validateAuthorizationResponseIssuer } from '@modelcontextprotocol/client';
import { newGuid } from '../ids.js';
import { insertIdentity } from '../repositories/identities.js';
import { findServer, scheduleValidation } from '../repositories/inbound-servers.js';
import { findUser } from '../repositories/users.js';
import type { Services } from '../services.js';
import type { OAuthTokenSet } from './credentials.js';
import { egressFetch } from './egress-fetch.js';
import { redactSecretValues } from '../redaction.js';
import type { OAuthServerSettings } from './oauth-authorize.js';
import { redirectUriOf } from './oauth-client-metadata.js';

/** A callback that cannot complete; the message is safe to show the human in the browser. */
export class OAuthCallbackError extends Error {}

/**
 * What completing an authorization uses: the state and sealed secrets, the egress rule,
 * the redirect URI, the validation it starts and the alert a mix-up raises.
 */
export type OAuthCallbackServices = Pick<Services, 'db' | 'secrets' | 'egress' | 'config' | 'logger' | 'serverValidation' | 'alerts'>;

export interface CallbackParams {
  state?: string;
  code?: string;
  error?: string;
  /** RFC 9207: the issuer of the authorization server that answered. */
  iss?: string;
}

/**
 * Completes an interactive authorization (the redirect to {PUBLIC_BASE_URL}/oauth/callback):
 * consumes the single-use state, checks that the answer comes from the authorization
 * server the request was sent to (RFC 9207), exchanges the code with its PKCE
 * verifier, stores the token set encrypted as a new identity of the user who started
 * the flow, keyed by that issuer, and starts the server's validation. Transport-free:
 * the HTTP route only renders the outcome.
 */
export async function completeAuthorization(
  services: OAuthCallbackServices,
  params: CallbackParams,
): Promise<{ inboundServerGuid: string; identityGuid: string }> {
  const { db } = services;
  if (!params.state) throw new OAuthCallbackError('The request carries no state.');
  // Deleting it first makes the state single-use even under a replayed redirect.
  const pending = await db.deleteFrom('oauth_states').where('state', '=', params.state).returningAll().executeTakeFirst();
  if (!pending) throw new OAuthCallbackError('This authorization is unknown or was already completed. Start again from the admin interface.');
  const verifier = await services.secrets.get<{ codeVerifier: string }>(db, pending.organization_guid, pending.verifier_secret_guid);
  await db.deleteFrom('secrets').where('guid', '=', pending.verifier_secret_guid).execute();
  if (pending.expires_at.getTime() < Date.now()) throw new OAuthCallbackError('This authorization has expired. Start again from the admin interface.');
  // The identity would be this user's: one deactivated since (their tokens revoked) completes nothing, like their tokens.
  const user = await findUser(db, pending.organization_guid, pending.user_guid);
  if (!user?.is_active) throw new OAuthCallbackError('The user who started this authorization is no longer active in the workspace.');
  const server = await findServer(db, pending.organization_guid, pending.inbound_server_guid);
  if (!server || server.authentication_type !== 'oauth' || !server.oauth_settings || !verifier) {
    throw new OAuthCallbackError('The server of this authorization no longer exists.');
  }
  const settings = server.oauth_settings as unknown as OAuthServerSettings;
  // States begun before issuers were recorded were sent to the server's issuer of the time.
  const issuer = pending.issuer ?? settings.metadata.issuer;
  if (settings.metadata.issuer !== issuer) {
    throw new OAuthCallbackError("This server's authorization server changed since this authorization started. Start again from the admin interface.");
  }
  // Before anything else of the answer is read: in a mix-up attack its error text is the attacker's.
  await refuseForeignIssuer(services, server, settings, issuer, params.iss);
  if (params.error) throw new OAuthCallbackError(`The authorization server did not grant access (${params.error.slice(0, 100)}).`);
  if (!params.code) throw new OAuthCallbackError('The request carries no authorization code.');
  const clientSecret = server.oauth_client_secret_guid
    ? await services.secrets.get<{ clientSecret: string }>(db, server.organization_guid, server.oauth_client_secret_guid)
    : undefined;

  let tokens;
  try {
    tokens = await exchangeAuthorization(settings.authorizationServerUrl, {
      metadata: settings.metadata,
      clientInformation: { client_id: settings.clientId, ...(clientSecret ? { client_secret: clientSecret.clientSecret } : {}) },
      authorizationCode: params.code,
      // Checked above already; the SDK checks it again before redeeming the code.
      ...(params.iss !== undefined ? { iss: params.iss } : {}),
      codeVerifier: verifier.codeVerifier,
      redirectUri: redirectUriOf(services.config),
      ...(settings.resource ? { resource: new URL(settings.resource) } : {}),
      fetchFn: egressFetch(services.egress, 'url'),
    });
  } catch (err) {
    const reason = redactSecretValues(err instanceof Error ? err.message : String(err), [
      params.code,
      verifier.codeVerifier,
      clientSecret?.clientSecret ?? '',
    ]).slice(0, 200);
    services.logger.warn({ inboundServerGuid: server.guid, reason }, 'OAuth code exchange failed');
    throw new OAuthCallbackError(`The authorization server refused the code exchange: ${reason}`);
  }
  const tokenSet: OAuthTokenSet = {
    accessToken: tokens.access_token,
    ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
    ...(typeof tokens.expires_in === 'number' ? { expiresAt: Date.now() + tokens.expires_in * 1000 } : {}),
    tokenEndpoint: settings.metadata.token_endpoint,
    clientId: settings.clientId,
    ...(clientSecret ? { clientSecret: clientSecret.clientSecret } : {}),
    ...((tokens.scope ?? settings.scope) ? { scope: tokens.scope ?? settings.scope } : {}),
    ...(settings.resource ? { resource: settings.resource } : {}),
    ...(settings.metadata.token_endpoint_auth_methods_supported ? { tokenEndpointAuthMethods: settings.metadata.token_endpoint_auth_methods_supported } : {}),
  };
  const identity = await db.transaction().execute(async (trx) => {
    const secretGuid = await services.secrets.put(trx, server.organization_guid, tokenSet);
    const created = await insertIdentity(trx, {
      guid: newGuid(),
      organization_guid: server.organization_guid,
      inbound_server_guid: server.guid,
      name: pending.identity_label ?? `${server.name} Identity`,
      access_control: pending.access_control,
      creator_guid: pending.user_guid,
      kind: 'oauth',
      header_names: [],
      secret_guid: secretGuid,
      oauth_expires_at: tokenSet.expiresAt ? new Date(tokenSet.expiresAt) : null,
      oauth_issuer: issuer,
    });
    await scheduleValidation(trx, server, created.guid);
    return created;
  });
  services.serverValidation.kick(server.guid);
  services.logger.info({ inboundServerGuid: server.guid, identityGuid: identity.guid }, 'OAuth authorization completed');
  return { inboundServerGuid: server.guid, identityGuid: identity.guid };
}

/**
 * RFC 9207 section 2.4, by the SDK's rule: an `iss` that is present must be the issuer
 * the request was sent to, and one that is absent is refused when that server
 * advertises `authorization_response_iss_parameter_supported`. A refusal raises
 * `oauth_authorization_refused` (a mix-up attempt, or a misconfigured server); the
 * page never shows the value received, which an attacker chose.
 */
async function refuseForeignIssuer(
  services: OAuthCallbackServices,
  server: { guid: string; organization_guid: string },
  settings: OAuthServerSettings,
  issuer: string,
  iss: string | undefined,
): Promise<void> {
  try {
    validateAuthorizationResponseIssuer({
      iss,
      expectedIssuer: issuer,
      issParameterSupported: settings.metadata.authorization_response_iss_parameter_supported === true,
    });
  } catch (err) {
    if (!(err instanceof IssuerMismatchError)) throw err;
    const problem = iss === undefined ? 'carries no issuer (iss), which this authorization server always sends' : 'names another issuer (iss)';
    const received = iss === undefined ? null : JSON.stringify(iss.slice(0, 200));
    services.logger.warn({ inboundServerGuid: server.guid, expectedIssuer: issuer, received }, 'OAuth authorization response refused: issuer mismatch');
    await services.alerts
      .raise({
        organizationGuid: server.organization_guid,
        code: 'oauth_authorization_refused',
        messageType: 'error',
        subject: 'OAuth authorization refused',
        message: `An authorization response for server ${server.guid} ${problem}; ${issuer} was asked. Nothing was stored.`,
        dynamicContent: {
          subject: 'OAuth authorization refused',
          message: 'An authorization response for server {inboundServerGuid} {problem}; {issuer} was asked. Nothing was stored.',
          values: { inboundServerGuid: server.guid, problem, issuer },
        },
        debugContext: { expectedIssuer: issuer, receivedIssuer: received },
        relatedResourceIds: [server.guid],
      })
      .catch(() => undefined);
    throw new OAuthCallbackError(
      `This answer does not come from the authorization server the request was sent to: it ${problem}. Nothing was stored. Start again from the admin interface.`,
    );
  }
}
