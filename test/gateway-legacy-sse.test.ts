import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { CreateMessageRequestSchema, ListRootsRequestSchema, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { alternatingFetch, gatewayClient, legacySseClient, listenLoopback, registerServer, startReplica } from './helpers/gateway.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';
import { startAskingUpstream } from './helpers/asking-upstream.js';

/** An upstream that speaks only the legacy HTTP+SSE transport, reached through the gateway. */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let legacy: Upstream;
let serverGuid: string;
const clients: Client[] = [];
const extraApps: FastifyInstance[] = [];

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

async function gateway(inboundServerGuid = serverGuid): Promise<{ token: string; path: string; connectionGuid: string }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `gw-${Math.random().toString(36).slice(2, 8)}` });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  return { token: issued.body.token, connectionGuid: issued.body.connectionGuid, path: `/gateways/${gw.body.guid}/mcp` };
}

const connect = async (...args: Parameters<typeof gatewayClient>) => {
  const c = await gatewayClient(...args);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  [t, legacy] = await Promise.all([startTestApp(), startEverything('sse')]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  serverGuid = (await registerServer(t, ws, { name: 'legacy', url: legacy.url, authType: 'none' })).serverGuid;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  for (const app of extraApps) await app.close();
  await t?.close();
  await legacy?.close();
});

