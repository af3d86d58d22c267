import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as Client2026, LOG_LEVEL_META_KEY, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { isParamHeaderMismatch, paramHeaderMismatch, paramHeaders, scanParamHeaderDeclarations } from '../src/gateway/mcp-param-headers.js';
import { MODERN_REVISION, toModernUpstream, type HostIdentity } from '../src/gateway/modern-upstream.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { startHeaderCheckingUpstream, startSessionLoggingUpstream, type HeaderCheckingUpstream, type SeenRequest } from './helpers/param-header-upstreams.js';
import type { Upstream } from './helpers/upstreams.js';

/**
 * What a 2026-07-28 upstream must receive with each request besides the body
 * (issue 12): the `Mcp-Param-*` mirror of the arguments its tool marks with
 * `x-mcp-header` (SEP-2243; the v2 SDK's server refuses a call without them), and the
 * host's log level in the envelope (no session state in that revision; without a
 * level the upstream sends no log messages). Real peers: the v2 SDK's client and
 * server, the 1.x SDK's server and client, on 127.0.0.1.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let modern: HeaderCheckingUpstream;
let sessions: Upstream & { requests: SeenRequest[] };
let url: string;
let token: string;
let connectionGuid: string;
const clients: { close(): Promise<void> }[] = [];

const HOST: HostIdentity = { clientInfo: { name: 'codec-test', version: '1' }, clientCapabilities: {} };
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

beforeAll(async () => {
  [t, modern, sessions] = await Promise.all([startTestApp(), startHeaderCheckingUpstream(), startSessionLoggingUpstream()]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Param headers' });
  for (const [name, upstream] of [
    ['Modern', modern],
    ['Sessions', sessions],
  ] as const) {
    const { serverGuid } = await registerServer(t, ws, { name, url: upstream.url, authType: 'none' });
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  }
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  token = issued.body.token;
  connectionGuid = issued.body.connectionGuid;
  url = issued.body.url.replace(t.config.publicBaseUrl, base);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await modern?.close();
  await sessions?.close();
});

/** A v2 client pinned to 2026-07-28 (no fallback), at `target` with optional headers; log messages it gets are collected. */
async function modernClient(target: string, headers: Record<string, string> = {}, logs: string[] = []): Promise<Client2026> {
  const client = new Client2026({ name: 'host-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params.level));
  await client.connect(new Transport2026(new URL(target), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

/** POSTs one message to an upstream as the gateway would, and returns the messages of its answer (JSON or an event stream). */
async function post(target: string, message: JSONRPCMessage, headers: Record<string, string>): Promise<{ status: number; messages: Record<string, any>[] }> {
  const res = await fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN_REVISION, ...headers },
    body: JSON.stringify(message),
  });
  const body = await res.text();
  const messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? body
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5)) as Record<string, any>)
    : [JSON.parse(body) as Record<string, any>];
  return { status: res.status, messages };
}

const routeCall = (id: number, args: Record<string, unknown>, name = 'route') =>
  ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }) as JSONRPCMessage;

/** Argument values each needing a different rule of the encoding. */
const CASES: Record<string, unknown>[] = [
  { region: 'eu-west', priority: 3 },
  { region: ' padded ', priority: -7, verbose: false },
  { region: 'Zürich', priority: 0 },
  { region: '=?base64?abc?=', priority: 10, verbose: true },
  { region: '', priority: 1, note: 'not marked' },
  { region: 'tab\tinside', priority: 2 },
];

