import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthTokenSet } from '../../src/core/servers/credentials.js';
import type { CreatedWorkspace } from '../../src/core/workspaces.js';
import { invoke, type TestApp } from './harness.js';
import { validated } from './servers.js';
import type { OAuthUpstream } from './upstreams.js';

export interface HeadlessOAuthIdentity {
  serverGuid: string;
  identity: { guid: string; organization_guid: string; inbound_server_guid: string; secret_guid: string | null };
  clientId: string;
  /** What the authorization server issued (for the caller's secret-leak checks). */
  tokens: OAuthTokens;
}

/** create_inbound_server's input for a server on `upstream` authenticated headlessly with `tokens`, said to be good for an hour. */
export const headlessOAuthInput = (upstream: OAuthUpstream, name: string, clientId: string, tokens: OAuthTokens) => ({
  name,
  url: upstream.url,
  authType: 'oauth',
  oauthAccessToken: tokens.access_token,
  oauthRefreshToken: tokens.refresh_token,
  oauthExpiresAt: Date.now() + 3_600_000,
  oauthTokenEndpoint: upstream.tokenEndpoint,
  oauthClientId: clientId,
});

/** A server on `upstream` authenticated headlessly with tokens good for an hour, validated, and its identity. */
export async function headlessOAuthIdentity(t: TestApp, ws: CreatedWorkspace, upstream: OAuthUpstream, name: string): Promise<HeadlessOAuthIdentity> {
  const { clientId, tokens } = await upstream.provider.issueDirect(3600);
  const res = await invoke(t, 'rest', ws.token, 'create_inbound_server', headlessOAuthInput(upstream, name, clientId, tokens));
  if (res.status !== 201) throw new Error(`create_inbound_server: ${JSON.stringify(res.body)}`);
  const row = await validated(t, res.body.guid);
  if (row.authentication_status !== 'authenticated') throw new Error(`server not authenticated: ${row.status_reason}`);
  const { db } = t.runtime.services;
  const identity = await db.selectFrom('identities').selectAll().where('inbound_server_guid', '=', res.body.guid).executeTakeFirstOrThrow();
  return { serverGuid: res.body.guid, identity, clientId, tokens };
}

/** The identity's stored token set. */
export async function storedTokenSet(t: TestApp, identity: HeadlessOAuthIdentity['identity']): Promise<OAuthTokenSet> {
  const { services } = t.runtime;
  return (await services.secrets.get<OAuthTokenSet>(services.db, identity.organization_guid, identity.secret_guid!))!;
}

/** Makes the identity's access token expire within the refresh margin (its tokens stay good); returns the token set as it was. */
export async function expireSoon(t: TestApp, identity: HeadlessOAuthIdentity['identity']): Promise<OAuthTokenSet> {
  const { services } = t.runtime;
  const set = await storedTokenSet(t, identity);
  await services.secrets.replace(services.db, identity.organization_guid, identity.secret_guid!, { ...set, expiresAt: Date.now() + 1_000 });
  return set;
}
