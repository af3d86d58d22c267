import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, gatewayServing, listenLoopback, modernRequest, registerServer } from './helpers/gateway.js';
import { startEverything, startHeaderServer, startToolServer, type HeaderUpstream, type Upstream } from './helpers/upstreams.js';

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let sharedServer: HeaderUpstream;
let userServer: HeaderUpstream;
const SHARED_SECRET = 'shared-secret-7d1e0c55';
const USER_SECRET = 'user-secret-19ab44f2';
let gatewayGuid: string;
let gatewayUrl: string;
let token: string;
let connectionGuid: string;
let sharedAssignment: string;
const servers: Record<string, string> = {};
const clients: Client[] = [];

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

beforeAll(async () => {
  [t, everything, sharedServer, userServer] = await Promise.all([
    startTestApp({ GATEWAY_CACHE_TTL_MS: '60000' }),
    startEverything('streamableHttp'),
    startHeaderServer('X-Api-Key', SHARED_SECRET),
    startHeaderServer('X-User-Key', USER_SECRET),
  ]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const open = await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' });
  const shared = await registerServer(t, ws, {
    name: 'Team Notes',
    url: sharedServer.url,
    authType: 'headers',
    headers: { 'X-Api-Key': SHARED_SECRET },
    accessControl: 'global',
  });
  const mine = await registerServer(t, ws, { name: 'My Notes', url: userServer.url, authType: 'headers', headers: { 'X-User-Key': USER_SECRET } });
  Object.assign(servers, { open: open.serverGuid, shared: shared.serverGuid, mine: mine.serverGuid });
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Main gateway' });
  gatewayGuid = gw.body.guid;
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: open.serverGuid });
  sharedAssignment = (
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid,
      inboundServerGuid: shared.serverGuid,
      identityScheme: 'sharedIdentity',
      sharedIdentityGuid: shared.identityGuid,
    })
  ).body.guid;
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: mine.serverGuid, identityScheme: 'userIdentity' });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid, serverIdentities: { [mine.serverGuid]: mine.identityGuid } });
  expect(issued.status).toBe(201);
  ({ token, connectionGuid } = issued.body);
  gatewayUrl = issued.body.url.replace(t.config.publicBaseUrl, base);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await Promise.all([everything, sharedServer, userServer].map((u) => u?.close()));
});

const connect = async (opts: Parameters<typeof gatewayClient>[2] = {}) => {
  const c = await gatewayClient(gatewayUrl, token, opts);
  clients.push(c);
  return c;
};

