import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { listenLoopback, modernRequest, registerServer, startRelayedReplica } from './helpers/gateway.js';
import { startToolServer, type Upstream } from './helpers/upstreams.js';
import { startModernUpstream } from './helpers/modern-upstream.js';
import { startSessionServer, startWatchedUpstream } from './helpers/watched-upstream.js';

/**
 * `subscriptions/listen` of revision 2026-07-28 at a gateway (contract 8.1): a host's
 * listen stream hears list_changed when its own gateway's configuration changes, in
 * any replica, and nothing of another gateway or workspace.
 */
let t: TestApp;
let base: string;
let replicaApp: FastifyInstance;
let replicaBase: string;
let tools: Upstream;
let modern: Awaited<ReturnType<typeof startModernUpstream>>;
const clients: Client[] = [];
const ALL_LISTS = { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true };
const LIST_CHANGED = ['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed'] as const;

beforeAll(async () => {
  [t, tools, modern] = await Promise.all([startTestApp(), startToolServer('alpha'), startModernUpstream()]);
  base = await listenLoopback(t);
  const replica = await startRelayedReplica(t.runtime.services);
  replicaApp = replica.app;
  replicaBase = replica.base;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await replicaApp?.close();
  await t?.close();
  await Promise.all([tools?.close(), modern?.close()]);
});

interface Listener {
  client: Client;
  heard: string[];
}

