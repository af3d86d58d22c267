import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { serveWebHandler } from './helpers/serve-web-handler.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * Tool names hosts accept (MCP 2025-11-25: 1-128 of A-Z a-z 0-9 _ - .) through a
 * gateway in front of server-everything and a v2 SDK server whose tools have names
 * outside that alphabet (upstreams are held to it only by a SHOULD), as a v2 host
 * and a 1.x host see them (contract 8.2).
 */
const MCP_TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const LONG = `${'b'.repeat(122)}_tool130`;
const ODD_NAMES = ['echo', 'search docs', 'ns/tool', 'météo', LONG, 'everything__echo', 'dot.name'];

/** A v2 SDK server (both eras on one URL) whose tools answer `odd:<their own name>`. */
async function startOddUpstream(): Promise<Upstream> {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'odd-names', version: '1.0.0' });
      for (const name of ODD_NAMES) {
        server.registerTool(name, { description: `tool ${name}`, inputSchema: z.object({}) }, async () => ({
          content: [{ type: 'text', text: `odd:${name}` }],
        }));
      }
      return server;
    },
    { legacy: 'stateless' },
  );
  const served = await serveWebHandler(handler);
  return { url: served.url, close: () => handler.close().then(served.close) };
}

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let odd: Upstream;
let everythingGuid: string;
let oddGuid: string;
const hosts: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  // No cache: a call right after a change resolves by what the host was shown or by the learned lists, never a stale catalog.
  [t, everything, odd] = await Promise.all([startTestApp({ GATEWAY_CACHE_TTL_MS: '0' }), startEverything('streamableHttp'), startOddUpstream()]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  everythingGuid = (await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' })).serverGuid;
  oddGuid = (await registerServer(t, ws, { name: 'Odd', url: odd.url, authType: 'none' })).serverGuid;
}, 120_000);

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await Promise.all([everything, odd].map((u) => u?.close()));
});

type Host = Pick<Client, 'listTools' | 'callTool'>;

