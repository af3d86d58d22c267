import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pkg from '../package.json' with { type: 'json' };
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { until } from './helpers/forwarder-kit.js';
import { gatewayForIdentity, listenLoopback, postToolCall, registerServer } from './helpers/gateway.js';
import { startScriptedPeer, type ScriptedPeer } from './helpers/scripted-peer.js';
import { validated } from './helpers/servers.js';

/**
 * Every alert raised from a peer's answer carries that answer in its debugContext
 * (contract: "response status, headers, body and engine details"): a distinctive
 * header shown, credential headers and the secrets a careless peer echoes masked,
 * and the engine's name, version and what it used, read through get_alert over REST.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
const peers: ScriptedPeer[] = [];
/** Every answer the tests read, checked for the secrets at the end. */
const seen: unknown[] = [];
const secrets: string[] = [];
const secret = (label: string) => {
  const value = `${label}-${Math.random().toString(36).slice(2, 14)}`;
  secrets.push(value);
  return value;
};

const engine = (extra: Record<string, unknown>) => ({ name: pkg.name, version: pkg.version, node: process.version, ...extra });

async function peer(): Promise<ScriptedPeer> {
  const p = await startScriptedPeer();
  peers.push(p);
  return p;
}

/** The full record of the one alert of `code` about `resourceGuid`, once it is stored. */
async function alertAbout(code: string, resourceGuid: string): Promise<{ debugContext: Record<string, any> }> {
  let guid: string | undefined;
  await until(`a ${code} alert`, async () => {
    const listed = await invoke(t, 'rest', ws.token, 'list_alerts', { filters: { code, relatedResourceGuid: resourceGuid } });
    guid = listed.body.items[0]?.guid;
    return guid !== undefined;
  });
  const res = await invoke(t, 'rest', ws.token, 'get_alert', { alertGuid: guid });
  expect(res.status).toBe(200);
  seen.push(res.body);
  return res.body;
}

beforeAll(async () => {
  t = await startTestApp();
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
});

afterAll(async () => {
  assertNeverLeaked(t, secrets, seen);
  await closeClients();
  await t?.close();
  await Promise.all(peers.map((p) => p.close()));
});

describe('debugContext of alerts raised from a peer', () => {
  it('upstream_auth_failed and upstream_call_failed carry the upstream answer and the route transport and revision', async () => {
    const upstream = await peer();
    const key = secret('upstream-key');
    const server = await registerServer(t, ws, { name: 'scripted', url: upstream.url, authType: 'headers', headers: { 'X-Api-Key': key } });
    const gw = await gatewayForIdentity(t, ws, server, 'debug-context');
    const call = async () => void seen.push(await postToolCall(base, gw, 'scripted__whoami'));

    upstream.answer = {
      status: 401,
      headers: { 'x-peer-trace': 'refused-401', 'x-api-key': key, 'set-cookie': `sid=${key}`, 'www-authenticate': 'Bearer realm="scripted"' },
      body: JSON.stringify({ error: `key ${key} is not valid here` }),
    };
    await call();
    const auth = (await alertAbout('upstream_auth_failed', server.serverGuid)).debugContext;
    expect(auth).toMatchObject({
      responseStatus: 401,
      // The challenge's parameters go too: the store masks whatever follows "Bearer" in any text.
      responseHeaders: {
        'x-peer-trace': 'refused-401',
        'x-api-key': '[REDACTED]',
        'set-cookie': '[REDACTED]',
        'www-authenticate': expect.stringMatching(/^Bearer /),
      },
      responseBody: expect.stringContaining('[REDACTED] is not valid here'),
      engine: engine({ transport: 'streamable-http', protocolVersion: expect.any(String) }),
      method: expect.any(String),
      reason: expect.stringMatching(/HTTP 401/),
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
    });

    upstream.answer = {
      status: 500,
      headers: { 'x-peer-trace': 'broken-500', 'x-debug-echo': `sent ${key}` },
      body: `internal error while using ${key}`,
    };
    for (let i = 0; i < 6; i++) await call();
    const calls = (await alertAbout('upstream_call_failed', server.serverGuid)).debugContext;
    expect(calls).toMatchObject({
      responseStatus: 500,
      responseHeaders: { 'x-peer-trace': 'broken-500', 'x-debug-echo': 'sent [REDACTED]' },
      responseBody: 'internal error while using [REDACTED]',
      engine: engine({ transport: 'streamable-http' }),
      failures: expect.any(Number),
      calls: expect.any(Number),
    });
  });

  it('server_validation_failed carries the refusal of the probe and the transport it tried', async () => {
    const upstream = await peer();
    const key = secret('validation-key');
    upstream.answer = {
      status: 401,
      headers: { 'content-type': 'application/json', 'x-peer-trace': 'validation-401', 'x-api-key': key },
      body: JSON.stringify({ error: `unknown key ${key}` }),
    };
    const created = await invoke(t, 'rest', ws.token, 'create_inbound_server', {
      name: 'refuses-validation',
      url: upstream.url,
      authType: 'headers',
      headers: { 'X-Api-Key': key },
    });
    expect((await validated(t, created.body.guid)).authentication_status).toBe('unsupported');
    const { debugContext } = await alertAbout('server_validation_failed', created.body.guid);
    expect(debugContext).toMatchObject({
      authenticationType: 'headers',
      statusAfter: 'unsupported',
      responseStatus: 401,
      responseHeaders: { 'x-peer-trace': 'validation-401', 'x-api-key': '[REDACTED]' },
      responseBody: expect.stringContaining('unknown key [REDACTED]'),
      engine: engine({ transport: 'streamable-http' }),
    });
  });

  it('oauth_refresh_failed carries the token endpoint answer, with the refresh token and client secret masked', async () => {
    const authorizationServer = await peer();
    const [accessToken, refreshToken, clientSecret] = [secret('at'), secret('rt'), secret('cs')];
    authorizationServer.answer = {
      status: 400,
      headers: { 'content-type': 'application/json', 'x-peer-trace': 'token-400', 'x-client-echo': clientSecret },
      body: JSON.stringify({ error: 'invalid_grant', error_description: `refresh token ${refreshToken} is unknown` }),
    };
    const created = await invoke(t, 'rest', ws.token, 'create_inbound_server', {
      name: 'refresh-refused',
      url: authorizationServer.url,
      authType: 'oauth',
      oauthAccessToken: accessToken,
      oauthRefreshToken: refreshToken,
      oauthExpiresAt: Date.now() - 60_000,
      oauthTokenEndpoint: authorizationServer.tokenEndpoint,
      oauthClientId: 'debug-client',
      oauthClientSecret: clientSecret,
    });
    expect(created.status).toBe(201);
    await validated(t, created.body.guid);
    const { debugContext } = await alertAbout('oauth_refresh_failed', created.body.guid);
    expect(debugContext).toMatchObject({
      tokenEndpoint: authorizationServer.tokenEndpoint,
      responseStatus: 400,
      responseHeaders: { 'x-peer-trace': 'token-400', 'x-client-echo': '[REDACTED]' },
      responseBody: expect.stringContaining('refresh token [REDACTED] is unknown'),
      engine: engine({ tokenEndpoint: authorizationServer.tokenEndpoint }),
    });
    // The validation that needed the refresh never reached the upstream: no answer, no transport.
    const validation = await alertAbout('server_validation_failed', created.body.guid);
    expect(validation.debugContext).toMatchObject({ responseStatus: null, responseHeaders: {}, responseBody: '', engine: engine({ transport: null }) });
  });
});
