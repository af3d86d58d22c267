import net from 'node:net';
import { isHttpsUrl, type OAuthClientMetadata } from '@modelcontextprotocol/client';
import ipaddr from 'ipaddr.js';
import type { Config } from '../../config.js';

/**
 * Who the service is to an upstream's authorization server: its redirect URI and its
 * client metadata, published as a Client ID Metadata Document (MCP authorization,
 * revision 2025-11-25 and later) at {PUBLIC_BASE_URL}/oauth/client-metadata.json and
 * sent as is in a dynamic client registration (RFC 7591) where that is the way.
 */
type PublicBase = Pick<Config, 'publicBaseUrl'>;

export const OAUTH_CALLBACK_PATH = '/oauth/callback';
export const CLIENT_METADATA_PATH = '/oauth/client-metadata.json';

/** Where the authorization server sends the human back. */
export const redirectUriOf = (config: PublicBase): string => `${config.publicBaseUrl}${OAUTH_CALLBACK_PATH}`;

/** The URL that is the service's client_id at a server that supports Client ID Metadata Documents. */
export const clientMetadataUrlOf = (config: PublicBase): string => `${config.publicBaseUrl}${CLIENT_METADATA_PATH}`;

/** The service as an OAuth client: a public client (PKCE, no secret) with one redirect URI. */
export const clientMetadataOf = (config: PublicBase): OAuthClientMetadata => ({
  client_name: 'MCP gateway manager',
  client_uri: config.publicBaseUrl,
  redirect_uris: [redirectUriOf(config)],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
});

/** The published document: the metadata with its own URL as client_id, as the authorization server checks. */
export const clientMetadataDocumentOf = (config: PublicBase): OAuthClientMetadata & { client_id: string } => ({
  client_id: clientMetadataUrlOf(config),
  ...clientMetadataOf(config),
});

const isLoopbackHost = (hostname: string): boolean => {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  return net.isIP(host) !== 0 && ipaddr.process(host).range() === 'loopback';
};

/**
 * Whether `authorizationServerUrl` can take the document URL as a client_id: an https
 * URL (what the specification asks), or, for a setup on one machine, an http URL on a
 * loopback host when the authorization server is on loopback too (the only server
 * that could fetch it, as RFC 8252 allows loopback redirect URIs). A service on an
 * http PUBLIC_BASE_URL talking to a remote server registers dynamically instead.
 */
export function clientMetadataDocumentUsable(config: PublicBase, authorizationServerUrl: string): boolean {
  const documentUrl = clientMetadataUrlOf(config);
  if (isHttpsUrl(documentUrl)) return true;
  const document = new URL(documentUrl);
  return document.protocol === 'http:' && isLoopbackHost(document.hostname) && isLoopbackHost(new URL(authorizationServerUrl).hostname);
}
