import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { startModernUpstream } from './helpers/modern-upstream.js';
import { freePort } from './helpers/ports.js';
import type { Upstream } from './helpers/upstreams.js';

/**
 * An upstream's revision is learned at validation and learned again when the
 * upstream refuses it at call time (issue 12 item 3): an upstream validated as 2025
 * and replaced by a 2026-07-28-only one (the v2 SDK's `legacy: 'reject'`) on the
 * same address, and the reverse, still answer the call, and the revision stored
 * with the server's features changes, so later calls start in the right one. Real
 * peers: the v2 SDK (2026-07-28 host and upstream), the 1.x SDK (2025 host and a
 * stateless 2025 upstream), all on 127.0.0.1.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let url: string;
let token: string;
const upstreams: Upstream[] = [];
const clients: { close(): Promise<void> }[] = [];

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

/** A 2025-only upstream (the 1.x SDK, stateless) on `port`, with the same `shout` tool as the 2026-07-28 fixture. */
async function start2025Upstream(port: number): Promise<Upstream & { methods: string[] }> {
  const methods: string[] = [];
  const httpServer = http.createServer((req, res) => {
    const server = new McpServer({ name: 'old-only', version: '1.0.0' });
    server.registerTool('shout', { description: 'Upper-cases a text', inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: 'text', text: `${text.toUpperCase()} (2025)` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as { method?: string }) : undefined;
      if (body?.method) methods.push(body.method);
      server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body))
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}

async function storedRevision(serverGuid: string): Promise<unknown> {
  const row = await t.runtime.services.db.selectFrom('inbound_servers').select('features').where('guid', '=', serverGuid).executeTakeFirstOrThrow();
  return (row.features as { protocolVersion?: unknown } | null)?.protocolVersion;
}

async function modernHost(): Promise<Client2026> {
  const client = new Client2026({ name: 'host-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new Transport2026(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

async function legacyHost() {
  const client = await gatewayClient(url, token);
  clients.push(client);
  return client;
}

let gatewayGuid: string;
let portUp: number;
let portDown: number;
let upGuid: string;
let downGuid: string;
let modernUp: Awaited<ReturnType<typeof startModernUpstream>>;
let oldDown: Awaited<ReturnType<typeof start2025Upstream>>;

beforeAll(async () => {
  t = await startTestApp();
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  [portUp, portDown] = await Promise.all([freePort(), freePort()]);
  // "Up" is validated as 2025 and becomes 2026-07-28-only; "Down" the reverse.
  const oldUp = await start2025Upstream(portUp);
  const modernDown = await startModernUpstream({ port: portDown });
  ({ serverGuid: upGuid } = await registerServer(t, ws, { name: 'Up', url: oldUp.url, authType: 'none' }));
  ({ serverGuid: downGuid } = await registerServer(t, ws, { name: 'Down', url: modernDown.url, authType: 'none' }));
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Relearning gateway' });
  gatewayGuid = gw.body.guid;
  for (const inboundServerGuid of [upGuid, downGuid]) await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid });
  token = issued.body.token;
  url = issued.body.url.replace(t.config.publicBaseUrl, base);
  await Promise.all([oldUp.close(), modernDown.close()]);
  [modernUp, oldDown] = await Promise.all([startModernUpstream({ port: portUp }), start2025Upstream(portDown)]);
  upstreams.push(modernUp, oldDown);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await Promise.all(upstreams.map((u) => u.close()));
});

describe('an upstream that changed its revision since validation', () => {
  it('was validated in the revisions it spoke then', async () => {
    expect(await storedRevision(upGuid)).toMatch(/^2025-/);
    expect(await storedRevision(downGuid)).toBe('2026-07-28');
  });

  it('a 2025 upstream now 2026-07-28-only: the call succeeds (initialize refused, server/discover, the call in the envelope) and 2026-07-28 is stored', async () => {
    const host = await legacyHost();
    const answer = await host.callTool({ name: 'up__shout', arguments: { text: 'hi' } });
    expect(text(answer)).toBe('HI');
    expect(await storedRevision(upGuid)).toBe('2026-07-28');
    const methods = modernUp.requests.map((r) => r.method).filter((m) => m !== 'subscriptions/listen');
    expect(methods).toContain('initialize');
    expect(methods).toContain('server/discover');
    expect(methods.at(-1)).toBe('tools/call');
  });

  it('later calls start in the revision learned: no initialize reaches the upstream any more', async () => {
    const before = modernUp.requests.length;
    const host2025 = await legacyHost();
    expect(text(await host2025.callTool({ name: 'up__shout', arguments: { text: 'again' } }))).toBe('AGAIN');
    const host2026 = await modernHost();
    expect(text(await host2026.callTool({ name: 'up__shout', arguments: { text: 'modern' } }))).toBe('MODERN');
    // The 2025 host's event stream follows the upstream's list changes through its listen, when it gets to it.
    const later = modernUp.requests.slice(before).filter((r) => r.method !== 'subscriptions/listen');
    expect(later.map((r) => r.method)).toEqual(['tools/call', 'tools/call']);
    expect(later.every((r) => r.protocol === '2026-07-28')).toBe(true);
  });

  it('a 2026-07-28 upstream now 2025-only: the call succeeds (refused, then initialize) and the 2025 revision is stored', async () => {
    const host = await modernHost();
    const answer = await host.callTool({ name: 'down__shout', arguments: { text: 'hi' } });
    expect(text(answer)).toBe('HI (2025)');
    expect(await storedRevision(downGuid)).toMatch(/^2025-/);
    const before = oldDown.methods.length;
    const host2025 = await legacyHost();
    expect(text(await host2025.callTool({ name: 'down__shout', arguments: { text: 'again' } }))).toBe('AGAIN (2025)');
    // The 2025 host's session opened the upstream at its initialize, in 2025: the call went in that session.
    // (An event stream of a 2025 host that still knew it as 2026-07-28 may have sent it a listen, which it refused.)
    expect(oldDown.methods.slice(before).filter((m) => m !== 'subscriptions/listen')).toEqual(['initialize', 'notifications/initialized', 'tools/call']);
  });

  it('logs the relearned calls as answered', async () => {
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { type: 'tool_call' } });
    const rows = logs.body.items.map((r: any) => [r.tool_name, r.status]);
    expect(rows.filter(([name]: string[]) => name === 'shout').length).toBeGreaterThanOrEqual(5);
    expect(rows.every(([, status]: string[]) => status === 'ok')).toBe(true);
  });
});
