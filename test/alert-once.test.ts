import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { freshTokenSet, OAuthRefreshError, REFUSED_REFRESH_BACKOFF_MS } from '../src/core/servers/oauth-refresh.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { until } from './helpers/forwarder-kit.js';
import { gatewayForIdentity, listenLoopback, postToolCall, registerServer, startReplica } from './helpers/gateway.js';
import { startScriptedPeer, type ScriptedPeer } from './helpers/scripted-peer.js';
import { validated } from './helpers/servers.js';

/**
 * A cause that every replica sees (an upstream refusing the gateway's key, a server
 * failing every call, a token endpoint refusing a refresh) is alerted once by the
 * service, not once per replica or once per retry: two replicas over one database
 * serve the calls, and each has to ask the shared alert gate before raising.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
const peers: ScriptedPeer[] = [];
const apps: FastifyInstance[] = [];

async function peer(): Promise<ScriptedPeer> {
  const p = await startScriptedPeer();
  peers.push(p);
  return p;
}

const alertsOf = async (code: string, resourceGuid: string) =>
  (await invoke(t, 'rest', ws.token, 'list_alerts', { filters: { code, relatedResourceGuid: resourceGuid } })).body.items as unknown[];

/**
 * The `code` alerts about `resourceGuid` once the second raiser is done: the gate turned
 * it away (it logs that) or it raised a second alert (what a replica did without the gate).
 */
async function settledAlerts(code: string, resourceGuid: string, key: string): Promise<unknown[]> {
  let items: unknown[] = [];
  await until(`the second ${code}`, async () => {
    items = await alertsOf(code, resourceGuid);
    return items.length > 1 || t.log.lines.some((l) => l.includes(key) && l.includes('not raised again'));
  });
  return alertsOf(code, resourceGuid);
}

beforeAll(async () => {
  t = await startTestApp();
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
});

afterAll(async () => {
  vi.useRealTimers();
  await closeClients();
  for (const app of apps) await app.close();
  await t?.close();
  await Promise.all(peers.map((p) => p.close()));
});

describe('an alert is raised once, whichever replica sees its cause', () => {
  it('upstream_auth_failed and upstream_call_failed: one each though both replicas saw the failures', async () => {
    const upstream = await peer();
    const server = await registerServer(t, ws, { name: 'shared', url: upstream.url, authType: 'headers', headers: { 'X-Api-Key': 'key-0a1b2c3d' } });
    const gw = await gatewayForIdentity(t, ws, server, 'two-replicas');
    const replica = await startReplica(t.runtime.services);
    apps.push(replica.app);
    const call = (at: string) => postToolCall(at, gw, 'shared__whoami');

    upstream.answer = { status: 401, headers: {}, body: 'unknown key' };
    await call(base);
    await until('the auth alert', async () => (await alertsOf('upstream_auth_failed', server.serverGuid)).length > 0);
    await call(replica.base);
    expect(await settledAlerts('upstream_auth_failed', server.serverGuid, `upstream_auth_failed ${server.identityGuid}`)).toHaveLength(1);

    upstream.answer = { status: 500, headers: {}, body: 'broken' };
    for (let i = 0; i < 12; i++) await call(i % 2 ? base : replica.base);
    expect(await settledAlerts('upstream_call_failed', server.serverGuid, `upstream_call_failed ${server.serverGuid}`)).toHaveLength(1);
  });

  it('oauth_refresh_failed: a refresh token refused again after the backoff is not alerted again', async () => {
    const authorizationServer = await peer();
    let tokenRequests = 0;
    authorizationServer.answer = () => {
      tokenRequests++;
      return { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'invalid_grant' }) };
    };
    const created = await invoke(t, 'rest', ws.token, 'create_inbound_server', {
      name: 'refresh-refused',
      url: authorizationServer.url,
      authType: 'oauth',
      oauthAccessToken: 'at-7f3e9a',
      oauthRefreshToken: 'rt-5c1d2b',
      oauthExpiresAt: Date.now() - 60_000,
      oauthTokenEndpoint: authorizationServer.tokenEndpoint,
      oauthClientId: 'once-client',
    });
    expect(created.status).toBe(201);
    await validated(t, created.body.guid);
    expect(await alertsOf('oauth_refresh_failed', created.body.guid)).toHaveLength(1);
    const identity = await t.runtime.services.db
      .selectFrom('identities')
      .selectAll()
      .where('inbound_server_guid', '=', created.body.guid)
      .executeTakeFirstOrThrow();

    // Past the backoff (only this process's clock moves), the gateway asks the token endpoint again and is refused again.
    const asked = tokenRequests;
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + REFUSED_REFRESH_BACKOFF_MS + 1000 });
    try {
      await expect(freshTokenSet(t.runtime.services, identity)).rejects.toBeInstanceOf(OAuthRefreshError);
    } finally {
      vi.useRealTimers();
    }
    expect(tokenRequests).toBe(asked + 1);
    expect(await settledAlerts('oauth_refresh_failed', created.body.guid, `oauth_refresh_failed ${identity.guid}`)).toHaveLength(1);
  });
});