/** A gateway of the workspace with the server assigned, and a 2026-07-28 host listening on it through `at` (a replica's base URL). */
async function listeningGateway(ws: CreatedWorkspace, serverGuid: string, at: string) {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Listen ${Math.random().toString(36).slice(2, 7)}` });
  const assigned = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  expect(assigned.status).toBe(201);
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  const url = issued.body.url.replace(t.config.publicBaseUrl, at);
  const listener = await listen(url, issued.body.token);
  return { gatewayGuid: gw.body.guid as string, url, token: issued.body.token as string, ...listener };
}

async function modernClient(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'listening-host', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

/** Opens a listen stream for every list; `heard` collects the list kinds in the order they arrive. */
async function listen(url: string, token: string, filter: Record<string, boolean> = ALL_LISTS): Promise<Listener & { close: () => Promise<void> }> {
  const client = await modernClient(url, token);
  const heard: string[] = [];
  for (const method of LIST_CHANGED) client.setNotificationHandler(method, () => void heard.push(method.split('/')[1]!));
  const subscription = await client.listen(filter);
  return { client, heard, close: () => subscription.close() };
}

const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 25 });

describe('subscriptions/listen at a gateway', () => {
  it("hears its own gateway's changes made through another replica, and nothing of another gateway's or workspace's", async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const alpha = (await registerServer(t, ws, { name: 'Alpha', url: tools.url, authType: 'none' })).serverGuid;
    const withResources = (await registerServer(t, ws, { name: 'Modern', url: modern.url, authType: 'none' })).serverGuid;
    const otherAlpha = (await registerServer(t, other, { name: 'Alpha', url: tools.url, authType: 'none' })).serverGuid;
    const otherWithResources = (await registerServer(t, other, { name: 'Modern', url: modern.url, authType: 'none' })).serverGuid;
    // Hosts listen on the replica; every change goes through the first replica's admin API.
    const a = await listeningGateway(ws, alpha, replicaBase);
    const b = await listeningGateway(ws, alpha, replicaBase);
    const c = await listeningGateway(other, otherAlpha, replicaBase);

    // The naming mode changes tool and prompt names, not resources.
    expect((await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid: a.gatewayGuid, mode: 'when-needed' })).status).toBe(200);
    await until(() => expect(a.heard).toEqual(['tools', 'prompts']));
    expect((await a.client.listTools()).tools.map((x) => x.name)).toContain('whoami');

    // B's own change brings resources too: had B heard of A's change, that would have come first (one
    // stream's notices arrive in order), so B's list is exactly its own.
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: b.gatewayGuid, inboundServerGuid: withResources });
    await until(() => expect(b.heard).toContain('resources'));
    expect(b.heard).toEqual(['tools', 'prompts', 'resources']);

    // Likewise A has heard nothing of B's change: the next notice it hears is of its own.
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: a.gatewayGuid, inboundServerGuid: withResources });
    await until(() => expect(a.heard).toContain('resources'));
    expect(a.heard).toEqual(['tools', 'prompts', 'tools', 'prompts', 'resources']);

    // And the other workspace's host has heard nothing of this workspace.
    await invoke(t, 'rest', other.token, 'assign_server_to_gateway', { gatewayGuid: c.gatewayGuid, inboundServerGuid: otherWithResources });
    await until(() => expect(c.heard).toContain('resources'));
    expect(c.heard).toEqual(['tools', 'prompts', 'resources']);
  });

  it('hears filter and override changes as tools changes only, and a filter asked for only', async () => {
    const ws = await newWorkspace(t);
    const alpha = (await registerServer(t, ws, { name: 'Alpha', url: tools.url, authType: 'none' })).serverGuid;
    const a = await listeningGateway(ws, alpha, base);
    const onlyPrompts = await listen(a.url, a.token, { promptsListChanged: true });
    const assignments = await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid: a.gatewayGuid });
    const assignmentGuid = assignments.body.items[0].guid;
    await invoke(t, 'mcp', ws.token, 'modify_gateway_assignment', { assignmentGuid, toolFilter: { mode: 'deny', tools: ['whoami'] } });
    await until(() => expect(a.heard).toEqual(['tools']));
    await invoke(t, 'rest', ws.token, 'modify_gateway_assignment', { assignmentGuid, toolOverrides: { search_docs: { name: 'docs' } } });
    await until(() => expect(a.heard).toEqual(['tools', 'tools']));
    // Only a prompts change reaches the stream that asked for prompts only.
    await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid: a.gatewayGuid, mode: 'when-needed' });
    await until(() => expect(onlyPrompts.heard).toEqual(['prompts']));
    await until(() => expect(a.heard).toEqual(['tools', 'tools', 'tools', 'prompts']));
  });

  it("merges a 2026-07-28 upstream's own list_changed (through its subscriptions/listen), also of an upstream assigned while it listens", async () => {
    const upstream = await startModernUpstream();
    try {
      const ws = await newWorkspace(t);
      const alpha = (await registerServer(t, ws, { name: 'Alpha', url: tools.url, authType: 'none' })).serverGuid;
      const server = (await registerServer(t, ws, { name: 'Modern', url: upstream.url, authType: 'none' })).serverGuid;
      const gw = await listeningGateway(ws, alpha, base);
      await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.gatewayGuid, inboundServerGuid: server });
      await until(() => expect(gw.heard).toEqual(['tools', 'prompts', 'resources']));
      await until(() => expect(upstream.requests.map((r) => r.method)).toContain('subscriptions/listen'));
      upstream.notify.promptsChanged();
      await until(() => expect(gw.heard).toEqual(['tools', 'prompts', 'resources', 'prompts']));
      upstream.notify.toolsChanged();
      await until(() => expect(gw.heard).toEqual(['tools', 'prompts', 'resources', 'prompts', 'tools']));
    } finally {
      await upstream.close();
    }
  });

  it("opens a 2026-07-28 upstream's listen again when the upstream ends it, and goes on merging its list changes", async () => {
    const upstream = await startModernUpstream();
    try {
      const ws = await newWorkspace(t);
      const server = (await registerServer(t, ws, { name: 'Restarting', url: upstream.url, authType: 'none' })).serverGuid;
      const gw = await listeningGateway(ws, server, base);
      const listens = () => upstream.requests.filter((r) => r.method === 'subscriptions/listen').length;
      await until(() => expect(listens()).toBe(1));
      upstream.dropConnections();
      await until(() => expect(listens()).toBe(2));
      const before = gw.heard.length;
      await until(() => {
        upstream.notify.toolsChanged();
        expect(gw.heard.slice(before)).toContain('tools');
      });
    } finally {
      await upstream.close();
    }
  });

  it('announces a change of every list of an upstream followed again after a gap: the list the host took meanwhile left it out', async () => {
    let upstream = await startModernUpstream();
    const port = Number(new URL(upstream.url).port);
    try {
      const ws = await newWorkspace(t);
      const alpha = (await registerServer(t, ws, { name: 'Alpha', url: tools.url, authType: 'none' })).serverGuid;
      const server = (await registerServer(t, ws, { name: 'Returning', url: upstream.url, authType: 'none' })).serverGuid;
      const gw = await listeningGateway(ws, alpha, base);
      await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.gatewayGuid, inboundServerGuid: server });
      await until(() => expect(upstream.requests.map((r) => r.method)).toContain('subscriptions/listen'));
      await until(() => expect(gw.heard).toEqual(['tools', 'prompts', 'resources']));
      await upstream.close();
      // Down: the list leaves it out, and nothing is announced while it stays down.
      await until(async () => expect((await gw.client.listTools()).tools.map((x) => x.name)).not.toContain('returning__shout'));
      expect((await gw.client.listTools()).tools.map((x) => x.name)).toContain('alpha__whoami');
      expect(gw.heard).toEqual(['tools', 'prompts', 'resources']);
      upstream = await startModernUpstream({ port });
      await until(() => expect(gw.heard.slice(3).sort()).toEqual(['prompts', 'resources', 'tools']));
      expect((await gw.client.listTools()).tools.map((x) => x.name)).toContain('returning__shout');
    } finally {
      await upstream.close();
    }
  });

  it("relays the updates of the resources its listen subscribes to, through the upstream's own listen, and none other", async () => {
    const watched = await startWatchedUpstream();
    try {
      const ws = await newWorkspace(t);
      const server = (await registerServer(t, ws, { name: 'Watched', url: watched.url, authType: 'none' })).serverGuid;
      const gw = await listeningGateway(ws, server, base);
      const host = await modernClient(gw.url, gw.token);
      const updates: string[] = [];
      host.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
      await host.listen({ resourceSubscriptions: ['watch://alpha'] });
      // The upstream is asked for that URI by the gateway's own listen for this stream.
      await until(() => expect(watched.listens).toContainEqual(['watch://alpha']));
      await host.callTool({ name: 'watched__touch', arguments: { uri: 'watch://beta' } });
      await host.callTool({ name: 'watched__touch', arguments: { uri: 'watch://alpha' } });
      await until(() => expect(updates).toEqual(['watch://alpha']));
      await new Promise((r) => setTimeout(r, 300));
      expect(updates).toEqual(['watch://alpha']);
    } finally {
      await watched.close();
    }
  });

  it("relays the updates of a 2025 upstream's resource its listen subscribes to, subscribed in the gateway's own session", async () => {
    const sessions = await startSessionServer({ subscribable: true });
    try {
      const ws = await newWorkspace(t);
      const server = (await registerServer(t, ws, { name: 'Sessions', url: sessions.url, authType: 'none' })).serverGuid;
      const gw = await listeningGateway(ws, server, base);
      const host = await modernClient(gw.url, gw.token);
      const updates: string[] = [];
      host.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
      await host.listen({ resourceSubscriptions: ['sess://doc'] });
      await until(() => expect(updates).toEqual(['sess://doc']));
    } finally {
      await sessions.close();
    }
  });

  it("merges a 2025 upstream's own list_changed (through a session of its own) and ends that session when the host stops listening", async () => {
    const upstream = await startSessionServer();
    try {
      const ws = await newWorkspace(t);
      const server = (await registerServer(t, ws, { name: 'Sessions', url: upstream.url, authType: 'none' })).serverGuid;
      const deletesBefore = upstream.seen.deletes;
      const gw = await listeningGateway(ws, server, replicaBase);
      // The gateway's session stream opens in the background: tell the upstream's sessions until the notice arrives.
      await until(() => {
        upstream.changeTools();
        expect(gw.heard).toContain('tools');
      });
      expect(new Set(gw.heard)).toEqual(new Set(['tools']));
      await gw.close();
      await until(() => expect(upstream.seen.deletes).toBeGreaterThan(deletesBefore));
    } finally {
      await upstream.close();
    }
  });

  it('marks lists and reads private to the caller (cacheScope), even when the upstream says public', async () => {
    const publicUpstream = await startModernUpstream({ publicCache: true });
    try {
      const ws = await newWorkspace(t);
      const server = (await registerServer(t, ws, { name: 'Public', url: publicUpstream.url, authType: 'none' })).serverGuid;
      const gw = await listeningGateway(ws, server, base);
      // The upstream itself marks its results public.
      expect((await post2026(publicUpstream.url, null, 'resources/read', { uri: 'modern://motd' })).cacheScope).toBe('public');
      expect((await post2026(publicUpstream.url, null, 'tools/list')).cacheScope).toBe('public');
      for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
        const result = await post2026(gw.url, gw.token, method);
        expect(result.cacheScope, method).toBe('private');
        expect(typeof result.ttlMs, method).toBe('number');
      }
      const read = await post2026(gw.url, gw.token, 'resources/read', { uri: 'modern://motd' });
      expect(read.contents).toEqual([{ uri: 'modern://motd', text: 'hello from 2026' }]);
      expect(read.cacheScope).toBe('private');
    } finally {
      await publicUpstream.close();
    }
  });
});

/** One raw 2026-07-28 request, to see the result's cache fields as sent. */
async function post2026(url: string, token: string | null, method: string, params: Record<string, unknown> = {}) {
  const { body } = await modernRequest({ url, token }, method, params);
  if (!body.result) throw new Error(`${method}: ${JSON.stringify(body)}`);
  return body.result as { cacheScope?: string; ttlMs?: number; contents?: unknown[] };
}