describe('the Mcp-Param-* codec, against the v2 SDK', () => {
  it("builds the very headers the SDK's own client sends for a tool's marked arguments", async () => {
    const client = await modernClient(modern.url);
    const tool = (await client.listTools()).tools.find((x) => x.name === 'route')!;
    const declarations = scanParamHeaderDeclarations(tool.inputSchema);
    expect(declarations.map((d) => d.headerName)).toEqual(['Region', 'Priority', 'Verbose']);
    for (const args of CASES) {
      const before = modern.requests.length;
      await client.callTool({ name: 'route', arguments: args });
      const sent = modern.requests.slice(before).find((r) => r.method === 'tools/call')!.paramHeaders;
      const ours = Object.fromEntries(Object.entries(paramHeaders(declarations, args)).map(([k, v]) => [k.toLowerCase(), v]));
      expect(ours).toEqual(sent);
    }
    // Some of them were encoded; a null argument has no header.
    expect(paramHeaders(declarations, { ...CASES[2], verbose: null })).toEqual({
      'Mcp-Param-Region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=`,
      'Mcp-Param-Priority': '0',
    });
  });

  it("reaches the SDK's server as toModernUpstream writes a call, which it accepts", async () => {
    const declarations = scanParamHeaderDeclarations(
      (await modernClient(modern.url).then((c) => c.listTools())).tools.find((x) => x.name === 'route')!.inputSchema,
    );
    for (const [i, args] of CASES.entries()) {
      const out = toModernUpstream(routeCall(i + 1, args), HOST, declarations);
      const answer = await post(modern.url, out.message, out.headers);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.messages.at(-1)!.result.content[0].text).region).toBe(args.region);
    }
    // Without them the server refuses the call: the headers are what makes it pass.
    const bare = toModernUpstream(routeCall(99, CASES[0]!), HOST);
    const refused = await post(modern.url, bare.message, bare.headers);
    expect([refused.status, refused.messages[0]!.error.code]).toEqual([400, -32020]);
    expect(isParamHeaderMismatch(refused.messages[0])).toBe(true);
  });

  it("judges a host's headers as the SDK's server does", async () => {
    const declarations = scanParamHeaderDeclarations(
      (await modernClient(modern.url).then((c) => c.listTools())).tools.find((x) => x.name === 'route')!.inputSchema,
    );
    const args = { region: 'Hello', priority: 3 };
    const variants: Record<string, string>[] = [
      { 'Mcp-Param-Region': 'Hello', 'Mcp-Param-Priority': '3' },
      { 'Mcp-Param-Region': '=?base64?SGVsbG8=?=', 'Mcp-Param-Priority': '3.0' },
      { 'Mcp-Param-Region': 'Hello', 'Mcp-Param-Priority': '3', 'Mcp-Param-Verbose': 'anything' },
      { 'Mcp-Param-Priority': '3' },
      { 'Mcp-Param-Region': 'Other', 'Mcp-Param-Priority': '3' },
      { 'Mcp-Param-Region': '=?base64?SGVsbG8?=', 'Mcp-Param-Priority': '3' },
      { 'Mcp-Param-Region': 'Hello', 'Mcp-Param-Priority': '4' },
    ];
    for (const [i, variant] of variants.entries()) {
      const out = toModernUpstream(routeCall(200 + i, args), HOST);
      const answer = await post(modern.url, out.message, { ...out.headers, ...variant });
      const sdkAccepts = answer.status === 200;
      expect({ variant, accepted: paramHeaderMismatch(declarations, args, new Headers(variant)) === null }).toEqual({ variant, accepted: sdkAccepts });
    }
  });

  it('finds only the marks the revision admits, and tells a Mcp-Name mismatch from a Mcp-Param one', async () => {
    const schema = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });
    expect(
      scanParamHeaderDeclarations(
        schema({ a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'object', properties: { c: { type: 'integer', 'x-mcp-header': 'C' } } } }),
      ).map((d) => d.path),
    ).toEqual([['a'], ['b', 'c']]);
    // Invalid: the SDK's client leaves the tool out and its server checks nothing, so nothing is sent.
    expect(scanParamHeaderDeclarations(schema({ a: { type: 'object', 'x-mcp-header': 'A' } }))).toEqual([]);
    expect(scanParamHeaderDeclarations(schema({ a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } }))).toEqual([]);
    expect(scanParamHeaderDeclarations(schema({ a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'string', 'x-mcp-header': 'a' } }))).toEqual([]);
    expect(scanParamHeaderDeclarations(schema({ a: { type: 'string', 'x-mcp-header': 'My Region' } }))).toEqual([]);
    expect(scanParamHeaderDeclarations(schema({}, { anyOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'A' } } }] }))).toEqual([]);
    // A number-typed mark is invalid too, but the SDK's server still checks it: it is sent.
    expect(scanParamHeaderDeclarations(schema({ n: { type: 'number', 'x-mcp-header': 'N' } })).map((d) => d.headerName)).toEqual(['N']);
    const out = toModernUpstream(routeCall(300, { region: 'x', priority: 1 }), HOST);
    const nameMismatch = await post(modern.url, out.message, { ...out.headers, 'mcp-name': 'other' });
    expect(nameMismatch.messages[0]!.error.code).toBe(-32020);
    expect(isParamHeaderMismatch(nameMismatch.messages[0])).toBe(false);
  });

  it("carries the host's log level in the envelope: the upstream logs at it, and not at all without one", async () => {
    const log = { jsonrpc: '2.0', id: 400, method: 'tools/call', params: { name: 'log', arguments: {} } } as JSONRPCMessage;
    const withLevel = toModernUpstream(log, { ...HOST, logLevel: 'info' });
    expect((withLevel.message as any).params._meta[LOG_LEVEL_META_KEY]).toBe('info');
    const answered = await post(modern.url, withLevel.message, withLevel.headers);
    expect(answered.messages.filter((m) => m.method === 'notifications/message').map((m) => m.params.level)).toEqual(['info', 'warning']);
    expect(answered.messages.at(-1)!.result.content[0].text).toBe('level info');
    const without = toModernUpstream(log, HOST);
    const silent = await post(modern.url, without.message, without.headers);
    expect(silent.messages.filter((m) => m.method === 'notifications/message')).toEqual([]);
    expect(silent.messages.at(-1)!.result.content[0].text).toBe('level none');
  });
});

