import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { CreateMessageRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { NewAlert } from '../src/core/alerts.js';
import type { Services } from '../src/core/services.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { alternatingFetch, gatewayClient, listenLoopback, registerServer, startReplica } from './helpers/gateway.js';
import { insertServer } from './helpers/fixtures.js';
import { captureAlerts } from './helpers/servers.js';
import { until } from './helpers/forwarder-kit.js';
import { startEverything, startHeaderServer, startSilentServer, type HeaderUpstream, type Upstream } from './helpers/upstreams.js';

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let headerServer: HeaderUpstream;
let silent: Upstream;
let alerts: NewAlert[];
const SECRET = 'relay-secret-0b7a61c3';
const extraApps: FastifyInstance[] = [];
const clients: Client[] = [];

/** A gateway with the given servers assigned (open unless an identity is given), and a token for it. */
async function gatewayWith(
  assignments: { serverGuid: string; identityGuid?: string | null }[],
): Promise<{ gatewayGuid: string; token: string; path: string; connectionGuid: string }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `gw-${Math.random().toString(36).slice(2, 8)}` });
  for (const a of assignments) {
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid: gw.body.guid,
      inboundServerGuid: a.serverGuid,
      ...(a.identityGuid ? { identityScheme: 'sharedIdentity', sharedIdentityGuid: a.identityGuid } : {}),
    });
  }
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  return { gatewayGuid: gw.body.guid, token: issued.body.token, connectionGuid: issued.body.connectionGuid, path: `/gateways/${gw.body.guid}/mcp` };
}

/** Another replica over `services`, closed after the file. */
async function replica(services: Services): Promise<string> {
  const { app, base } = await startReplica(services);
  extraApps.push(app);
  return base;
}

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;
const connect = async (url: string, token: string, opts: Parameters<typeof gatewayClient>[2] = {}) => {
  const c = await gatewayClient(url, token, opts);
  clients.push(c);
  return c;
};

let everythingGuid: string;

beforeAll(async () => {
  [t, everything, headerServer, silent] = await Promise.all([
    startTestApp({ GATEWAY_UPSTREAM_TIMEOUT_MS: '1500' }),
    startEverything('streamableHttp'),
    startHeaderServer('X-Api-Key', SECRET),
    startSilentServer(),
  ]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  everythingGuid = (await registerServer(t, ws, { name: 'everything', url: everything.url, authType: 'none' })).serverGuid;
  alerts = captureAlerts(t);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  for (const app of extraApps) await app.close();
  await t?.close();
  await Promise.all([everything, headerServer, silent].map((u) => u?.close()));
});

describe('transparency', () => {
  it('relays progress notifications and a sampling request from the upstream to the host and back', async () => {
    const gw = await gatewayWith([{ serverGuid: everythingGuid }]);
    const client = await connect(base + gw.path, gw.token, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
      model: 'test-model',
      role: 'assistant',
      content: { type: 'text', text: `sampled: ${JSON.stringify(req.params.messages[0]!.content).length > 0}` },
    }));
    const { tools } = await client.listTools();
    // The upstream offers its sampling tool only because the host's capabilities reached it.
    expect(tools.map((x) => x.name)).toContain('everything__trigger-sampling-request');
    const sampled = await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 10 } });
    expect(text(sampled)).toContain('test-model');
    const progress: number[] = [];
    const long = await client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(text(long)).toMatch(/completed/i);
    expect(progress).toEqual([1, 2, 3]);
  });

  it('answers with plain JSON when the upstream stream holds only the answer, and streams when it holds more or the host takes only a stream', async () => {
    const gw = await gatewayWith([{ serverGuid: everythingGuid }]);
    // server-everything answers every request with an event stream.
    const seen: { method: string; contentType: string }[] = [];
    let acceptOnlyStreams = false;
    const recording: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      if (acceptOnlyStreams) headers.set('accept', 'text/event-stream');
      const res = await fetch(input, { ...init, headers });
      const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
      if (init?.method === 'POST' && body.method) seen.push({ method: body.method, contentType: res.headers.get('content-type') ?? '' });
      return res;
    };
    const client = await connect(base + gw.path, gw.token, { fetch: recording });
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'json' } }))).toBe('Echo: json');
    const progress: number[] = [];
    await client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(progress).toEqual([1, 2]);
    acceptOnlyStreams = true;
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'stream' } }))).toBe('Echo: stream');
    const calls = seen.filter((s) => s.method === 'tools/call').map((s) => s.contentType.split(';')[0]);
    expect(calls).toEqual(['application/json', 'text/event-stream', 'text/event-stream']);
    // Each call is logged once, whichever way it was answered.
    await t.runtime.services.callLogs.flush();
    const logged = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: gw.connectionGuid, type: 'tool_call' } });
    expect(logged.body.items).toHaveLength(3);
  });

  it('serves one session from two replicas whose requests alternate, including a sampling answer that lands on the other replica', async () => {
    const gw = await gatewayWith([{ serverGuid: everythingGuid }]);
    const second = await replica(t.runtime.services);
    const bases = [base, second];
    const seen: string[] = [];
    const client = await connect(base + gw.path, gw.token, { fetch: alternatingFetch(bases, seen), capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'replica-model', role: 'assistant', content: { type: 'text', text: 'ok' } }));
    for (let i = 0; i < 4; i++) expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: `m${i}` } }))).toBe(`Echo: m${i}`);
    expect(text(await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'x' } }))).toContain('replica-model');
    expect(new Set(seen)).toEqual(new Set(bases));
  });
});

