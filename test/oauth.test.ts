import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTokenSet } from '../src/core/servers/oauth-refresh.js';
import type { OAuthTokenSet } from '../src/core/servers/credentials.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { newMember } from './helpers/members.js';
import { gatewayClient, listenLoopback, sharedIdentityGateway } from './helpers/gateway.js';
import { expireSoon, headlessOAuthIdentity, headlessOAuthInput } from './helpers/oauth-identities.js';
import { captureAlerts, validated } from './helpers/servers.js';
import { startHeaderServer, startOAuthServer, type HeaderUpstream, type OAuthUpstream } from './helpers/upstreams.js';
import type { NewAlert } from '../src/core/alerts.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';

let t: TestApp;
let ws: CreatedWorkspace;
let other: CreatedWorkspace;
let upstream: OAuthUpstream;
let plain: HeaderUpstream;
let alerts: NewAlert[];
let base: string | undefined;
/** The app on a real loopback port (gateway hosts stream), opened once. */
const loopback = async () => (base ??= await listenLoopback(t));

/** A 1.x SDK host on a new gateway of its own serving `serverGuid` with the server's first identity, shared. */
async function hostThroughGateway(serverGuid: string, name: string) {
  const [identity] = (await invoke(t, 'rest', ws.token, 'list_identities', { inboundServerGuid: serverGuid })).body.items;
  const gateway = await sharedIdentityGateway(t, ws, name, serverGuid, identity.guid);
  return gatewayClient((await loopback()) + gateway.path, gateway.token);
}
const responses: unknown[] = [];
/** Every token and secret the tests handed out or the upstream issued. */
const secrets: string[] = [];

beforeAll(async () => {
  [t, upstream, plain] = await Promise.all([startTestApp(), startOAuthServer(), startHeaderServer('X-Key', 'never-sent')]);
  ws = await newWorkspace(t);
  other = await newWorkspace(t);
  alerts = captureAlerts(t);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
  await Promise.all([upstream?.close(), plain?.close()]);
});

type Surface = (typeof SURFACES)[number];
const call = async (surface: Surface, token: string, name: string, input: Record<string, unknown> = {}) => {
  const res = await invoke(t, surface, token, name, input);
  responses.push(res.body);
  return res;
};

/** Plays the human: opens the authorization URL (the demo server approves at once) and follows the redirect back to the callback. */
async function approve(authorizationUrl: string): Promise<{ status: number; body: string; callbackPath: string }> {
  const res = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get('location')!);
  expect(location.origin + location.pathname).toBe(`${t.config.publicBaseUrl}/oauth/callback`);
  const callbackPath = location.pathname + location.search;
  const answer = await t.app.inject({ method: 'GET', url: callbackPath });
  return { status: answer.statusCode, body: answer.body, callbackPath };
}

async function issuedTokenSet(identityGuid: string): Promise<OAuthTokenSet> {
  const { services } = t.runtime;
  const row = await services.db.selectFrom('identities').selectAll().where('guid', '=', identityGuid).executeTakeFirstOrThrow();
  return (await services.secrets.get<OAuthTokenSet>(services.db, row.organization_guid, row.secret_guid!))!;
}