describe('gateway proxy', () => {
  it('aggregates the tools of three upstreams, namespaced by server slug, and routes calls with the right credential', async () => {
    const client = await connect();
    expect(client.getServerVersion()?.name).toBe('Main gateway');
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name);
    expect(names).toContain('everything__echo');
    expect(names).toContain('team-notes__whoami');
    expect(names).toContain('my-notes__whoami');
    expect(names.every((n) => /^[a-z0-9-]+__[A-Za-z0-9_.-]+$/.test(n) && n.length <= 128)).toBe(true);
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'hi there' } }))).toBe('Echo: hi there');
    expect(text(await client.callTool({ name: 'team-notes__whoami', arguments: {} }))).toBe('header-server');
    expect(text(await client.callTool({ name: 'my-notes__whoami', arguments: {} }))).toBe('header-server');
    // Each header server saw its own credential (it answers 401 otherwise) and never the gateway token.
    expect(sharedServer.seenHeaderNames.flat()).not.toContain('x-user-key');
    expect(userServer.seenHeaderNames.flat()).not.toContain('x-api-key');
    expect(sharedServer.seenHeaderNames.every((h) => !h.includes('authorization'))).toBe(true);
  });

  it('relays prompts and resources, namespaced, and reads a resource by its URI', async () => {
    const client = await connect();
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['everything__simple-prompt', 'team-notes__greet', 'my-notes__greet']));
    const greet = await client.getPrompt({ name: 'team-notes__greet' });
    expect(greet.messages[0]!.content).toEqual({ type: 'text', text: 'hello' });
    const { resources } = await client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    expect(resources.every((r) => r.name.startsWith('everything__'))).toBe(true);
    const read = await client.readResource({ uri: resources[0]!.uri });
    expect(read.contents[0]!.uri).toBe(resources[0]!.uri);
  });

  it('writes one call log row per request with every column, the trace continued, no secret anywhere', async () => {
    const traceId = 'a'.repeat(31) + 'b';
    const client = await connect({ headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    // A host that puts tokens in a tool's arguments: the row keeps neither (contract 7).
    await client.callTool({ name: 'team-notes__whoami', arguments: { note: `logged ${token} and ${ws.token}` } });
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', {
      filters: { gateway_connection_guid: connectionGuid, trace_id: traceId },
      includeDetail: true,
      take: 100,
    });
    expect(logs.status).toBe(200);
    const types = logs.body.items.map((r: { type: string }) => r.type);
    expect(types).toEqual(expect.arrayContaining(['initialize', 'tool_call']));
    const call = logs.body.items.find((r: { type: string }) => r.type === 'tool_call');
    expect(call).toMatchObject({
      method: 'tools/call',
      tool_name: 'whoami',
      status: 'ok',
      gateway_connection_guid: connectionGuid,
      user_guid: ws.userGuid,
      outbound_gateway_guid: gatewayGuid,
      inbound_server_guid: servers.shared,
      trace_id: traceId,
    });
    expect(call.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(call.span_id).not.toBe('00f067aa0ba902b7');
    // The host's span is the stored parent of the gateway's (the forwarded span's parentSpanId); a row without one has none.
    const parents = await t.runtime.services.clickhouse.client.query({
      query: 'SELECT span_id, parent_span_id FROM call_logs WHERE organization_guid = {org:String} AND trace_id = {traceId:String}',
      query_params: { org: ws.organizationGuid, traceId },
      format: 'JSONEachRow',
    });
    const stored = await parents.json<{ span_id: string; parent_span_id: string }>();
    expect(stored.find((r) => r.span_id === call.span_id)?.parent_span_id).toBe('00f067aa0ba902b7');
    expect(call.request_bytes).toBeGreaterThan(0);
    expect(call.response_bytes).toBeGreaterThan(0);
    expect(call.request_body).toContain('team-notes__whoami');
    expect(call.response_body).toContain('header-server');
    expect(JSON.parse(call.request_headers).authorization).toBe('[REDACTED]');
    // The sealed session id is kept as the session's short id.
    expect(JSON.parse(call.request_headers)['mcp-session-id']).toMatch(/^[0-9a-f]{16}$/);
    // The upstream got the same trace, with the gateway's span as parent.
    const all = JSON.stringify(logs.body);
    expect(all).not.toContain(token);
    expect(all).not.toContain(SHARED_SECRET);
    expect(all).not.toContain(USER_SECRET);
    expect(call.request_body).toContain(`logged [REDACTED] and [REDACTED]`);
    expect(all).not.toContain(ws.token);
    assertNeverLeaked(t, [token, ws.token, SHARED_SECRET, USER_SECRET], [logs.body]);
    const detail = await invoke(t, 'rest', ws.token, 'get_connection', { connectionGuid });
    expect(detail.body.lastSuccessfulCallAt).not.toBeNull();
  });

  it('lists what the upstreams that answer offer, and says why when none of them can be listed', async () => {
    const [one, two] = await Promise.all([startToolServer('one'), startToolServer('two')]);
    const downstream = await gatewayServing(t, ws, base, 'Fragile gateway', [
      ['One', one.url],
      ['Two', two.url],
    ]);
    const client = await gatewayClient(downstream.url, downstream.token);
    clients.push(client);
    await one.close();
    // One upstream down: the other's tools, the list still whole for what answers.
    expect((await client.listTools()).tools.map((x) => x.name)).toContain('two__two_only');
    await two.close();
    // Every upstream down: an error that names them, not an empty list that says the gateway has nothing.
    await expect(client.listTools()).rejects.toThrow(
      /No server of this gateway could be listed \(tools\/list\): one: could not reach .*; two: could not reach/,
    );
    const modern = await modernRequest(downstream, 'tools/list');
    expect(modern.body.error?.message).toMatch(/No server of this gateway could be listed/);
  });

  it('refuses an admin token at the gateway and a gateway token at the admin interface', async () => {
    const asAdmin = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(asAdmin.status).toBe(401);
    expect(asAdmin.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    const noToken = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(noToken.status).toBe(401);
    // RFC 6750 section 3.1: a request without any credential is challenged without an error code.
    expect(noToken.headers.get('www-authenticate')).toBe('Bearer');
    const atAdmin = await fetch(`${base}/api/v1/svc-admin/whoami`, { headers: { authorization: `Bearer ${token}` } });
    expect(atAdmin.status).toBe(401);
    // The token of this gateway does not open another gateway.
    const other = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Other' });
    const elsewhere = await fetch(`${base}/gateways/${other.body.guid}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(elsewhere.status).toBe(401);
  });

  it('a disabled assignment disappears from the list at once and its calls fail with a clear MCP error', async () => {
    const client = await connect();
    await invoke(t, 'rest', ws.token, 'disable_gateway_assignment', { assignmentGuid: sharedAssignment });
    try {
      const names = (await client.listTools()).tools.map((x) => x.name);
      expect(names).not.toContain('team-notes__whoami');
      expect(names).toContain('my-notes__whoami');
      const err = await client.callTool({ name: 'team-notes__whoami', arguments: {} }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).message).toMatch(/team-notes__whoami is not available: its assignment to this gateway is disabled/);
      // The row names the failure as the conventions' error.type: the JSON-RPC code the host got.
      await t.runtime.services.callLogs.flush();
      const rows = await t.runtime.services.clickhouse.client.query({
        query: "SELECT status, error_type FROM call_logs WHERE gateway_connection_guid = {c:String} AND tool_name = 'team-notes__whoami' ORDER BY created_at",
        query_params: { c: connectionGuid },
        format: 'JSONEachRow',
      });
      const stored = await rows.json<{ status: string; error_type: string }>();
      expect(stored.at(-1)).toEqual({ status: 'error', error_type: String((err as McpError).code) });
      expect(stored.filter((r) => r.status === 'ok').every((r) => r.error_type === '')).toBe(true);
    } finally {
      await invoke(t, 'rest', ws.token, 'enable_gateway_assignment', { assignmentGuid: sharedAssignment });
    }
    expect(text(await client.callTool({ name: 'team-notes__whoami', arguments: {} }))).toBe('header-server');
  });

  it('a disabled connection or gateway is refused on the next request, with no wait for the cache', async () => {
    const client = await connect();
    await invoke(t, 'rest', ws.token, 'disable_connection', { connectionGuid });
    try {
      const err = await client.listTools().catch((e: unknown) => e);
      expect(String(err)).toMatch(/403|connection is disabled/i);
    } finally {
      await invoke(t, 'rest', ws.token, 'enable_connection', { connectionGuid });
    }
    await invoke(t, 'rest', ws.token, 'disable_gateway', { gatewayGuid });
    try {
      const res = await fetch(gatewayUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/disabled/);
    } finally {
      await invoke(t, 'rest', ws.token, 'enable_gateway', { gatewayGuid });
    }
  });

  it('a gateway token of another workspace cannot reach this gateway, and a tampered session id is not found', async () => {
    const other = await newWorkspace(t);
    const gw = await invoke(t, 'rest', other.token, 'create_gateway', { name: 'theirs' });
    const theirs = await invoke(t, 'rest', other.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    const res = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${theirs.body.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(res.status).toBe(401);
    const forged = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'mcp-session-id': 'AQ' + 'x'.repeat(60) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(forged.status).toBe(404);
  });
});
