import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { startToolServer, type Upstream } from './helpers/upstreams.js';

/**
 * Tool curation (contract 8.2): the naming modes, per-assignment filters and
 * overrides, through a real gateway in front of two real upstreams whose tool and
 * prompt names collide.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let alpha: Upstream;
let beta: Upstream;
const servers: Record<'alpha' | 'beta', string> = { alpha: '', beta: '' };
const clients: Client[] = [];

beforeAll(async () => {
  [t, alpha, beta] = await Promise.all([startTestApp({ GATEWAY_CACHE_TTL_MS: '0' }), startToolServer('alpha'), startToolServer('beta')]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  servers.alpha = (await registerServer(t, ws, { name: 'Alpha', url: alpha.url, authType: 'none' })).serverGuid;
  servers.beta = (await registerServer(t, ws, { name: 'Beta', url: beta.url, authType: 'none' })).serverGuid;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await Promise.all([alpha, beta].map((u) => u?.close()));
});

/** A gateway with the given servers assigned (in order), and a host connected to it. */
async function gatewayWith(names: ('alpha' | 'beta')[]) {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Curated ${names.join(' ')} ${Math.random().toString(36).slice(2, 7)}` });
  const assignments: string[] = [];
  for (const name of names) {
    const a = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: servers[name] });
    expect(a.status).toBe(201);
    assignments.push(a.body.guid);
  }
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  const client = await gatewayClient(issued.body.url.replace(t.config.publicBaseUrl, base), issued.body.token);
  clients.push(client);
  return { gatewayGuid: gw.body.guid as string, assignments, client, connectionGuid: issued.body.connectionGuid as string };
}

const toolNames = async (client: Client) => (await client.listTools()).tools.map((x) => x.name).sort();
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;
const refusal = (client: Client, name: string) =>
  client.callTool({ name, arguments: {} }).then(
    () => null,
    (err: unknown) => err,
  );

async function callLogs(connectionGuid: string) {
  await t.runtime.services.callLogs.flush();
  const res = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid, type: 'tool_call' } });
  return res.body.items as { tool_name: string; status: string; error_message: string | null }[];
}

describe('tool naming', () => {
  it('is prefixed by default: every tool and prompt of both servers as <slug>__<name>', async () => {
    const { gatewayGuid, client } = await gatewayWith(['alpha', 'beta']);
    for (const surface of SURFACES) {
      expect((await invoke(t, surface, ws.token, 'get_gateway_tool_naming', { gatewayGuid })).body).toEqual({ gatewayGuid, mode: 'prefixed' });
    }
    expect(await toolNames(client)).toEqual(
      [
        'alpha__alpha_only',
        'alpha__search_code',
        'alpha__search_docs',
        'alpha__whoami',
        'beta__beta_only',
        'beta__search_code',
        'beta__search_docs',
        'beta__whoami',
      ].sort(),
    );
    expect((await client.listPrompts()).prompts.map((p) => p.name).sort()).toEqual(['alpha__greet', 'beta__greet']);
    expect(text(await client.callTool({ name: 'beta__whoami', arguments: {} }))).toBe('beta:whoami');
  });

  it('when-needed: unique names pass unchanged, shared ones are prefixed (all holders), prompts alike; calls route and log upstream names', async () => {
    const { gatewayGuid, client, connectionGuid } = await gatewayWith(['alpha', 'beta']);
    const set = await invoke(t, 'mcp', ws.token, 'set_gateway_tool_naming', { gatewayGuid, mode: 'when-needed' });
    expect(set.body).toEqual({ gatewayGuid, mode: 'when-needed' });
    expect((await invoke(t, 'rest', ws.token, 'get_gateway_tool_naming', { gatewayGuid })).body.mode).toBe('when-needed');
    expect(await toolNames(client)).toEqual(
      ['alpha_only', 'alpha__search_code', 'alpha__search_docs', 'alpha__whoami', 'beta_only', 'beta__search_code', 'beta__search_docs', 'beta__whoami'].sort(),
    );
    expect((await client.listPrompts()).prompts.map((p) => p.name).sort()).toEqual(['alpha__greet', 'beta__greet']);
    expect(text(await client.callTool({ name: 'beta_only', arguments: {} }))).toBe('beta:beta_only');
    expect(text(await client.callTool({ name: 'alpha__whoami', arguments: {} }))).toBe('alpha:whoami');
    // A shared name without its prefix names no single tool.
    expect(await refusal(client, 'whoami')).toBeInstanceOf(McpError);
    const logged = await callLogs(connectionGuid);
    expect(
      logged
        .filter((r) => r.status === 'ok')
        .map((r) => r.tool_name)
        .sort(),
    ).toEqual(['beta_only', 'whoami']);
  });

  it('a one-server gateway in when-needed mode is transparent', async () => {
    const { gatewayGuid, client } = await gatewayWith(['alpha']);
    await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid, mode: 'when-needed' });
    expect(await toolNames(client)).toEqual(['alpha_only', 'search_code', 'search_docs', 'whoami']);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['greet']);
    expect(text(await client.callTool({ name: 'search_docs', arguments: {} }))).toBe('alpha:search_docs');
    expect(((await client.getPrompt({ name: 'greet' })).messages[0]!.content as { text: string }).text).toBe('hello from alpha');
  });

  it("tells open sessions their lists changed when the gateway's naming changes", async () => {
    const { gatewayGuid, client } = await gatewayWith(['alpha']);
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed++;
    });
    await toolNames(client);
    // The host's event stream opens in the background: switch modes until the notice arrives.
    let mode: 'prefixed' | 'when-needed' = 'prefixed';
    await vi.waitFor(
      async () => {
        mode = mode === 'prefixed' ? 'when-needed' : 'prefixed';
        await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid, mode });
        expect(changed).toBeGreaterThan(0);
      },
      { timeout: 15_000, interval: 300 },
    );
  });

  it.each(SURFACES)('refuses an unknown mode on %s', async (surface) => {
    const { gatewayGuid } = await gatewayWith(['alpha']);
    const res = await invoke(t, surface, ws.token, 'set_gateway_tool_naming', { gatewayGuid, mode: 'never' });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: any) => e.path)).toContain('mode');
  });
});

describe('tool filters and overrides', () => {
  it('a deny filter hides the tool from the list and refuses a call like an unknown tool, logged as an error with the reason', async () => {
    const { gatewayGuid, assignments, client, connectionGuid } = await gatewayWith(['alpha', 'beta']);
    const res = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', {
      assignmentGuid: assignments[1],
      toolFilter: { mode: 'deny', tools: ['whoami', 'search_*'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.toolFilter).toEqual({ mode: 'deny', tools: ['whoami', 'search_*'] });
    expect(res.body.toolCurationHint).toBeUndefined();
    expect(await toolNames(client)).toEqual(['alpha__alpha_only', 'alpha__search_code', 'alpha__search_docs', 'alpha__whoami', 'beta__beta_only']);
    // The name is unique now: in when-needed mode it is no longer prefixed.
    await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid, mode: 'when-needed' });
    expect(await toolNames(client)).toEqual(['alpha_only', 'beta_only', 'search_code', 'search_docs', 'whoami']);
    expect(text(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('alpha:whoami');
    const denied = (await refusal(client, 'beta__whoami')) as McpError;
    const unknown = (await refusal(client, 'gamma__whoami')) as McpError;
    expect(denied.code).toBe(unknown.code);
    expect(denied.message).toBe(unknown.message.replace('gamma__whoami', 'beta__whoami'));
    const logged = await callLogs(connectionGuid);
    // The row names the tool as the server's rows do (its own name, its server), where the host's name was beta__whoami.
    expect(logged.find((r) => r.status === 'error' && r.error_message?.includes('filter'))).toMatchObject({
      error_message: expect.stringContaining('whoami'),
      tool_name: 'whoami',
      inbound_server_guid: expect.any(String),
    });
    // A name no server offers keeps the name the host asked for.
    expect(logged.find((r) => r.status === 'error' && r.error_message?.includes('gamma__whoami'))).toMatchObject({ tool_name: 'gamma__whoami' });
  });

  it('an allow filter exposes only what it names; a name the server does not offer is accepted with a hint', async () => {
    const { assignments, client } = await gatewayWith(['alpha']);
    const res = await invoke(t, 'mcp', ws.token, 'modify_gateway_assignment', {
      assignmentGuid: assignments[0],
      toolFilter: { mode: 'allow', tools: ['whoami', 'nothing_like_it*'] },
      toolOverrides: { not_offered: { name: 'renamed' } },
    });
    expect(res.status).toBe(200);
    expect(res.body.toolCurationHint).toMatch(/nothing_like_it\*/);
    expect(res.body.toolCurationHint).toMatch(/not_offered/);
    expect(await toolNames(client)).toEqual(['alpha__whoami']);
    const listed = await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid: res.body.gatewayGuid });
    expect(listed.body.items[0]).toMatchObject({ toolFilter: { mode: 'allow' }, toolOverrides: { not_offered: { name: 'renamed' } } });
    // null clears both.
    const cleared = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', { assignmentGuid: assignments[0], toolFilter: null, toolOverrides: null });
    expect(cleared.body).toMatchObject({ toolFilter: null, toolOverrides: null });
    expect(await toolNames(client)).toHaveLength(4);
  });

  it('an override renames and re-describes for hosts; calls reach the upstream under its own name, which the call log keeps', async () => {
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Overrides ${Math.random().toString(36).slice(2, 7)}` });
    const assigned = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid: gw.body.guid,
      inboundServerGuid: servers.alpha,
      toolOverrides: { search_docs: { name: 'docs_lookup', description: 'Looks things up in the docs' } },
    });
    expect(assigned.status).toBe(201);
    expect(assigned.body.toolOverrides).toEqual({ search_docs: { name: 'docs_lookup', description: 'Looks things up in the docs' } });
    await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid: gw.body.guid, mode: 'when-needed' });
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    const client = await gatewayClient(issued.body.url.replace(t.config.publicBaseUrl, base), issued.body.token);
    clients.push(client);
    const tools = (await client.listTools()).tools;
    expect(tools.map((x) => x.name).sort()).toEqual(['alpha_only', 'docs_lookup', 'search_code', 'whoami']);
    expect(tools.find((x) => x.name === 'docs_lookup')!.description).toBe('Looks things up in the docs');
    expect(text(await client.callTool({ name: 'docs_lookup', arguments: {} }))).toBe('alpha:search_docs');
    // The old name is not offered any more.
    expect(await refusal(client, 'search_docs')).toBeInstanceOf(McpError);
    const logged = await callLogs(issued.body.connectionGuid);
    expect(logged.filter((r) => r.status === 'ok').map((r) => r.tool_name)).toEqual(['search_docs']);
  });

  it('an override colliding with another tool of the gateway is a 409 naming both, and changes nothing', async () => {
    const { assignments } = await gatewayWith(['alpha', 'beta']);
    const sameServer = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', {
      assignmentGuid: assignments[0],
      toolOverrides: { whoami: { name: 'search_code' } },
    });
    expect(sameServer.status).toBe(409);
    expect(sameServer.body.detail).toMatch(/whoami.*search_code/);
    const otherServer = await invoke(t, 'mcp', ws.token, 'modify_gateway_assignment', {
      assignmentGuid: assignments[1],
      toolOverrides: { search_docs: { name: 'alpha_only' } },
    });
    expect(otherServer.status).toBe(409);
    expect(otherServer.body.detail).toMatch(/search_docs of Beta.*alpha_only of Alpha/);
    const after = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', { assignmentGuid: assignments[1] });
    expect(after.body.toolOverrides).toBeNull();
  });

  it.each(SURFACES)(
    "assigning a server whose tool has a name another assignment's override took is a 409 naming both on %s, and creates nothing",
    async (surface) => {
      const { gatewayGuid, assignments } = await gatewayWith(['alpha']);
      const renamed = await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', {
        assignmentGuid: assignments[0],
        toolOverrides: { alpha_only: { name: 'beta_only' } },
      });
      expect(renamed.status).toBe(200);
      const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: servers.beta });
      expect(res.status).toBe(409);
      expect(res.body.detail).toMatch(/tool beta_only of Beta/);
      expect(res.body.detail).toMatch(/tool alpha_only of Alpha, shown as beta_only by an override/);
      const listed = await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid });
      expect(listed.body.items.map((a: any) => a.guid)).toEqual(assignments);
      // Filtered out, the tool shows no name: the same server is accepted.
      const filtered = await invoke(t, surface, ws.token, 'assign_server_to_gateway', {
        gatewayGuid,
        inboundServerGuid: servers.beta,
        toolFilter: { mode: 'deny', tools: ['beta_only'] },
      });
      expect(filtered.status).toBe(surface === 'rest' ? 201 : 200);
      expect(filtered.body.toolFilter).toEqual({ mode: 'deny', tools: ['beta_only'] });
    },
  );

  it.each(SURFACES)("a filter change that shows a tool again under a name another assignment's override took is a 409 on %s", async (surface) => {
    const { gatewayGuid, assignments, client } = await gatewayWith(['alpha']);
    await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', { assignmentGuid: assignments[0], toolOverrides: { search_docs: { name: 'beta_only' } } });
    const beta = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid,
      inboundServerGuid: servers.beta,
      toolFilter: { mode: 'deny', tools: ['beta_*'] },
    });
    expect(beta.status).toBe(201);
    const res = await invoke(t, surface, ws.token, 'modify_gateway_assignment', { assignmentGuid: beta.body.guid, toolFilter: null });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/tool beta_only of Beta.*tool search_docs of Alpha, shown as beta_only by an override/);
    const after = await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid });
    expect(after.body.items[1].toolFilter).toEqual({ mode: 'deny', tools: ['beta_*'] });
    // The check does not depend on the naming mode, so changing it cannot create such a collision: in
    // when-needed mode the one name the override took is still shown once.
    expect((await invoke(t, surface, ws.token, 'set_gateway_tool_naming', { gatewayGuid, mode: 'when-needed' })).status).toBe(200);
    const names = await toolNames(client);
    expect(names.filter((n) => n === 'beta_only')).toHaveLength(1);
  });

  it.each([
    [{ toolFilter: { mode: 'only', tools: [] } }, 'toolFilter.mode'],
    [{ toolFilter: { mode: 'allow', tools: [''] } }, 'toolFilter.tools.0'],
    [{ toolOverrides: { whoami: { name: 'has space' } } }, 'toolOverrides.whoami.name'],
    [{ toolOverrides: { whoami: { title: 'x' } } }, 'toolOverrides.whoami.title'],
  ])('refuses %j with a 400 naming %s', async (input, path) => {
    const { assignments } = await gatewayWith(['alpha']);
    for (const surface of SURFACES) {
      const res = await invoke(t, surface, ws.token, 'modify_gateway_assignment', { assignmentGuid: assignments[0], ...input });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    }
  });

  it('refuses a prototype key in toolOverrides instead of dropping it', async () => {
    const { assignments } = await gatewayWith(['alpha']);
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/svc-admin/assignments/${assignments[0]}`,
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' },
      payload: '{"toolOverrides":{"__proto__":{"name":"x"}}}',
    });
    expect(res.statusCode).toBe(400);
    expect(JSON.stringify(res.json().errors)).toContain('__proto__');
  });

  it('applies the same curation to a host of revision 2026-07-28', async () => {
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Modern curated ${Math.random().toString(36).slice(2, 7)}` });
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid: gw.body.guid,
      inboundServerGuid: servers.alpha,
      toolFilter: { mode: 'allow', tools: ['whoami', 'search_*'] },
      toolOverrides: { search_code: { name: 'code_lookup' } },
    });
    await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid: gw.body.guid, mode: 'when-needed' });
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    const client = new Client2026({ name: 'host-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(
      new Transport2026(new URL(issued.body.url.replace(t.config.publicBaseUrl, base)), {
        requestInit: { headers: { authorization: `Bearer ${issued.body.token}` } },
      }),
    );
    clients.push(client as unknown as Client);
    expect((await client.listTools()).tools.map((x) => x.name).sort()).toEqual(['code_lookup', 'search_docs', 'whoami']);
    expect(text(await client.callTool({ name: 'code_lookup', arguments: {} }))).toBe('alpha:search_code');
    await expect(client.callTool({ name: 'alpha_only', arguments: {} })).rejects.toThrow(/not found/);
  });
});
