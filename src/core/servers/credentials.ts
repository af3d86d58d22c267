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

/** Every secret string in a credential, for redacting upstream answers. */
export function secretStringsOf(secret: HeadersSecret | OAuthTokenSet | undefined): string[] {
  if (!secret) return [];
  if ('accessToken' in secret && 'tokenEndpoint' in secret) {
    return [secret.accessToken, secret.refreshToken, secret.clientSecret].filter((s): s is string => typeof s === 'string');
  }
  return Object.values(secret as HeadersSecret);
}