describe.each(SURFACES)('OAuth servers on %s', (surface) => {
  it('interactive: authorizationUrl from the discovered server, approval, callback, identity created, server authenticated', async () => {
    const member = await newMember(t, ws, ['basicServerManagement', 'viewAllServers', 'accessAllIdentities', 'identityManagement']);
    const res = await call(surface, member.token, 'create_inbound_server', { name: 'oauth-i', url: upstream.url, authType: 'oauth' });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({
      guid: expect.any(String),
      name: 'oauth-i',
      url: upstream.url,
      enabled: true,
      authenticationType: 'oauth',
      authenticationStatus: 'needs-authentication',
      authorizationUrl: expect.any(String),
    });
    const url = new URL(res.body.authorizationUrl);
    expect(url.origin + url.pathname).toBe(`${upstream.issuer}/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toBeTruthy();
    expect(url.searchParams.get('state')!.length).toBeGreaterThanOrEqual(32);
    expect(url.searchParams.get('redirect_uri')).toBe(`${t.config.publicBaseUrl}/oauth/callback`);
    expect(url.searchParams.get('resource')).toBe(upstream.url);
    // The client came from dynamic registration at the upstream's authorization server.
    expect(await upstream.provider.clientsStore.getClient(url.searchParams.get('client_id')!)).toBeDefined();
    // Nothing to validate with before approval: no identity, no job.
    expect((await call(surface, member.token, 'list_identities', { inboundServerGuid: res.body.guid })).body.items).toEqual([]);
    expect((await validated(t, res.body.guid)).validation_due_at).toBeNull();

    const done = await approve(res.body.authorizationUrl);
    expect(done.status).toBe(200);
    expect(done.body).toContain('Authorization complete');
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('authenticated');
    expect((row.features as { tools: { name: string }[] }).tools.map((x) => x.name)).toEqual(['whoami']);
    const identities = (await call(surface, member.token, 'list_identities', { inboundServerGuid: res.body.guid })).body.items;
    expect(identities).toEqual([
      { guid: expect.any(String), name: 'oauth-i Identity', enabled: true, accessControl: 'private', inboundServerGuid: res.body.guid },
    ]);
    // The state was bound to the member who started: the private identity is theirs, invisible to the admin.
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: res.body.guid })).body.items).toEqual([]);
    const set = await issuedTokenSet(identities[0].guid);
    expect(upstream.acceptedTokens).toContain(set.accessToken);
    secrets.push(set.accessToken, set.refreshToken!);
    expect((await call(surface, member.token, 'get_inbound_server', { inboundServerGuid: res.body.guid })).body.authenticationStatus).toBe('authenticated');

    // A state is single-use.
    const replay = await t.app.inject({ method: 'GET', url: done.callbackPath });
    expect(replay.statusCode).toBe(400);
    expect(replay.body).toContain('unknown or was already completed');
  });

  it('add_identity interactively returns the server with an authorizationUrl; the identity exists only after approval', async () => {
    const { body: server } = await call(surface, ws.token, 'create_inbound_server', { name: 'oauth-add', url: upstream.url, authType: 'oauth' });
    await approve(server.authorizationUrl);
    await validated(t, server.guid);
    const res = await call(surface, ws.token, 'add_identity', { inboundServerGuid: server.guid, identityLabel: 'Shared login', accessControl: 'global' });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toMatchObject({
      guid: server.guid,
      authenticationType: 'oauth',
      authenticationStatus: 'authenticated',
      authorizationUrl: expect.any(String),
    });
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toHaveLength(1);
    expect((await approve(res.body.authorizationUrl)).status).toBe(200);
    await validated(t, server.guid);
    const items = (await call(surface, ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items;
    expect(items.map((i: { name: string; accessControl: string }) => [i.name, i.accessControl])).toEqual([
      ['oauth-add Identity', 'private'],
      ['Shared login', 'global'],
    ]);
    const conflict = await call(surface, ws.token, 'add_identity', { inboundServerGuid: server.guid, headers: { Authorization: 'Bearer x' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('conflict');
    expect((await call(surface, other.token, 'add_identity', { inboundServerGuid: server.guid })).status).toBe(404);
  });

  it('headless: the given tokens authenticate with no browser step', async () => {
    const { clientId, tokens } = await upstream.provider.issueDirect(3600);
    secrets.push(tokens.access_token, tokens.refresh_token!);
    const res = await call(surface, ws.token, 'create_inbound_server', {
      ...headlessOAuthInput(upstream, 'oauth-h', clientId, tokens),
      oauthScope: 'mcp:tools',
    });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({
      guid: expect.any(String),
      name: 'oauth-h',
      url: upstream.url,
      enabled: true,
      authenticationType: 'oauth',
      authenticationStatus: 'needs-authentication',
    });
    expect((await validated(t, res.body.guid)).authentication_status).toBe('authenticated');
    expect(upstream.acceptedTokens).toContain(tokens.access_token);

    // add_identity headless on an OAuth server returns the server.
    const more = await upstream.provider.issueDirect(3600);
    secrets.push(more.tokens.access_token, more.tokens.refresh_token!);
    const added = await call(surface, ws.token, 'add_identity', {
      inboundServerGuid: res.body.guid,
      oauthAccessToken: more.tokens.access_token,
      oauthTokenEndpoint: upstream.tokenEndpoint,
      oauthClientId: more.clientId,
    });
    expect(added.body).toMatchObject({ guid: res.body.guid, authenticationType: 'oauth' });
    expect(added.body.authorizationUrl).toBeUndefined();
    await validated(t, res.body.guid);
    expect(upstream.acceptedTokens).toContain(more.tokens.access_token);
  });

  it('headless: an expired access token is refreshed before validation', async () => {
    const { clientId, tokens } = await upstream.provider.issueDirect(-60);
    secrets.push(tokens.access_token, tokens.refresh_token!);
    const refreshesBefore = upstream.provider.refreshCount;
    const res = await call(surface, ws.token, 'create_inbound_server', {
      name: 'oauth-expired',
      url: upstream.url,
      authType: 'oauth',
      oauthAccessToken: tokens.access_token,
      oauthRefreshToken: tokens.refresh_token,
      oauthExpiresAt: Date.now() - 60_000,
      oauthTokenEndpoint: upstream.tokenEndpoint,
      oauthClientId: clientId,
    });
    expect((await validated(t, res.body.guid)).authentication_status).toBe('authenticated');
    expect(upstream.provider.refreshCount).toBe(refreshesBefore + 1);
    expect(upstream.acceptedTokens).not.toContain(tokens.access_token);
    const [identity] = (await call(surface, ws.token, 'list_identities', { inboundServerGuid: res.body.guid })).body.items;
    const set = await issuedTokenSet(identity.guid);
    secrets.push(set.accessToken, set.refreshToken!);
    expect(set.accessToken).not.toBe(tokens.access_token);
    expect(set.expiresAt).toBeGreaterThan(Date.now());
    expect(upstream.acceptedTokens).toContain(set.accessToken);
    const row = await t.runtime.services.db.selectFrom('identities').select('oauth_expires_at').where('guid', '=', identity.guid).executeTakeFirstOrThrow();
    expect(row.oauth_expires_at!.getTime()).toBe(set.expiresAt);
  });

  it('headless: a failed refresh marks the server unsupported and raises oauth_refresh_failed, without the tokens', async () => {
    const { clientId, tokens } = await upstream.provider.issueDirect(-60);
    const badRefresh = `rt-bogus-${Date.now()}`;
    secrets.push(tokens.access_token, badRefresh);
    const res = await call(surface, ws.token, 'create_inbound_server', {
      name: 'oauth-bad-refresh',
      url: upstream.url,
      authType: 'oauth',
      oauthAccessToken: tokens.access_token,
      oauthRefreshToken: badRefresh,
      oauthExpiresAt: Date.now() - 60_000,
      oauthTokenEndpoint: upstream.tokenEndpoint,
      oauthClientId: clientId,
    });
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('unsupported');
    expect(row.status_reason).toMatch(/refresh/);
    // The authorization server's own error, not "[object Response]" (a Response of another class was not read).
    expect(row.status_reason).toMatch(/unknown refresh token/);
    expect(row.status_reason).not.toContain('[object Response]');
    const codes = alerts.filter((a) => a.relatedResourceIds?.includes(res.body.guid)).map((a) => a.code);
    expect(codes).toEqual(['oauth_refresh_failed', 'server_validation_failed']);
    // Callers that keep asking (every gateway call) get the same refusal for a while: the endpoint is not asked, nor an alert raised, again.
    const services = t.runtime.services;
    const identity = await services.db.selectFrom('identities').selectAll().where('inbound_server_guid', '=', res.body.guid).executeTakeFirstOrThrow();
    const asked = upstream.tokenRequests.length;
    for (let i = 0; i < 3; i++) await expect(freshTokenSet(services, identity)).rejects.toThrow(/unknown refresh token/);
    expect(upstream.tokenRequests.length).toBe(asked);
    expect(alerts.filter((a) => a.relatedResourceIds?.includes(res.body.guid) && a.code === 'oauth_refresh_failed')).toHaveLength(1);
  });

  it('refuses what cannot work, naming the field', async () => {
    const notOAuth = await call(surface, ws.token, 'create_inbound_server', { name: 'x', url: plain.url, authType: 'oauth' });
    expect(notOAuth.status).toBe(400);
    expect(notOAuth.body.errors[0].path).toBe('url');
    const before = (await t.runtime.services.db.selectFrom('inbound_servers').select('guid').where('organization_guid', '=', ws.organizationGuid).execute())
      .length;
    expect(before).toBeGreaterThan(0);
    const metadata = await call(surface, ws.token, 'create_inbound_server', { name: 'x', url: 'http://169.254.169.254/mcp', authType: 'oauth' });
    expect(metadata.status).toBe(400);
    expect(metadata.body.errors[0].path).toBe('url');
    // Nothing half-created.
    expect(
      (await t.runtime.services.db.selectFrom('inbound_servers').select('guid').where('organization_guid', '=', ws.organizationGuid).execute()).length,
    ).toBe(before);
  });
});

describe('the callback and the refresh function', () => {
  it('answers an unknown or missing state with a 400 page, not a 500', async () => {
    for (const url of ['/oauth/callback', '/oauth/callback?state=nope&code=x', '/oauth/callback?error=access_denied&state=zzz']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/text\/html/);
    }
  });

  it('a refusal at the authorization server creates no identity', async () => {
    const { body: server } = await call('rest', ws.token, 'create_inbound_server', { name: 'denied', url: upstream.url, authType: 'oauth' });
    const state = new URL(server.authorizationUrl).searchParams.get('state')!;
    const res = await t.app.inject({ method: 'GET', url: `/oauth/callback?error=access_denied&state=${encodeURIComponent(state)}` });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('did not grant access');
    // The page loads, runs and frames nothing, and tells no one where it came from (its URL carried the state).
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect((await call('rest', ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toEqual([]);
    expect((await validated(t, server.guid)).authentication_status).toBe('needs-authentication');
  });

  it('an authorization its user can no longer complete: deactivated meanwhile, nothing is stored and the code is never redeemed', async () => {
    const member = await newMember(t, ws, ['basicServerManagement', 'viewAllServers', 'accessAllIdentities', 'identityManagement']);
    const { body: server } = await call('rest', member.token, 'create_inbound_server', {
      name: 'left-meanwhile',
      url: upstream.url,
      authType: 'oauth',
      accessControl: 'global',
    });
    expect((await call('rest', ws.token, 'deactivate_user', { userGuid: member.userGuid })).status).toBe(200);
    const tokenRequests = upstream.tokenRequests.length;
    const res = await approve(server.authorizationUrl);
    expect(res.status).toBe(400);
    expect(res.body).toContain('no longer active');
    expect(upstream.tokenRequests).toHaveLength(tokenRequests);
    expect((await call('rest', ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toEqual([]);
    expect((await validated(t, server.guid)).authentication_status).toBe('needs-authentication');
  });

  it('freshTokenSet refreshes ahead of expiry and shares one refresh between concurrent callers', async () => {
    const { identity, tokens } = await headlessOAuthIdentity(t, ws, upstream, 'refresh-fn');
    secrets.push(tokens.access_token, tokens.refresh_token!);
    const services = t.runtime.services;
    const before = upstream.provider.refreshCount;
    // Far from expiry: nothing to do.
    expect((await freshTokenSet(services, identity)).accessToken).toBe(tokens.access_token);
    expect(upstream.provider.refreshCount).toBe(before);
    // Within the margin: one refresh, however many callers ask at once.
    await expireSoon(t, identity);
    const [a, b] = await Promise.all([freshTokenSet(services, identity), freshTokenSet(services, identity)]);
    secrets.push(a.accessToken, a.refreshToken!);
    expect(upstream.provider.refreshCount).toBe(before + 1);
    expect(a.accessToken).toBe(b.accessToken);
    expect(a.accessToken).not.toBe(tokens.access_token);
    expect((await issuedTokenSet(identity.guid)).accessToken).toBe(a.accessToken);
  });

  it('a refresh refused because the token set was refreshed meanwhile elsewhere uses the stored set, without an alert', async () => {
    const { identity, clientId, tokens } = await headlessOAuthIdentity(t, ws, upstream, 'refreshed-elsewhere');
    secrets.push(tokens.access_token, tokens.refresh_token!);
    const services = t.runtime.services;
    const set = await expireSoon(t, identity);
    // Another process outside the store lock (an older version's, during an upgrade) redeems the refresh token first and stores its tokens.
    let elsewhere: OAuthTokenSet | undefined;
    upstream.beforeTokenAnswer = async (fields) => {
      upstream.beforeTokenAnswer = undefined;
      const client = (await upstream.provider.clientsStore.getClient(clientId))!;
      const minted = await upstream.provider.exchangeRefreshToken(client, fields.refresh_token!);
      secrets.push(minted.access_token, minted.refresh_token!);
      elsewhere = { ...set, accessToken: minted.access_token, refreshToken: minted.refresh_token, expiresAt: Date.now() + 3_600_000 };
      await services.secrets.replace(services.db, identity.organization_guid, identity.secret_guid!, elsewhere);
    };
    const alertCount = alerts.length;
    const requests = upstream.tokenRequests.length;
    try {
      expect((await freshTokenSet(services, identity)).accessToken).toBe(elsewhere?.accessToken);
    } finally {
      upstream.beforeTokenAnswer = undefined;
    }
    // The request went out with the refresh token just redeemed elsewhere, and was refused.
    expect(upstream.tokenRequests.slice(requests).map((r) => r.refresh_token)).toEqual([set.refreshToken]);
    expect(alerts.slice(alertCount)).toEqual([]);
    expect((await issuedTokenSet(identity.guid)).accessToken).toBe(elsewhere!.accessToken);
  });

  it('a gateway whose server cannot refresh its token says so to the host, not that the server could not be reached', async () => {
    const { clientId, tokens } = await upstream.provider.issueDirect(-60);
    const badRefresh = `rt-bogus-gw-${Date.now()}`;
    secrets.push(tokens.access_token, badRefresh);
    const created = await invoke(t, 'rest', ws.token, 'create_inbound_server', {
      name: 'oauth-gw-refresh',
      url: upstream.url,
      authType: 'oauth',
      oauthAccessToken: tokens.access_token,
      oauthRefreshToken: badRefresh,
      oauthExpiresAt: Date.now() - 60_000,
      oauthTokenEndpoint: upstream.tokenEndpoint,
      oauthClientId: clientId,
    });
    await validated(t, created.body.guid);
    const host = await hostThroughGateway(created.body.guid, 'Refreshing');
    try {
      const listed = await host.listTools().then(
        () => expect.unreachable('a list with no server that could be listed'),
        (err: Error) => err.message,
      );
      expect(listed).toMatch(/oauth-gw-refresh: .*could not be refreshed: unknown refresh token/);
      expect(listed).not.toContain('could not reach');
    } finally {
      await host.close();
    }
  });

  it('refreshes a token the upstream refuses though its expiry was not known: at validation, and for the gateway after a revocation', async () => {
    // Dead already, and nobody said when it would be: validation is refused once, refreshes, and asks again.
    const { clientId, tokens } = await upstream.provider.issueDirect(-60);
    secrets.push(tokens.access_token, tokens.refresh_token!);
    const before = upstream.provider.refreshCount;
    const created = await invoke(t, 'rest', ws.token, 'create_inbound_server', {
      name: 'oauth-no-expiry',
      url: upstream.url,
      authType: 'oauth',
      oauthAccessToken: tokens.access_token,
      oauthRefreshToken: tokens.refresh_token,
      oauthTokenEndpoint: upstream.tokenEndpoint,
      oauthClientId: clientId,
    });
    const row = await validated(t, created.body.guid);
    expect(row.authentication_status, row.status_reason ?? '').toBe('authenticated');
    expect(upstream.provider.refreshCount).toBe(before + 1);

    // Through a gateway: the authorization server ends every token early; the refused call makes the next one refresh.
    const host = await hostThroughGateway(created.body.guid, 'Revoked');
    try {
      const tool = (await host.listTools()).tools[0]!.name;
      upstream.provider.revokeAccessTokens();
      await expect(host.callTool({ name: tool, arguments: {} })).rejects.toThrow(/refused the gateway's credentials \(HTTP 401\)/);
      const refreshed = upstream.provider.refreshCount;
      expect((await host.callTool({ name: tool, arguments: {} })).isError).toBeFalsy();
      expect(upstream.provider.refreshCount).toBe(refreshed + 1);
    } finally {
      await host.close();
    }
  });

  it('never logged, answered or alerted a token', () => {
    expect(secrets.length).toBeGreaterThan(10);
    assertNeverLeaked(t, secrets, [...responses, ...alerts]);
  });
});