/** A gateway of both servers, and one host of each SDK generation connected to it. */
async function gatewayOfBoth(): Promise<{ gatewayGuid: string; oddAssignment: string; connectionGuid: string; hosts: [string, Host][] }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Names ${Math.random().toString(36).slice(2, 7)}` });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: everythingGuid });
  const oddAssignment = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: oddGuid });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  const url = issued.body.url.replace(t.config.publicBaseUrl, base);
  const v1 = await gatewayClient(url, issued.body.token);
  const v2 = new Client2026({ name: 'host-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await v2.connect(new Transport2026(new URL(url), { requestInit: { headers: { authorization: `Bearer ${issued.body.token}` } } }));
  hosts.push(v1, v2);
  return {
    gatewayGuid: gw.body.guid,
    oddAssignment: oddAssignment.body.guid,
    connectionGuid: issued.body.connectionGuid,
    hosts: [
      ['1.x host', v1],
      ['v2 host', v2 as unknown as Host],
    ],
  };
}

async function callLogRows(connectionGuid: string) {
  await t.runtime.services.callLogs.flush();
  const res = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid, type: 'tool_call' } });
  return res.body.items as { tool_name: string; status: string; error_message: string | null }[];
}

const names = async (host: Host) => (await host.listTools()).tools.map((x) => x.name);
const answer = async (host: Host, name: string) => ((await host.callTool({ name, arguments: {} })) as CallToolResult).content[0] as { text: string };

describe('prefixed names hosts accept', () => {
  it('makes every <slug>__<name> fit MCP’s tool-name alphabet and length, unique, and routes each to the tool it was made from', async () => {
    const gateway = await gatewayOfBoth();
    for (const [label, host] of gateway.hosts) {
      const listed = await names(host);
      expect(
        listed.filter((n) => !MCP_TOOL_NAME.test(n)),
        label,
      ).toEqual([]);
      expect(new Set(listed).size, label).toBe(listed.length);
      expect(listed, label).toEqual(expect.arrayContaining(['everything__echo', 'odd__echo', 'odd__dot.name', 'odd__everything__echo']));
      const rewritten = listed.filter((n) => n.startsWith('odd__') && /-[0-9a-f]{8}$/.test(n));
      expect(rewritten, label).toHaveLength(4);
      expect(
        rewritten.find((n) => n.startsWith('odd__search_docs-')),
        label,
      ).toBeDefined();
      // Each rewritten name reaches the upstream under its own name.
      const reached = await Promise.all(rewritten.map(async (n) => (await answer(host, n)).text));
      expect(reached.sort(), label).toEqual(['odd:ns/tool', 'odd:search docs', `odd:${LONG}`, 'odd:météo'].sort());
      // The name as the upstream wrote it is not shown, but a host that knew it still reaches the tool.
      expect((await answer(host, 'odd__search docs')).text, label).toBe('odd:search docs');
    }
  });

  it('when-needed passes upstream names unchanged, as the contract says; an override gives one hosts accept', async () => {
    const gateway = await gatewayOfBoth();
    await invoke(t, 'mcp', ws.token, 'set_gateway_tool_naming', { gatewayGuid: gateway.gatewayGuid, mode: 'when-needed' });
    const [, v2] = gateway.hosts[1]!;
    expect(await names(v2)).toEqual(expect.arrayContaining(['search docs', 'ns/tool', LONG, 'everything__echo', 'odd__echo', 'odd__everything__echo']));
    expect((await answer(v2, 'search docs')).text).toBe('odd:search docs');
    const renamed = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', {
      assignmentGuid: gateway.oddAssignment,
      toolOverrides: { 'search docs': { name: 'search_docs' }, [LONG]: { name: 'long_tool' } },
    });
    expect(renamed.status).toBe(200);
    for (const [label, host] of gateway.hosts) {
      const listed = await names(host);
      expect(listed, label).toEqual(expect.arrayContaining(['search_docs', 'long_tool']));
      expect(listed, label).not.toContain('search docs');
      expect((await answer(host, 'long_tool')).text, label).toBe(`odd:${LONG}`);
    }
  });
});

describe('filters and overrides name upstream tools whatever their characters', () => {
  it.each(SURFACES)(
    'on %s: renames a tool hosts would refuse and filters another out; a call to the filtered one is refused and logged with the reason',
    async (surface) => {
      const gateway = await gatewayOfBoth();
      const res = await invoke(t, surface, ws.token, 'modify_gateway_assignment', {
        assignmentGuid: gateway.oddAssignment,
        toolFilter: { mode: 'deny', tools: ['ns/tool', 'm*o'] },
        toolOverrides: { 'search docs': { name: 'search_docs', description: 'Searches the docs' } },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ toolFilter: { mode: 'deny', tools: ['ns/tool', 'm*o'] }, toolOverrides: { 'search docs': { name: 'search_docs' } } });
      expect(res.body.toolCurationHint).toBeUndefined();
      for (const [label, host] of gateway.hosts) {
        const listed = await names(host);
        expect(
          listed.filter((n) => /ns_tool|m_t_o/.test(n)),
          label,
        ).toEqual([]);
        expect(listed, label).toContain('odd__search_docs');
        expect((await answer(host, 'odd__search_docs')).text, label).toBe('odd:search docs');
      }
      // The name the filtered tool had before is refused like an unknown one, not asked of the upstream.
      const [, v1] = gateway.hosts[0]!;
      const before = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', { assignmentGuid: gateway.oddAssignment, toolFilter: null });
      expect(before.body.toolFilter).toBeNull();
      const hidden = (await names(v1)).find((n) => n.startsWith('odd__ns_tool-'))!;
      await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', {
        assignmentGuid: gateway.oddAssignment,
        toolFilter: { mode: 'deny', tools: ['ns/tool'] },
      });
      await expect(v1.callTool({ name: hidden, arguments: {} })).rejects.toThrow(`Tool ${hidden} not found on this gateway`);
      const rows = await callLogRows(gateway.connectionGuid);
      expect(rows.find((r) => r.tool_name === 'ns/tool' && r.status === 'error')?.error_message).toMatch(/tool filter of Odd .* excludes ns\/tool/);
    },
  );

  const at = (n: number) => 'x'.repeat(n);
  it.each([
    [{ toolFilter: { mode: 'deny', tools: [at(1024)] } }, null],
    [{ toolFilter: { mode: 'deny', tools: [at(1025)] } }, 'toolFilter.tools.0'],
    [{ toolFilter: { mode: 'deny', tools: [''] } }, 'toolFilter.tools.0'],
    [{ toolOverrides: { [at(1024)]: { name: 'y' } } }, null],
    // A path is cut at 1000 characters (src/core/errors.ts).
    [{ toolOverrides: { [at(1025)]: { name: 'y' } } }, `toolOverrides.${at(1025)}`.slice(0, 1000) + '…'],
    [{ toolOverrides: { '': { name: 'y' } } }, 'toolOverrides.'],
    [{ toolOverrides: { echo: { name: at(128) } } }, null],
    [{ toolOverrides: { echo: { name: at(129) } } }, 'toolOverrides.echo.name'],
    [{ toolOverrides: { echo: { name: 'has space' } } }, 'toolOverrides.echo.name'],
  ])('%#: at a limit is accepted, one over it is a 400 naming the field, on both surfaces', async (input, path) => {
    const gateway = await gatewayOfBoth();
    for (const surface of SURFACES) {
      const res = await invoke(t, surface, ws.token, 'modify_gateway_assignment', { assignmentGuid: gateway.oddAssignment, ...input });
      if (path === null) {
        expect(res.status, surface).toBe(200);
        continue;
      }
      expect(res.status, surface).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
      expect(JSON.stringify(res.body.errors)).toMatch(/too big|too small|must|empty/i);
    }
  });
});
