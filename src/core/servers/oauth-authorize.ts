import { randomBytes } from 'node:crypto';
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  registerClient,
  startAuthorization,
  type AuthorizationServerMetadata,
  type OAuthProtectedResourceMetadata,
} from '@modelcontextprotocol/client';
import { AppError, validationFailed } from '../errors.js';
import type { InboundServer } from '../repositories/inbound-servers.js';
import type { Services } from '../services.js';
import type { ConfigDb } from '../../stores/postgres.js';
import { egressFetch } from './egress-fetch.js';
import { clientMetadataDocumentUsable, clientMetadataOf, clientMetadataUrlOf, redirectUriOf } from './oauth-client-metadata.js';

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

/**
 * Finds the upstream's authorization server (RFC 9728 protected-resource metadata,
 * else the server's own origin; RFC 8414 metadata, whose issuer must be the server
 * asked) and obtains a client: the one given; else the service's Client ID Metadata
 * Document URL when the server supports those (nothing to register); else one
 * registered dynamically (RFC 7591). Failures are 400s naming the field the caller
 * can fix.
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
  // Without protected-resource metadata the origin is the issuer; with the trailing slash the SDK's issuer check accepts it written either way.
  const authorizationServerUrl = resourceMetadata?.authorization_servers?.[0] ?? `${serverUrl.origin}/`;
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
  const found = { authorizationServerUrl, metadata, scope, resource };
  if (given.clientId) return { settings: { ...found, clientId: given.clientId }, clientSecret: given.clientSecret };
  const documentUsable = clientMetadataDocumentUsable(services.config, authorizationServerUrl);
  if (metadata.client_id_metadata_document_supported === true && documentUsable) {
    return { settings: { ...found, clientId: clientMetadataUrlOf(services.config) } };
  }
  if (!metadata.registration_endpoint) {
    const why =
      metadata.client_id_metadata_document_supported === true
        ? 'the authorization server takes Client ID Metadata Documents, which need an https PUBLIC_BASE_URL, and offers no dynamic client registration'
        : 'the authorization server offers no dynamic client registration nor Client ID Metadata Documents';
    throw validationFailed([{ path: 'oauthClientId', message: `${why}: give the client id registered for this service` }]);
  }
  try {
    const client = await registerClient(authorizationServerUrl, {
      metadata,
      clientMetadata: {
        ...clientMetadataOf(services.config),
        // A public client with PKCE: no client secret to keep when the server allows it.
        token_endpoint_auth_method: metadata.token_endpoint_auth_methods_supported?.includes('none') === false ? 'client_secret_post' : 'none',
        ...(scope ? { scope } : {}),
      },
      fetchFn,
    });
    return { settings: { ...found, clientId: client.client_id }, clientSecret: client.client_secret };
  } catch (err) {
    throw validationFailed([
      { path: 'oauthClientId', message: `dynamic client registration failed (${briefly(err)}): give the client id registered for this service` },
    ]);
  }
}

/**
 * Starts an authorization code flow with PKCE (S256) for `userGuid` on `server`:
 * the state is random, single-use, expires, and is bound to the caller, the server,
 * the identity to create and the issuer asked (the callback accepts only its answer); the code verifier is stored encrypted. Returns the URL
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
    redirectUrl: redirectUriOf(services.config),
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
      issuer: opts.settings.metadata.issuer,
      expires_at: new Date(Date.now() + AUTHORIZATION_TTL_MS),
    })
    .execute();
  return authorizationUrl.href;
}

const briefly = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 200);