describe('limits and alerts', () => {
  it('answers 429 with Retry-After and a clear MCP error past the per-connection rate limit', async () => {
    const gw = await gatewayWith([{ serverGuid: everythingGuid }]);
    const limited = await replica({ ...t.runtime.services, config: { ...t.config, gateway: { ...t.config.gateway, rateLimitPerConnectionPerMinute: 4 } } });
    const client = await connect(limited + gw.path, gw.token);
    let err: unknown;
    for (let i = 0; i < 6 && !err; i++)
      err = await client.callTool({ name: 'everything__echo', arguments: { message: 'x' } }).then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(String(err)).toMatch(/429|Rate limit exceeded: at most 4 requests a minute per connection/);
    const raw = await fetch(limited + gw.path, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(raw.status).toBe(429);
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await raw.json()) as { error: { data: { code: string } } }).error.data.code).toBe('rate_limited');
  });

  it('refuses an oversize request (413) and cuts an oversize upstream answer with a clear error', async () => {
    const gw = await gatewayWith([{ serverGuid: everythingGuid }]);
    const small = await replica({ ...t.runtime.services, config: { ...t.config, gateway: { ...t.config.gateway, maxResponseBytes: 4096 } } });
    const client = await connect(small + gw.path, gw.token);
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'short' } }))).toBe('Echo: short');
    const err = await client.callTool({ name: 'everything__echo', arguments: { message: 'y'.repeat(10_000) } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).message).toMatch(/exceeded the limit of 4096 bytes/);
    const huge = await fetch(base + gw.path, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'z'.repeat(2 * 1024 * 1024) } }),
    });
    expect(huge.status).toBe(413);
  });

  it('an upstream that hangs is cut off at the timeout; one that keeps failing raises one upstream_call_failed alert', async () => {
    const hanging = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    await t.runtime.services.db.updateTable('inbound_servers').set({ url: silent.url, name: 'hangs' }).where('guid', '=', hanging).execute();
    const down = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    await t.runtime.services.db.updateTable('inbound_servers').set({ name: 'down' }).where('guid', '=', down).execute();
    const gw = await gatewayWith([{ serverGuid: hanging }, { serverGuid: down }]);
    const post = (name: string) =>
      fetch(base + gw.path, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: {} } }),
      });
    const hung = (await (await post('hangs__anything')).json()) as { error: { message: string } };
    expect(hung.error.message).toMatch(/Server hangs failed: no answer within 1500 ms/);
    const before = alerts.filter((a) => a.code === 'upstream_call_failed').length;
    for (let i = 0; i < 7; i++) {
      const answer = (await (await post('down__anything')).json()) as { error: { message: string } };
      expect(answer.error.message).toMatch(/Server down failed: could not reach 127.0.0.1:1/);
    }
    // Raised after the shared alert gate answers, so a moment after the failing call's answer.
    await until('the upstream_call_failed alert', () => alerts.filter((a) => a.code === 'upstream_call_failed').length > before);
    const raised = alerts.filter((a) => a.code === 'upstream_call_failed').slice(before);
    expect(raised).toHaveLength(1);
    expect(raised[0]!.relatedResourceIds).toEqual(expect.arrayContaining([down, gw.gatewayGuid, gw.connectionGuid]));
    await t.runtime.services.callLogs.flush();
    const detail = await invoke(t, 'rest', ws.token, 'get_connection', { connectionGuid: gw.connectionGuid });
    expect(detail.body.recentErrors.length).toBeGreaterThan(0);
    expect(detail.body.recentErrors[0]).toMatchObject({ inboundServerGuid: down, toolName: 'anything' });
  });

  it('a 401 from the upstream raises upstream_auth_failed with related ids and nothing secret', async () => {
    const server = await registerServer(t, ws, { name: 'guarded', url: headerServer.url, authType: 'headers', headers: { 'X-Api-Key': SECRET } });
    const gw = await gatewayWith([{ serverGuid: server.serverGuid, identityGuid: server.identityGuid }]);
    const client = await connect(base + gw.path, gw.token);
    expect(text(await client.callTool({ name: 'guarded__whoami', arguments: {} }))).toBe('header-server');
    const WRONG = 'wrong-secret-55c0de11';
    await invoke(t, 'rest', ws.token, 'set_identity_headers', { identityGuid: server.identityGuid, headers: { 'X-Api-Key': WRONG } });
    const err = await client.callTool({ name: 'guarded__whoami', arguments: {} }).catch((e: unknown) => e);
    expect((err as McpError).message).toMatch(/refused the gateway's credentials \(HTTP 401\)/);
    await until('the upstream_auth_failed alert', () => alerts.some((a) => a.code === 'upstream_auth_failed'));
    const alert = alerts.find((a) => a.code === 'upstream_auth_failed');
    expect(alert!.relatedResourceIds).toEqual(expect.arrayContaining([server.serverGuid, gw.gatewayGuid, server.identityGuid, gw.connectionGuid]));
    expect(JSON.stringify(alerts)).not.toContain(WRONG);
    expect(JSON.stringify(alerts)).not.toContain(SECRET);
  });
});