describe('through a gateway', () => {
  it("passes a 2026-07-28 host's log level to a 2026-07-28 upstream, and the upstream's log messages back", async () => {
    const logs: string[] = [];
    const client = await modernClient(url, { authorization: `Bearer ${token}` }, logs);
    const result = await client.callTool({ name: 'modern__log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'warning' } });
    expect(text(result)).toBe('level warning');
    expect(logs).toEqual(['warning']);
    expect(text(await client.callTool({ name: 'modern__log', arguments: {} }))).toBe('level none');
  });

  it('refuses a log level that is not one, naming the key', async () => {
    const client = await modernClient(url, { authorization: `Bearer ${token}` });
    await expect(client.callTool({ name: 'modern__log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'loud' } })).rejects.toThrow(/logLevel/);
  });

  // The following need the proxy hooks listed in the report of helper C (the tool's declarations and the
  // 2025 host's level passed to toModernUpstream; setLevel on pooled sessions; the host-side check).

  it("sends a 2026-07-28 host's marked arguments to the upstream as Mcp-Param-* headers", async () => {
    const client = await modernClient(url, { authorization: `Bearer ${token}` });
    const before = modern.requests.length;
    const result = await client.callTool({ name: 'modern__route', arguments: { region: 'Zürich', priority: 5, verbose: true } });
    expect(JSON.parse(text(result))).toEqual({ region: 'Zürich', priority: 5, verbose: true });
    const call = modern.requests.slice(before).find((r) => r.method === 'tools/call')!;
    expect(call.paramHeaders).toEqual({
      'mcp-param-region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=`,
      'mcp-param-priority': '5',
      'mcp-param-verbose': 'true',
    });
  });

  it("sends a 2025 host's marked arguments too (it knows nothing of the headers)", async () => {
    const client = await gatewayClient(url, token);
    clients.push(client);
    const result = await client.callTool({ name: 'modern__route', arguments: { region: 'eu-west', priority: 1 } });
    expect(JSON.parse(text(result))).toEqual({ region: 'eu-west', priority: 1 });
  });

  it("learns a tool's marks again when the upstream says they changed, and retries once", async () => {
    modern.regionHeader.name = 'Zone';
    try {
      const client = await gatewayClient(url, token);
      clients.push(client);
      const before = modern.requests.length;
      const result = await client.callTool({ name: 'modern__route', arguments: { region: 'ap-south', priority: 2 } });
      expect(JSON.parse(text(result))).toEqual({ region: 'ap-south', priority: 2 });
      // (The host's event stream follows the upstream's list changes through a listen, when it gets to it.)
      const seen = modern.requests.slice(before).filter((r) => r.method !== 'subscriptions/listen');
      expect(seen.map((r) => r.method)).toEqual(['tools/call', 'tools/list', 'tools/call']);
      expect(seen.at(-1)!.paramHeaders['mcp-param-zone']).toBe('ap-south');
    } finally {
      modern.regionHeader.name = 'Region';
    }
  });

  it("sends a 2025 host's logging/setLevel to 2026-07-28 upstreams with each later request", async () => {
    const client = await gatewayClient(url, token);
    clients.push(client);
    await client.setLoggingLevel('info');
    expect(text(await client.callTool({ name: 'modern__log', arguments: {} }))).toBe('level info');
    await client.setLoggingLevel('warning');
    expect(text(await client.callTool({ name: 'modern__log', arguments: {} }))).toBe('level warning');
  });

  it("sets a 2026-07-28 host's log level on the 2025 upstream session its call uses", async () => {
    const client = await modernClient(url, { authorization: `Bearer ${token}` });
    const before = sessions.requests.length;
    await client.callTool({ name: 'sessions__log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'warning' } });
    const seen = sessions.requests.slice(before);
    const call = seen.find((r) => r.method === 'tools/call')!;
    const levels = seen.filter((r) => r.method === 'logging/setLevel' && r.sessionId === call.sessionId).map((r) => r.params?.level);
    expect(levels).toEqual(['warning']);
    expect(seen.indexOf(call)).toBeGreaterThan(seen.findIndex((r) => r.method === 'logging/setLevel'));
  });

  it('answers a 2026-07-28 tools/call sent without an id or without params in words, never a 500', async () => {
    const headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN_REVISION,
      'mcp-method': 'tools/call',
      'mcp-param-region': 'us-east',
    };
    for (const body of [
      { jsonrpc: '2.0', method: 'tools/call' },
      { jsonrpc: '2.0', method: 'tools/call', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_REVISION } } },
    ]) {
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBeLessThan(500);
    }
  });

  it("refuses a 2026-07-28 host's Mcp-Param-* header that contradicts its arguments (HeaderMismatch)", async () => {
    // A host writes its headers from the gateway's tools/list (the upstream's schemas, names prefixed).
    const client = await modernClient(url, { authorization: `Bearer ${token}` });
    const listed = (await client.listTools()).tools.find((x) => x.name === 'modern__route')!;
    expect(scanParamHeaderDeclarations(listed.inputSchema).map((d) => d.headerName)).toEqual(['Region', 'Priority', 'Verbose']);
    const before = modern.requests.length;
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_REVISION,
        'mcp-method': 'tools/call',
        'mcp-name': 'modern__route',
        'mcp-param-region': 'us-east',
        'mcp-param-priority': '1',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'modern__route',
          arguments: { region: 'eu-west', priority: 1 },
          _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_REVISION, 'io.modelcontextprotocol/clientCapabilities': {} },
        },
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { id: unknown; error: { code: number; message: string; data: { mismatch: { header: string } } } };
    expect(body).toMatchObject({ id: 1, error: { code: -32020, data: { mismatch: { header: 'Mcp-Param-Region' } } } });
    expect(body.error.message).toMatch(/^Bad Request: the request headers and body disagree: .*Mcp-Param-Region/);
    // Refused before anything reaches the upstream, and logged like any refusal.
    expect(modern.requests.slice(before).filter((r) => r.method === 'tools/call')).toEqual([]);
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid, type: 'tool_call' }, take: 250 });
    const rows = (logs.body.items as { status: string; error_message: string | null; tool_name: string | null }[]).filter((r) =>
      /Mcp-Param-Region header does not match/.test(r.error_message ?? ''),
    );
    expect(rows).toMatchObject([{ status: 'error', tool_name: 'modern__route' }]);
  });
});
