/**
 * What an identity's encrypted secret holds. Header identities keep their header
 * map; OAuth identities keep a whole token set, including the client and token
 * endpoint needed to refresh it, so a refresh needs nothing but the identity.
 */
export type HeadersSecret = Record<string, string>;

export interface OAuthTokenSet {
  accessToken: string;
  refreshToken?: string;
  /** Epoch milliseconds at which the access token expires; absent when unknown. */
  expiresAt?: number;
  tokenEndpoint: string;
  clientId: string;
  clientSecret?: string;
  scope?: string;
  /** RFC 8707 resource indicator the tokens were issued for. */
  resource?: string;
  /** How the client authenticates at the token endpoint, when the server said. */
  tokenEndpointAuthMethods?: string[];
}

/** The reserved prefix of the service's own headers (admin-api rule 5). */
const RESERVED_PREFIX = 'svc-';

/**
 * Cleans an identity's header map as admin-api rule 5 asks: names starting with
 * `svc-` and entries with an empty name or value are dropped.
 */
export function cleanHeaders(headers: Record<string, string>): HeadersSecret {
  const out: HeadersSecret = {};
  for (const [name, value] of Object.entries(headers)) {
    const trimmed = name.trim();
    if (!trimmed || value === '' || trimmed.toLowerCase().startsWith(RESERVED_PREFIX)) continue;
    out[trimmed] = value;
  }
  return out;
}

/** Every secret string in a credential, for redacting upstream answers. */
export function secretStringsOf(secret: HeadersSecret | OAuthTokenSet | undefined): string[] {
  if (!secret) return [];
  if ('accessToken' in secret && 'tokenEndpoint' in secret) {
    return [secret.accessToken, secret.refreshToken, secret.clientSecret].filter((s): s is string => typeof s === 'string');
  }
  return Object.values(secret as HeadersSecret);
}
