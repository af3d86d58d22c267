import { z } from 'zod';
import { validationFailed } from '../errors.js';
import { newGuid } from '../ids.js';
import { insertIdentity, type Identity } from '../repositories/identities.js';
import type { InboundServer } from '../repositories/inbound-servers.js';
import type { Services } from '../services.js';
import type { ConfigDb } from '../../stores/postgres.js';
import { checkedHeaderMap, headerMapInput } from '../header-map.js';
import type { HeadersSecret, OAuthTokenSet } from './credentials.js';

const Secret = (description: string) => z.string().min(1).max(16_384).describe(description);

export const HeadersMap = headerMapInput('Static request headers (name to value). Values are write-only: stored encrypted, never returned.');

/** The credential fields create_inbound_server and add_identity share (admin-api, create_inbound_server body). */
export const credentialFields = {
  headers: HeadersMap.optional(),
  oauthAccessToken: Secret('OAuth access token (secret); with oauthClientId and oauthTokenEndpoint, authenticates with no browser step').optional(),
  oauthRefreshToken: Secret('OAuth refresh token (secret)').optional(),
  oauthExpiresAt: z.number().int().min(0).describe('Unix epoch milliseconds at which the access token expires').optional(),
  oauthTokenEndpoint: z.string().min(1).max(2_048).describe('Token endpoint URL used for refresh (headless OAuth)').optional(),
  oauthClientId: z.string().min(1).max(512).describe('OAuth client id').optional(),
  oauthClientSecret: Secret('OAuth client secret, confidential clients only (secret)').optional(),
  oauthScope: z.string().max(2_048).describe('Space-separated scopes').optional(),
  identityLabel: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(200)
    .describe('Identity name; default is the server name followed by the word Identity')
    .optional(),
  accessControl: z.enum(['private', 'global']).describe('private (default: only the creator may use it) or global (anyone in the workspace)').optional(),
};

export type CredentialInput = { [K in keyof typeof credentialFields]?: z.output<(typeof credentialFields)[K]> };

const OAUTH_FIELDS = [
  'oauthAccessToken',
  'oauthRefreshToken',
  'oauthExpiresAt',
  'oauthTokenEndpoint',
  'oauthClientId',
  'oauthClientSecret',
  'oauthScope',
] as const;
/** Fields that only make sense next to an access token (headless OAuth). */
const HEADLESS_ONLY = ['oauthRefreshToken', 'oauthExpiresAt', 'oauthTokenEndpoint'] as const;

/** The OAuth fields present in the input. */
export const oauthFieldsGiven = (input: CredentialInput): string[] => OAUTH_FIELDS.filter((k) => input[k] !== undefined);

/**
 * The header map of a headers credential, as every header map is kept (checkedHeaderMap):
 * at least one header must remain once svc- names and empty entries are dropped.
 */
export function headersFrom(input: { headers?: Record<string, string> }): HeadersSecret {
  if (!input.headers) throw validationFailed([{ path: 'headers', message: 'is required for a headers credential' }]);
  const headers = checkedHeaderMap(input.headers);
  if (Object.keys(headers).length === 0)
    throw validationFailed([{ path: 'headers', message: 'must hold at least one header once svc- prefixed and empty entries are dropped' }]);
  return headers;
}

/**
 * The OAuth path the input selects: headless when an access token is given (then
 * oauthClientId and oauthTokenEndpoint are required too), interactive otherwise
 * (then the token-only fields must be absent).
 */
export async function oauthPathOf(services: Pick<Services, 'egress'>, input: CredentialInput): Promise<'headless' | 'interactive'> {
  if (input.oauthAccessToken === undefined) {
    const stray = HEADLESS_ONLY.filter((k) => input[k] !== undefined);
    if (stray.length) throw validationFailed(stray.map((k) => ({ path: k, message: 'is used only with oauthAccessToken (headless OAuth)' })));
    return 'interactive';
  }
  const missing = (['oauthClientId', 'oauthTokenEndpoint'] as const).filter((k) => input[k] === undefined);
  if (missing.length) throw validationFailed(missing.map((k) => ({ path: k, message: 'is required with oauthAccessToken (headless OAuth)' })));
  await services.egress.check('oauthTokenEndpoint', input.oauthTokenEndpoint!);
  return 'headless';
}

/** The token set of a headless OAuth credential. */
export const headlessTokenSet = (input: CredentialInput): OAuthTokenSet => ({
  accessToken: input.oauthAccessToken!,
  ...(input.oauthRefreshToken ? { refreshToken: input.oauthRefreshToken } : {}),
  ...(input.oauthExpiresAt !== undefined ? { expiresAt: input.oauthExpiresAt } : {}),
  tokenEndpoint: input.oauthTokenEndpoint!,
  clientId: input.oauthClientId!,
  ...(input.oauthClientSecret ? { clientSecret: input.oauthClientSecret } : {}),
  ...(input.oauthScope ? { scope: input.oauthScope } : {}),
});

/** Seals a credential and creates the identity that holds it. */
export async function createCredentialIdentity(
  services: Pick<Services, 'secrets'>,
  db: ConfigDb,
  opts: {
    server: Pick<InboundServer, 'guid' | 'organization_guid' | 'name'>;
    creatorGuid: string;
    input: CredentialInput;
    secret: HeadersSecret | OAuthTokenSet;
  },
): Promise<Identity> {
  const { server, input, secret } = opts;
  const secretGuid = await services.secrets.put(db, server.organization_guid, secret);
  const isOAuth = 'accessToken' in secret && 'tokenEndpoint' in secret;
  return insertIdentity(db, {
    guid: newGuid(),
    organization_guid: server.organization_guid,
    inbound_server_guid: server.guid,
    name: input.identityLabel ?? `${server.name} Identity`,
    access_control: input.accessControl ?? 'private',
    creator_guid: opts.creatorGuid,
    kind: isOAuth ? 'oauth' : 'headers',
    header_names: isOAuth ? [] : Object.keys(secret),
    secret_guid: secretGuid,
    oauth_expires_at: isOAuth && (secret as OAuthTokenSet).expiresAt !== undefined ? new Date((secret as OAuthTokenSet).expiresAt!) : null,
  });
}
