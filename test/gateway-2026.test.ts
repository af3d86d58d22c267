import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, modernEnvelope, modernHeaders, modernRequest, registerServer } from './helpers/gateway.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';
import { startModernUpstream } from './helpers/modern-upstream.js';

/**
 * A host of revision 2026-07-28, pinned to it (no fallback to the 2025 handshake),
 * uses a gateway in front of a 2025 upstream (server-everything): discovery, tools,
 * prompts and resources, with call logs, next to a 2025 host on the same URL.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let url: string;
let token: string;
let connectionGuid: string;
const clients: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  [t, everything] = await Promise.all([startTestApp(), startEverything('streamableHttp')]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const { serverGuid } = await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' });
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Modern gateway' });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  ({ token, connectionGuid } = issued.body);
  url = issued.body.url.replace(t.config.publicBaseUrl, base);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await everything?.close();
});

async function modernClient(): Promise<Client> {
  const client = new Client({ name: 'host-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

describe('a 2026-07-28 host at a gateway', () => {
  it('discovers the gateway, lists and calls tools of a 2025 upstream', async () => {
    const client = await modernClient();
    expect(client.getServerVersion()?.name).toBe('Modern gateway');
    const tools = (await client.listTools()).tools.map((x) => x.name);
    expect(tools).toContain('everything__echo');
    const echoed = await client.callTool({ name: 'everything__echo', arguments: { message: 'from 2026' } });
    expect((echoed.content as { text: string }[])[0]!.text).toBe('Echo: from 2026');
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(prompts.length).toBeGreaterThan(0);
    const resources = (await client.listResources()).resources;
    expect(resources.length).toBeGreaterThan(0);
    const read = await client.readResource({ uri: resources[0]!.uri });
    expect(read.contents.length).toBeGreaterThan(0);
  });

  it('logs its calls like a 2025 host, with the upstream tool name', async () => {
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid, type: 'tool_call' } });
    expect(logs.body.items.map((r: any) => [r.tool_name, r.status])).toContainEqual(['echo', 'ok']);
  });

  it('answers an unknown tool with a JSON-RPC error, not a hang', async () => {
    const client = await modernClient();
    await expect(client.callTool({ name: 'nowhere__nothing', arguments: {} })).rejects.toThrow(/not found/);
  });

  it('serves a 2025 host on the same URL', async () => {
    const client = await gatewayClient(url, token);
    clients.push(client);
    expect((await client.listTools()).tools.map((x) => x.name)).toContain('everything__echo');
  });

  it("logs each call with the host's protocol revision: 2026-07-28, or what a 2025 host's session negotiated", async () => {
    const modern = await modernClient();
    await modern.callTool({ name: 'everything__echo', arguments: { message: 'revision probe 2026' } });
    const legacy = await gatewayClient(url, token);
    clients.push(legacy);
    await legacy.callTool({ name: 'everything__echo', arguments: { message: 'revision probe 2025' } });
    // A request with neither a session nor a revision header: of the revision the transport says to assume.
    const bare = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'everything__echo', arguments: { message: 'revision probe bare' } },
      }),
    });
    expect(bare.status).toBe(200);
    await bare.text();
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid }, includeDetail: true, take: 1000 });
    expect(logs.status).toBe(200);
    const items = logs.body.items as { type: string; protocol_version: string | null; request_body: string | null }[];
    const probe = (text: string) => items.filter((r) => r.type === 'tool_call' && r.request_body?.includes(text)).map((r) => r.protocol_version);
    expect(probe('revision probe 2026')).toEqual(['2026-07-28']);
    expect(probe('revision probe 2025')).toEqual([LATEST_PROTOCOL_VERSION]);
    expect(probe('revision probe bare')).toEqual(['2025-03-26']);
    // A 2025 host's initialize is logged with the revision its answer negotiated.
    const initializes = items.filter((r) => r.type === 'initialize');
    expect(initializes.length).toBeGreaterThan(0);
    for (const r of initializes) expect(r.protocol_version).toBe(LATEST_PROTOCOL_VERSION);
  });

  it('refuses a request whose Mcp-Method header contradicts its body (HeaderMismatch)', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: modernHeaders(token, 'tools/call'),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernEnvelope('raw') } }),
    });
    const body = (await res.json()) as { error: { code: number } };
    expect(body.error.code).toBe(-32020);
  });
});

describe('a 2026-07-28-only upstream (legacy: reject) behind a gateway', () => {
  let modern: Awaited<ReturnType<typeof startModernUpstream>>;
  let modernUrl: string;
  let modernToken: string;
  beforeAll(async () => {
    modern = await startModernUpstream();
    // Validation negotiates the newest revision both speak: the server is learned, not refused.
    const { serverGuid } = await registerServer(t, ws, { name: 'Modern', url: modern.url, authType: 'none' });
    const server = await invoke(t, 'rest', ws.token, 'get_inbound_server', { inboundServerGuid: serverGuid });
    expect(server.body.authenticationStatus).toBe('open');
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Bridge' });
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    modernToken = issued.body.token;
    modernUrl = issued.body.url.replace(t.config.publicBaseUrl, base);
  }, 60_000);
  afterAll(async () => {
    await modern?.close();
  });

  it('serves its tools to a 2025 host, speaking 2026-07-28 upstream (no initialize)', async () => {
    const client = await gatewayClient(modernUrl, modernToken);
    clients.push(client);
    expect((await client.listTools()).tools.map((x) => x.name).sort()).toEqual(['modern__measure', 'modern__shout']);
    const shouted = await client.callTool({ name: 'modern__shout', arguments: { text: 'bridged' } });
    expect((shouted.content as { text: string }[])[0]!.text).toBe('BRIDGED');
    const measured = await client.callTool({ name: 'modern__measure', arguments: { text: 'four' } });
    expect(measured.structuredContent).toEqual({ length: 4 });
    expect(modern.requests.some((r) => r.method === 'initialize')).toBe(false);
    expect(modern.requests.filter((r) => r.method === 'tools/call').every((r) => r.protocol === '2026-07-28')).toBe(true);
  });

  it('serves its tools, prompt and resource to a 2026-07-28 host', async () => {
    const client = new Client({ name: 'host-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(modernUrl), { requestInit: { headers: { authorization: `Bearer ${modernToken}` } } }));
    clients.push(client);
    const shouted = await client.callTool({ name: 'modern__shout', arguments: { text: 'both modern' } });
    expect((shouted.content as { text: string }[])[0]!.text).toBe('BOTH MODERN');
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['modern__haiku']);
    const read = await client.readResource({ uri: 'modern://motd' });
    expect((read.contents[0] as { text: string }).text).toBe('hello from 2026');
  });

  it.each([
    ['the direct path', {}],
    ["the SDK's path", { 'example.test/unrelated': 1 }],
  ])("answers a 2026-07-28 host in the gateway's name, not the upstream's (%s)", async (_path, extraMeta) => {
    const requests = [
      ['tools/call', { name: 'modern__shout', arguments: { text: 'who' } }],
      ['prompts/get', { name: 'modern__haiku' }],
      ['resources/read', { uri: 'modern://motd' }],
    ] as const;
    for (const [method, params] of requests) {
      const { body: answer } = await modernRequest({ url: modernUrl, token: modernToken }, method, params, {}, extraMeta);
      // server/discover says the gateway's name: every result says the same, whatever server answered behind it.
      expect(answer.result?._meta?.['io.modelcontextprotocol/serverInfo'], method).toEqual({ name: 'Bridge', version: expect.any(String) });
    }
  });
});
