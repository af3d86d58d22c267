import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTokenSet } from '../src/core/servers/oauth-refresh.js';
import { clientMetadataDocumentUsable } from '../src/core/servers/oauth-client-metadata.js';
import { discoverOAuthSettings } from '../src/core/servers/oauth-authorize.js';
import type { OAuthTokenSet } from '../src/core/servers/credentials.js';
import { findServer, scheduleValidation } from '../src/core/repositories/inbound-servers.js';
import type { NewAlert } from '../src/core/alerts.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, SURFACES, startTestApp, type Surface, type TestApp } from './helpers/harness.js';
import { captureAlerts, validated } from './helpers/servers.js';
import { freePort } from './helpers/ports.js';
import { FOREIGN_ISSUER, startOAuthServer, type OAuthServerModes, type OAuthUpstream } from './helpers/upstreams.js';

/**
 * Upstream OAuth as of MCP revision 2026-07-28, against a local authorization server
 * in each mode: Client ID Metadata Documents (the server fetches the service's
 * document over loopback), dynamic registration as the fallback, RFC 9207 `iss` on
 * the authorization response, and credentials keyed by the issuer that minted them.
 * The service listens for real here, on the port of its PUBLIC_BASE_URL.
 */
let t: TestApp;
let ws: CreatedWorkspace;
let alerts: NewAlert[];
const upstreams: OAuthUpstream[] = [];
const responses: unknown[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  const port = await freePort();
  t = await startTestApp({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
  await t.app.listen({ host: '127.0.0.1', port });
  ws = await newWorkspace(t);
  alerts = captureAlerts(t);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
  await Promise.all(upstreams.map((u) => u.close()));
});

const documentUrl = () => `${t.config.publicBaseUrl}/oauth/client-metadata.json`;
const redirectUri = () => `${t.config.publicBaseUrl}/oauth/callback`;

async function authorizationServer(modes: Partial<OAuthServerModes> = {}): Promise<OAuthUpstream> {
  const upstream = await startOAuthServer(modes);
  upstreams.push(upstream);
  return upstream;
}

const call = async (surface: Surface, name: string, input: Record<string, unknown>) => {
  const res = await invoke(t, surface, ws.token, name, input);
  responses.push(res.body);
  return res;
};

/** Plays the human: the authorization server approves at once; its redirect is followed to the service's callback. */
async function approve(authorizationUrl: string): Promise<{ status: number; body: string; location: URL }> {
  const res = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(res.status, await res.clone().text()).toBe(302);
  const location = new URL(res.headers.get('location')!);
  expect(location.origin + location.pathname).toBe(redirectUri());
  const answer = await t.app.inject({ method: 'GET', url: location.pathname + location.search });
  return { status: answer.statusCode, body: answer.body, location };
}

const identitiesOf = (serverGuid: string) =>
  t.runtime.services.db.selectFrom('identities').selectAll().where('inbound_server_guid', '=', serverGuid).orderBy('created_at').execute();

const secretCount = async () =>
  (await t.runtime.services.db.selectFrom('secrets').select('guid').where('organization_guid', '=', ws.organizationGuid).execute()).length;

async function tokenSetOf(identityGuid: string): Promise<OAuthTokenSet> {
  const { services } = t.runtime;
  const row = await services.db.selectFrom('identities').selectAll().where('guid', '=', identityGuid).executeTakeFirstOrThrow();
  const set = (await services.secrets.get<OAuthTokenSet>(services.db, row.organization_guid, row.secret_guid!))!;
  secrets.push(set.accessToken, ...(set.refreshToken ? [set.refreshToken] : []));
  return set;
}

describe('the client metadata document', () => {
  it('is public JSON at {PUBLIC_BASE_URL}/oauth/client-metadata.json naming the callback as its only redirect URI', async () => {
    const res = await fetch(documentUrl());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      client_id: documentUrl(),
      client_name: 'MCP gateway manager',
      client_uri: t.config.publicBaseUrl,
      redirect_uris: [redirectUri()],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
  });

  it('is used only where the authorization server can fetch it: https, or loopback http for a loopback server', () => {
    const cases: [string, string, boolean][] = [
      ['https://gateway.example.com', 'https://as.example.com', true],
      ['https://gateway.example.com', 'http://127.0.0.1:9000', true],
      ['http://127.0.0.1:8080', 'http://127.0.0.1:9000/', true],
      ['http://localhost:8080', 'http://[::1]:9000', true],
      ['http://127.0.0.1:8080', 'https://as.example.com', false],
      ['http://gateway.internal:8080', 'http://127.0.0.1:9000', false],
    ];
    for (const [publicBaseUrl, as, usable] of cases) expect(clientMetadataDocumentUsable({ publicBaseUrl }, as), `${publicBaseUrl} at ${as}`).toBe(usable);
  });
});

describe.each(SURFACES)('choosing the client on %s', (surface) => {
  it('Client ID Metadata Documents: the document URL is the client_id, fetched by the server over loopback; nothing is registered', async () => {
    const as = await authorizationServer({ clientIdMetadataDocuments: true, registration: true });
    const res = await call(surface, 'create_inbound_server', { name: `cimd-${surface}`, url: as.url, authType: 'oauth' });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    const authorizationUrl = new URL(res.body.authorizationUrl);
    expect(authorizationUrl.searchParams.get('client_id')).toBe(documentUrl());
    expect(as.registrations).toBe(0);

    // The server checks the redirect URI against the document it fetched from the service.
    const tampered = new URL(authorizationUrl);
    tampered.searchParams.set('redirect_uri', 'http://127.0.0.1:1/elsewhere');
    expect((await fetch(tampered, { redirect: 'manual' })).status).toBe(400);
    expect(as.fetchedClientMetadata).toEqual([documentUrl()]);

    const done = await approve(authorizationUrl.href);
    expect(done.status).toBe(200);
    expect((await validated(t, res.body.guid)).authentication_status).toBe('authenticated');
    expect(as.registrations).toBe(0);
    const identity = (await identitiesOf(res.body.guid))[0]!;
    expect(identity.oauth_issuer).toBe(as.issuerIdentifier);
    const set = await tokenSetOf(identity.guid);
    expect(set.clientId).toBe(documentUrl());
    expect(as.acceptedTokens).toContain(set.accessToken);

    // A refresh authenticates as the same URL client; the server fetches the document again.
    const fetchesBefore = as.fetchedClientMetadata.length;
    const refreshed = await freshTokenSet(t.runtime.services, identity, { force: true });
    secrets.push(refreshed.accessToken, refreshed.refreshToken!);
    expect(refreshed.accessToken).not.toBe(set.accessToken);
    expect(as.provider.refreshCount).toBe(1);
    expect(as.fetchedClientMetadata.length).toBeGreaterThan(fetchesBefore);
  });

  it('dynamic client registration stays the fallback where the server takes no metadata documents', async () => {
    const as = await authorizationServer({ clientIdMetadataDocuments: false, registration: true });
    const res = await call(surface, 'create_inbound_server', { name: `dcr-${surface}`, url: as.url, authType: 'oauth' });
    expect(as.registrations).toBe(1);
    const clientId = new URL(res.body.authorizationUrl).searchParams.get('client_id')!;
    expect(clientId).not.toBe(documentUrl());
    expect(await as.provider.clientsStore.getClient(clientId)).toMatchObject({ redirect_uris: [redirectUri()], token_endpoint_auth_method: 'none' });
    expect((await approve(res.body.authorizationUrl)).status).toBe(200);
    expect((await validated(t, res.body.guid)).authentication_status).toBe('authenticated');
    expect(as.fetchedClientMetadata).toEqual([]);
  });

  it('with neither, a client id must be given (400 naming oauthClientId, nothing created); a given one is used as is', async () => {
    const as = await authorizationServer({ clientIdMetadataDocuments: false, registration: false });
    const before = await t.runtime.services.db.selectFrom('inbound_servers').select('guid').where('organization_guid', '=', ws.organizationGuid).execute();
    const refused = await call(surface, 'create_inbound_server', { name: `none-${surface}`, url: as.url, authType: 'oauth' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].path).toBe('oauthClientId');
    expect(refused.body.errors[0].message).toMatch(/neither|nor/);
    const after = await t.runtime.services.db.selectFrom('inbound_servers').select('guid').where('organization_guid', '=', ws.organizationGuid).execute();
    expect(after.length).toBe(before.length);

    const clientId = await as.provider.registerPublicClient(redirectUri());
    const res = await call(surface, 'create_inbound_server', { name: `given-${surface}`, url: as.url, authType: 'oauth', oauthClientId: clientId });
    expect(new URL(res.body.authorizationUrl).searchParams.get('client_id')).toBe(clientId);
    expect((await approve(res.body.authorizationUrl)).status).toBe(200);
    expect((await validated(t, res.body.guid)).authentication_status).toBe('authenticated');
  });
});

describe('a PUBLIC_BASE_URL the authorization server cannot fetch', () => {
  it('falls back to dynamic registration even where the server takes metadata documents', async () => {
    const as = await authorizationServer({ clientIdMetadataDocuments: true, registration: true });
    // One service per process (chDB): the same discovery with the PUBLIC_BASE_URL of a service behind a plain-http name.
    const services = { egress: t.runtime.services.egress, config: { ...t.config, publicBaseUrl: 'http://gateway.example.test' } };
    const { settings } = await discoverOAuthSettings(services, new URL(as.url), {});
    expect(settings.clientId).not.toBe('http://gateway.example.test/oauth/client-metadata.json');
    expect(as.registrations).toBe(1);
    expect(await as.provider.clientsStore.getClient(settings.clientId)).toMatchObject({ redirect_uris: ['http://gateway.example.test/oauth/callback'] });
  });
});

describe.each(SURFACES)('RFC 9207 iss on the authorization response, servers created on %s', (surface) => {
  async function started(modes: Partial<OAuthServerModes>, name: string) {
    const as = await authorizationServer({ clientIdMetadataDocuments: true, ...modes });
    const secretsBefore = await secretCount();
    const { body: server } = await call(surface, 'create_inbound_server', { name: `${name}-${surface}`, url: as.url, authType: 'oauth' });
    return { as, server, secretsBefore };
  }

  /** The refusal left nothing: no identity, no token set, the code never redeemed, the server still awaiting authentication. */
  async function expectNothingStored(as: OAuthUpstream, server: { guid: string }, secretsBefore: number) {
    expect(await identitiesOf(server.guid)).toEqual([]);
    expect(await secretCount()).toBe(secretsBefore);
    expect(as.tokenRequests.filter((r) => r.grant_type === 'authorization_code')).toEqual([]);
    expect((await validated(t, server.guid)).authentication_status).toBe('needs-authentication');
  }

  it('an advertised iss that matches the issuer is accepted', async () => {
    const { as, server } = await started({ issParameterSupported: true, issInResponse: 'issuer' }, 'iss-ok');
    const done = await approve(server.authorizationUrl);
    expect(done.location.searchParams.get('iss')).toBe(as.issuerIdentifier);
    expect(done.status, done.body).toBe(200);
    expect((await validated(t, server.guid)).authentication_status).toBe('authenticated');
  });

  it('a missing iss where the server advertises it is refused: nothing stored, an alert', async () => {
    const { as, server, secretsBefore } = await started({ issParameterSupported: true, issInResponse: 'absent' }, 'iss-missing');
    const done = await approve(server.authorizationUrl);
    expect(done.status).toBe(400);
    expect(done.body).toContain('Authorization failed');
    expect(done.body).toContain('carries no issuer');
    await expectNothingStored(as, server, secretsBefore);
    const alert = alerts.find((a) => a.code === 'oauth_authorization_refused' && a.relatedResourceIds?.includes(server.guid));
    expect(alert?.message).toContain(as.issuerIdentifier);
  });

  it('another iss is refused whether or not the server advertises it; the page repeats neither it nor the error text', async () => {
    for (const issParameterSupported of [true, false]) {
      const { as, server, secretsBefore } = await started({ issParameterSupported, issInResponse: 'wrong' }, `iss-wrong-${issParameterSupported}`);
      const done = await approve(server.authorizationUrl);
      expect(done.location.searchParams.get('iss')).toBe(FOREIGN_ISSUER);
      expect(done.status).toBe(400);
      expect(done.body).toContain('names another issuer');
      expect(done.body).not.toContain('attacker');
      await expectNothingStored(as, server, secretsBefore);
    }
    // A mix-up's error text is the attacker's: refused on the issuer before it is read.
    const { server } = await started({}, 'iss-wrong-error');
    const state = new URL(server.authorizationUrl).searchParams.get('state')!;
    const forged = await t.app.inject({
      method: 'GET',
      url: `/oauth/callback?state=${state}&error=access_denied&error_description=call+evil&iss=${encodeURIComponent(FOREIGN_ISSUER)}`,
    });
    expect(forged.statusCode).toBe(400);
    expect(forged.body).toContain('names another issuer');
    expect(forged.body).not.toContain('access_denied');
  });
});

describe.each(SURFACES)('credentials keyed by issuer (add_identity on %s)', (surface) => {
  it("when the server's authorization server changes, old tokens go nowhere and pending authorizations of the old one are refused", async () => {
    const first = await authorizationServer({ clientIdMetadataDocuments: true });
    const second = await authorizationServer({ clientIdMetadataDocuments: true });
    const { body: server } = await call(surface, 'create_inbound_server', { name: `moved-${surface}`, url: first.url, authType: 'oauth' });
    expect((await approve(server.authorizationUrl)).status).toBe(200);
    await validated(t, server.guid);
    const old = (await identitiesOf(server.guid))[0]!;
    expect(old.oauth_issuer).toBe(first.issuerIdentifier);
    const oldSet = await tokenSetOf(old.guid);
    // An authorization begun with the first server, not yet approved.
    const pending = (await call(surface, 'add_identity', { inboundServerGuid: server.guid })).body.authorizationUrl;
    expect(new URL(pending).origin).toBe(first.issuer);

    // The resource now names another authorization server; a new client there is discovered anew.
    first.modes.authorizationServers = [second.issuerIdentifier];
    first.trust(second.provider);
    const clientId = await second.provider.registerPublicClient(redirectUri());
    const moved = await call(surface, 'add_identity', { inboundServerGuid: server.guid, oauthClientId: clientId, identityLabel: 'at the second server' });
    expect(moved.status).toBe(surface === 'rest' ? 201 : 200);
    expect(new URL(moved.body.authorizationUrl).origin).toBe(second.issuer);
    expect((await approve(moved.body.authorizationUrl)).status).toBe(200);
    expect((await validated(t, server.guid)).authentication_status).toBe('authenticated');
    const fresh = (await identitiesOf(server.guid)).find((i) => i.name === 'at the second server')!;
    expect(fresh.oauth_issuer).toBe(second.issuerIdentifier);
    await tokenSetOf(fresh.guid);

    // The first server's answer to the pending authorization is no longer taken.
    const late = await approve(pending);
    expect(late.status).toBe(400);
    expect(late.body).toContain('authorization server changed');
    expect(await identitiesOf(server.guid)).toHaveLength(2);

    // The old identity's refresh token is sent to neither server: it must be authorized again.
    const { services } = t.runtime;
    await expect(freshTokenSet(services, old, { force: true })).rejects.toThrow(/authorized by .* now .*authorize the server again/);
    await services.secrets.replace(services.db, old.organization_guid, old.secret_guid!, { ...oldSet, expiresAt: Date.now() - 1000 });
    const row = (await findServer(services.db, ws.organizationGuid, server.guid))!;
    await scheduleValidation(services.db, row, old.guid);
    services.serverValidation.kick(server.guid);
    const after = await validated(t, server.guid);
    expect(after.status_reason).toMatch(/authorized by .*authorize the server again/);
    for (const as of [first, second]) expect(as.tokenRequests.some((r) => r.refresh_token === oldSet.refreshToken)).toBe(false);
    expect(alerts.filter((a) => a.code === 'oauth_refresh_failed' && a.relatedResourceIds?.includes(old.guid)).length).toBeGreaterThan(0);

    // The new identity refreshes at the server that minted it.
    const refreshed = await freshTokenSet(services, fresh, { force: true });
    secrets.push(refreshed.accessToken, refreshed.refreshToken!);
    expect(second.provider.refreshCount).toBe(1);
    expect(first.provider.refreshCount).toBe(0);
  });
});

describe('secrets', () => {
  it('never logged, answered or alerted a token', () => {
    expect(secrets.length).toBeGreaterThan(6);
    assertNeverLeaked(t, secrets, [...responses, ...alerts]);
  });
});