describe('an SSE-only upstream', () => {
  it('is recorded as such by feature-learning', async () => {
    const row = await t.runtime.services.db.selectFrom('inbound_servers').select('features').where('guid', '=', serverGuid).executeTakeFirstOrThrow();
    expect((row.features as { transport: string }).transport).toBe('sse');
  });

  it('lists and calls echo through the gateway, and the call is logged', async () => {
    const gw = await gateway();
    const traceId = 'c'.repeat(31) + 'd';
    const client = await connect(base + gw.path, gw.token, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toContain('legacy__echo');
    expect(text(await client.callTool({ name: 'legacy__echo', arguments: { message: 'over sse' } }))).toBe('Echo: over sse');
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', {
      filters: { gateway_connection_guid: gw.connectionGuid, trace_id: traceId },
      includeDetail: true,
      take: 100,
    });
    expect(logs.status).toBe(200);
    const call = logs.body.items.find((r: { type: string }) => r.type === 'tool_call');
    expect(call).toMatchObject({ method: 'tools/call', tool_name: 'echo', status: 'ok', inbound_server_guid: serverGuid, trace_id: traceId });
  });

  it('relays a sampling request from the upstream and the host answer back on the same stream', async () => {
    const gw = await gateway();
    const client = await connect(base + gw.path, gw.token, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'legacy-model', role: 'assistant', content: { type: 'text', text: 'ok' } }));
    expect(text(await client.callTool({ name: 'legacy__trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 5 } }))).toContain('legacy-model');
  });

  it('serves requests alternating between two replicas (each exchange opens its own upstream stream)', async () => {
    const gw = await gateway();
    const second = await startReplica(t.runtime.services);
    extraApps.push(second.app);
    const seen: string[] = [];
    const client = await connect(base + gw.path, gw.token, { fetch: alternatingFetch([base, second.base], seen) });
    for (let i = 0; i < 3; i++) expect(text(await client.callTool({ name: 'legacy__echo', arguments: { message: `r${i}` } }))).toBe(`Echo: r${i}`);
    expect(seen.length).toBeGreaterThanOrEqual(4);
  });
});

/** An older host: the SDK's SSEClientTransport at the gateway's `/sse` endpoint. */
async function legacyHost(url: string, token: string): Promise<Client> {
  const client = await legacySseClient(url, token);
  clients.push(client);
  return client;
}

describe('the host-facing legacy endpoint /gateways/{guid}/sse', () => {
  it('serves an SDK SSEClientTransport host: list and call through the same proxy, logged', async () => {
    const gw = await gateway();
    const sseUrl = base + gw.path.replace(/\/mcp$/, '/sse');
    const client = await legacyHost(sseUrl, gw.token);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toContain('legacy__echo');
    expect(text(await client.callTool({ name: 'legacy__echo', arguments: { message: 'old host' } }))).toBe('Echo: old host');
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: gw.connectionGuid }, includeDetail: true, take: 100 });
    expect(logs.body.items.map((r: { type: string }) => r.type)).toEqual(expect.arrayContaining(['initialize', 'tool_call']));
  });

  it('opens a new upstream session in the host’s when the upstream forgot the one it had (a restart): the host, tied to its stream, never initializes again', async () => {
    const asking = await startAskingUpstream();
    try {
      const gw = await gateway((await registerServer(t, ws, { name: 'asking', url: asking.url, authType: 'none' })).serverGuid);
      const sseUrl = base + gw.path.replace(/\/mcp$/, '/sse');
      const client = await legacyHost(sseUrl, gw.token);
      expect(text(await client.callTool({ name: 'asking__hold', arguments: { ms: 1 } }))).toBe('held 1 ms');
      const sessions = asking.declared.length;
      asking.forgetSessions();
      expect(text(await client.callTool({ name: 'asking__hold', arguments: { ms: 2 } }))).toBe('held 2 ms');
      expect((await client.listTools()).tools.map((x) => x.name)).toContain('asking__hold');
      // One initialize more, as the host declared itself at its own.
      expect(asking.declared.length).toBe(sessions + 1);
      // The host's stream follows the new session's stream: the one the call opened, not one more of its own.
      await vi.waitFor(() => expect(asking.openStreams()).toBe(1), { timeout: 10_000, interval: 50 });
      expect(asking.declared.length).toBe(sessions + 1);
    } finally {
      await asking.close();
    }
  });

  it('follows a new upstream session’s own stream when the upstream forgot the old one: what the upstream asks there reaches the host again, and its session ends with the stream', async () => {
    const asking = await startAskingUpstream();
    try {
      const gw = await gateway((await registerServer(t, ws, { name: 'asking', url: asking.url, authType: 'none' })).serverGuid);
      const sseUrl = base + gw.path.replace(/\/mcp$/, '/sse');
      const client = await legacySseClient(sseUrl, gw.token, { roots: {} });
      client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
      let toolListChanges = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolListChanges++);
      const followed = () => vi.waitFor(() => expect(asking.openStreams()).toBe(1), { timeout: 10_000, interval: 50 });
      await followed();
      // Asked on the session's own stream (no call's): it reaches the host through the gateway's following of that stream.
      expect(text(await client.callTool({ name: 'asking__ask-roots-aside', arguments: {} }))).toBe('roots: file:///work');
      const sessions = asking.declared.length;
      asking.forgetSessions();
      // The stream finds the session gone, opens a new one in the host's and follows it; the return is announced.
      await vi.waitFor(() => expect(toolListChanges).toBeGreaterThan(0), { timeout: 10_000, interval: 50 });
      await followed();
      expect(asking.declared.length).toBe(sessions + 1);
      expect(text(await client.callTool({ name: 'asking__ask-roots-aside', arguments: {} }))).toBe('roots: file:///work');
      // The call went to the session the stream opened.
      expect(asking.declared.length).toBe(sessions + 1);
      expect(asking.openSessions()).toBe(1);
      await client.close();
      // The transport ties the session to its stream: the upstream's session ends with it (DELETE).
      await vi.waitFor(() => expect(asking.openSessions()).toBe(0), { timeout: 10_000, interval: 50 });
    } finally {
      await asking.close();
    }
  });

  it('refuses a missing or wrong token (401) and a stream of another connection (404)', async () => {
    const gw = await gateway();
    const other = await gateway();
    const sseUrl = base + gw.path.replace(/\/mcp$/, '/sse');
    expect((await fetch(sseUrl)).status).toBe(401);
    expect((await fetch(sseUrl, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    const abort = new AbortController();
    const res = await fetch(sseUrl, { headers: { authorization: `Bearer ${gw.token}` }, signal: abort.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let head = '';
    while (!head.includes('\n\n')) head += new TextDecoder().decode((await reader.read()).value);
    const endpoint = /data: (\S+)/.exec(head)![1]!;
    const ping = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) };
    expect((await fetch(base + endpoint, { ...ping, headers: { ...ping.headers, authorization: `Bearer ${gw.token}` } })).status).toBe(202);
    // The other gateway's token reaches its own gateway's path only; with this path it is refused.
    const crossPath = base + endpoint.replace(gw.path.split('/')[2]!, other.path.split('/')[2]!);
    expect((await fetch(crossPath, { ...ping, headers: { ...ping.headers, authorization: `Bearer ${other.token}` } })).status).toBe(404);
    expect((await fetch(base + endpoint, { ...ping })).status).toBe(401);
    abort.abort();
  });
});
