import { randomBytes } from 'node:crypto';
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { AppError, validationFailed } from '../errors.js';
import type { InboundServer } from '../repositories/inbound-servers.js';
import type { Services } from '../services.js';
import type { ConfigDb } from '../../stores/postgres.js';
import { egressFetch } from './egress-fetch.js';

/** How long a started authorization may wait for the human's approval. */
export const AUTHORIZATION_TTL_MS = 15 * 60_000;

/**
 * Non-secret OAuth settings of an interactive server, kept in
 * inbound_servers.oauth_settings; the client secret (if the authorization server
 * issued one) is sealed apart, in oauth_client_secret_guid.
 */
export interface OAuthServerSettings {
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  clientId: string;
  scope?: string;
  /** RFC 8707 resource indicator, from the protected-resource metadata. */
  resource?: string;
}

/** Where the authorization server sends the human back: {PUBLIC_BASE_URL}/oauth/callback. */
export const redirectUriOf = (services: Pick<Services, 'config'>): string => `${services.config.publicBaseUrl}/oauth/callback`;

/**
 * Finds the upstream's authorization server (RFC 9728 protected-resource metadata,
 * else the server's own origin; RFC 8414 metadata) and obtains a client: the one
 * given, or one registered dynamically (RFC 7591) when the server offers it.
 * Failures are 400s naming the field the caller can fix.
 */
export async function discoverOAuthSettings(
  services: Pick<Services, 'egress' | 'config'>,
  serverUrl: URL,
  given: { clientId?: string; clientSecret?: string; scope?: string },
): Promise<{ settings: OAuthServerSettings; clientSecret?: string }> {
  const fetchFn = egressFetch(services.egress, 'url');
  let resourceMetadata: OAuthProtectedResourceMetadata | undefined;
  try {
    resourceMetadata = await discoverOAuthProtectedResourceMetadata(serverUrl, {}, fetchFn);
  } catch {
    // Older servers publish no protected-resource metadata: their own origin is the authorization server.
  }
  const authorizationServerUrl = resourceMetadata?.authorization_servers?.[0] ?? serverUrl.origin;
  let metadata: AuthorizationServerMetadata | undefined;
  try {
    metadata = await discoverAuthorizationServerMetadata(authorizationServerUrl, { fetchFn });
  } catch (err) {
    // The egress rule refusing the authorization server (fetchFn, at connect time) names the field itself.
    if (err instanceof AppError) throw err;
    throw validationFailed([{ path: 'url', message: `the authorization server metadata of ${authorizationServerUrl} could not be read: ${briefly(err)}` }]);
  }
  if (!metadata)
    throw validationFailed([{ path: 'url', message: `no OAuth authorization server found for this server (looked at ${authorizationServerUrl})` }]);
  const scope = given.scope ?? resourceMetadata?.scopes_supported?.join(' ') ?? undefined;
  const resource = resourceMetadata?.resource;
  if (given.clientId) {
    return { settings: { authorizationServerUrl, metadata, clientId: given.clientId, scope, resource }, clientSecret: given.clientSecret };
  }
  if (!metadata.registration_endpoint) {
    throw validationFailed([
      { path: 'oauthClientId', message: 'the authorization server offers no dynamic client registration: give the client id registered for this service' },
    ]);
  }
  try {
    const client = await registerClient(authorizationServerUrl, {
      metadata,
      clientMetadata: {
        client_name: 'MCP gateway manager',
        redirect_uris: [redirectUriOf(services)],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        // A public client with PKCE: no client secret to keep when the server allows it.
        token_endpoint_auth_method: metadata.token_endpoint_auth_methods_supported?.includes('none') === false ? 'client_secret_post' : 'none',
        ...(scope ? { scope } : {}),
      },
      fetchFn,
    });
    return { settings: { authorizationServerUrl, metadata, clientId: client.client_id, scope, resource }, clientSecret: client.client_secret };
  } catch (err) {
    throw validationFailed([
      { path: 'oauthClientId', message: `dynamic client registration failed (${briefly(err)}): give the client id registered for this service` },
    ]);
  }
}

/**
 * Starts an authorization code flow with PKCE (S256) for `userGuid` on `server`:
 * the state is random, single-use, expires, and is bound to the caller, the server
 * and the identity to create; the code verifier is stored encrypted. Returns the URL
 * a human opens to approve.
 */
export async function beginAuthorization(
  services: Pick<Services, 'config' | 'secrets'>,
  db: ConfigDb,
  opts: {
    server: Pick<InboundServer, 'guid' | 'organization_guid'>;
    settings: OAuthServerSettings;
    userGuid: string;
    identityLabel: string | null;
    accessControl: 'private' | 'global';
  },
): Promise<string> {
  const state = randomBytes(32).toString('base64url');
  const { authorizationUrl, codeVerifier } = await startAuthorization(opts.settings.authorizationServerUrl, {
    metadata: opts.settings.metadata,
    clientInformation: { client_id: opts.settings.clientId },
    redirectUrl: redirectUriOf(services),
    state,
    ...(opts.settings.scope ? { scope: opts.settings.scope } : {}),
    ...(opts.settings.resource ? { resource: new URL(opts.settings.resource) } : {}),
  }).catch((err: unknown) => {
    throw validationFailed([{ path: 'url', message: `the authorization server cannot be used: ${briefly(err)}` }]);
  });
  const verifierSecretGuid = await services.secrets.put(db, opts.server.organization_guid, { codeVerifier });
  await db
    .insertInto('oauth_states')
    .values({
      state,
      organization_guid: opts.server.organization_guid,
      user_guid: opts.userGuid,
      inbound_server_guid: opts.server.guid,
      identity_label: opts.identityLabel,
      access_control: opts.accessControl,
      verifier_secret_guid: verifierSecretGuid,
      expires_at: new Date(Date.now() + AUTHORIZATION_TTL_MS),
    })
    .execute();
  return authorizationUrl.href;
}

const briefly = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 200);
