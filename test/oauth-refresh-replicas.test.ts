import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { NewAlert } from '../src/core/alerts.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { ADMIN_PREFIX } from '../src/http/openapi.js';
import { newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, sharedIdentityGateway } from './helpers/gateway.js';
import { expireSoon, headlessOAuthIdentity, storedTokenSet, type HeadlessOAuthIdentity } from './helpers/oauth-identities.js';
import { freePort } from './helpers/ports.js';
import { captureAlerts } from './helpers/servers.js';
import { scratchDataDir, startService, stopService } from './helpers/service-process.js';
import { startOAuthServer, type OAuthUpstream } from './helpers/upstreams.js';

/** Long enough that both replicas ask for a refresh before the first is answered, if nothing keeps the second from asking. */
const SLOW_TOKEN_ANSWER_MS = 1_500;
/** Every gateway call reads the identity's token set (none is kept from the hosts' connecting), as once a cached one has expired. */
const NO_CREDENTIAL_CACHE = { GATEWAY_CACHE_TTL_MS: '0' };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Two service processes on one Postgres server, one gateway serving a shared OAuth
 * identity whose access token is about to expire, and an authorization server that
 * rotates refresh tokens (a refresh token works once) and answers slowly. Hosts on both
 * replicas call at once: exactly one refresh reaches the token endpoint, both replicas
 * use its tokens, and no call fails or raises `oauth_refresh_failed`. The first replica
 * is this test process's app, the second a real service process (its own memory: the
 * in-process guard that shares one refresh between callers cannot reach it).
 */
describe.skipIf(storeKind() !== 'postgres')('an OAuth refresh shared by the service processes of one Postgres server', () => {
  let t: TestApp;
  let ws: CreatedWorkspace;
  let upstream: OAuthUpstream;
  let alerts: NewAlert[];
  let secondBase: string;
  let identity: HeadlessOAuthIdentity['identity'];
  let gateway: { token: string; path: string };
  const hosts: Client[] = [];
  const children: ChildProcess[] = [];
  const dataDir = scratchDataDir('mcpgw-refresh-replicas-');

  beforeAll(async () => {
    [t, upstream] = await Promise.all([startTestApp(NO_CREDENTIAL_CACHE, { ownDatabase: true }), startOAuthServer()]);
    ws = await newWorkspace(t);
    alerts = captureAlerts(t);
    const oauth = await headlessOAuthIdentity(t, ws, upstream, 'rotating');
    identity = oauth.identity;
    gateway = await sharedIdentityGateway(t, ws, 'Replicas', oauth.serverGuid, identity.guid);
    // The second replica: same database and key, its own process and memory.
    const port = await freePort();
    secondBase = `http://127.0.0.1:${port}`;
    await startService(dataDir(), port, children, {
      DATABASE_URL: t.config.databaseUrl!,
      SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      EGRESS_ALLOWED_CIDRS: '127.0.0.0/8',
      ...NO_CREDENTIAL_CACHE,
    });
  }, 180_000);

  afterAll(async () => {
    for (const host of hosts) await host.close().catch(() => undefined);
    for (const child of children) await stopService(child);
    await t?.close();
    await upstream?.close();
  });

  it('refreshes once across replicas; both use the new tokens, no call fails and nothing is alerted', async () => {
    const bases = [await listenLoopback(t), secondBase];
    hosts.push(...(await Promise.all(bases.map((base) => gatewayClient(base + gateway.path, gateway.token)))));
    const tool = (await hosts[0]!.listTools()).tools[0]!.name;

    // Within the refresh margin, and the authorization server slow to answer: both replicas' calls would ask.
    const before = await expireSoon(t, identity);
    upstream.beforeTokenAnswer = () => sleep(SLOW_TOKEN_ANSWER_MS);
    const refreshesAsked = () => upstream.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;
    const asked = refreshesAsked();
    const called = await Promise.allSettled(hosts.map((host) => host.callTool({ name: tool, arguments: {} })));

    const failures = called.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
    expect(failures).toEqual([]);
    expect(called.map((r) => r.status === 'fulfilled' && (r.value.isError ? JSON.stringify(r.value.content) : 'ok'))).toEqual(['ok', 'ok']);
    expect(refreshesAsked() - asked).toBe(1);
    const after = await storedTokenSet(t, identity);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    // Both replicas called with the one new access token.
    expect(upstream.acceptedTokens.slice(-2)).toEqual([after.accessToken, after.accessToken]);
    expect(alerts.filter((a) => a.code === 'oauth_refresh_failed')).toEqual([]);
    const secondAlerts = await fetch(`${secondBase}${ADMIN_PREFIX}/alerts/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ filters: { code: 'oauth_refresh_failed' } }),
    });
    expect(secondAlerts.status).toBe(200);
    expect(((await secondAlerts.json()) as { items: unknown[] }).items).toEqual([]);
  });
});
