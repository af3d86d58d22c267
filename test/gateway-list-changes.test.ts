import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, legacySseClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { startSessionServer, startWatchedUpstream, type WatchedUpstream } from './helpers/watched-upstream.js';

/**
 * A 2026-07-28 upstream's own list changes reach a 2025 host's event stream (issue 12,
 * bridging): a 2026-07-28 upstream has no stream of a session, so the host's GET stream
 * follows it with one `subscriptions/listen` asking for the list changes its
 * capabilities offer, joined by the session's resource subscriptions on it. A host on
 * the legacy HTTP+SSE transport hears the same on its one stream. Real peers
 * on 127.0.0.1: the 1.x SDK client as the host (it opens its GET stream after
 * initialize), v2-SDK 2026-07-28-only upstreams (one whose tool list grows on a tool
 * call, one that declares no list changes), and a 1.x SDK 2025 upstream with sessions.
 */
let t: TestApp;
let ws: CreatedWorkspace;
let watched: WatchedUpstream;
let quiet: WatchedUpstream;
let sessions: Awaited<ReturnType<typeof startSessionServer>>;
/** The gateway of Watched and Sessions, and the gateway of Quiet (no list changes offered). */
const at = { lively: { url: '', token: '', connectionGuid: '' }, quiet: { url: '', token: '', connectionGuid: '' } };
const hosts: Client[] = [];

const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 25 });
const LISTS_OF_WATCHED = { toolsListChanged: true, resourcesListChanged: true };

beforeAll(async () => {
  [t, watched, quiet, sessions] = await Promise.all([
    startTestApp(),
    startWatchedUpstream(),
    startWatchedUpstream({ listChanged: false }),
    startSessionServer(),
  ]);
  const base = await listenLoopback(t);
  ws = await newWorkspace(t);
  for (const [key, servers] of [
    ['lively', { Watched: watched.url, Sessions: sessions.url }],
    ['quiet', { Quiet: quiet.url }],
  ] as const) {
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Lists ${key}` });
    for (const [name, url] of Object.entries(servers)) {
      const { serverGuid } = await registerServer(t, ws, { name, url, authType: 'none' });
      await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
    }
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    at[key] = { token: issued.body.token, connectionGuid: issued.body.connectionGuid, url: issued.body.url.replace(t.config.publicBaseUrl, base) };
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await Promise.all([watched?.close(), quiet?.close(), sessions?.close()]);
});

/** A 1.x SDK host on a gateway: the list changes it hears ('tools', 'prompts', 'resources') and the resource updates, in order. */
async function host(
  gateway: { url: string; token: string },
  transport: 'streamable' | 'legacy-sse' = 'streamable',
): Promise<{ client: Client; heard: string[]; updates: string[] }> {
  const client =
    transport === 'legacy-sse' ? await legacySseClient(gateway.url.replace(/\/mcp$/, '/sse'), gateway.token) : await gatewayClient(gateway.url, gateway.token);
  hosts.push(client);
  const heard: string[] = [];
  const updates: string[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.push('tools'));
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void heard.push('prompts'));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void heard.push('resources'));
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  return { client, heard, updates };
}

/**
 * The host ends its session (DELETE) and goes: the gateway stops following the session at once. A host that only
 * drops its connection is followed a while longer, for it may resume (gateway-event-stream-resume.test.ts).
 */
async function leave(client: Client): Promise<void> {
  const transport = client.transport as { terminateSession?: () => Promise<void> } | undefined;
  await transport?.terminateSession?.();
  await client.close();
}

async function call(client: Client, suffix: string, args: Record<string, unknown>): Promise<void> {
  const tool = (await client.listTools()).tools.find((x) => x.name.endsWith(suffix))!;
  await client.callTool({ name: tool.name, arguments: args });
}

describe("a 2026-07-28 upstream's own list changes on a 2025 host's event stream", () => {
  it('reach the host: its tools/list_changed after the upstream grew a tool, through a listen asking for the lists it offers', async () => {
    const { client, heard } = await host(at.lively);
    await until(() => expect(watched.openListens()).toBe(1));
    // Tools and resources, which it declares listChanged for; not prompts (it offers none); no resources subscribed.
    expect(watched.filters).toEqual([LISTS_OF_WATCHED]);
    expect(heard).toEqual([]);

    await call(client, 'grow', { name: 'sprout' });
    await until(() => expect(heard).toEqual(['tools']));
    expect((await client.listTools()).tools.map((x) => x.name)).toContainEqual(expect.stringMatching(/sprout$/));

    await leave(client);
    await until(() => expect(watched.openListens()).toBe(0));
  });

  it("share one listen per upstream with the session's resource subscriptions, which follows both", async () => {
    const { client, heard, updates } = await host(at.lively);
    await until(() => expect(watched.openListens()).toBe(1));
    await client.subscribeResource({ uri: 'watch://alpha' });
    expect(watched.filters.at(-1)).toEqual({ ...LISTS_OF_WATCHED, resourceSubscriptions: ['watch://alpha'] });
    // The list-only listen is closed once the joined one is acknowledged: still one listen.
    await until(() => expect(watched.openListens()).toBe(1));

    await call(client, 'grow', { name: 'bud' });
    await until(() => expect(heard).toEqual(['tools']));
    await call(client, 'touch', { uri: 'watch://alpha' });
    await until(() => expect(updates).toEqual(['watch://alpha']));

    // Unsubscribed, the listen goes on for the list changes.
    await client.unsubscribeResource({ uri: 'watch://alpha' });
    expect(watched.filters.at(-1)).toEqual(LISTS_OF_WATCHED);
    await until(() => expect(watched.openListens()).toBe(1));
    await call(client, 'grow', { name: 'leaf' });
    await until(() => expect(heard).toEqual(['tools', 'tools']));

    await leave(client);
    await until(() => expect(watched.openListens()).toBe(0));
  });

  it('ask an upstream that offers no list changes for none: it is followed only for the resources subscribed on it', async () => {
    const { client } = await host(at.quiet);
    await client.subscribeResource({ uri: 'watch://beta' });
    await until(() => expect(quiet.openListens()).toBe(1));
    expect(quiet.filters).toEqual([{ resourceSubscriptions: ['watch://beta'] }]);
    await client.unsubscribeResource({ uri: 'watch://beta' });
    await until(() => expect(quiet.openListens()).toBe(0));
    expect(quiet.filters).toHaveLength(1);
    await leave(client);
  });

  it('open a listen the upstream ended again, a second later, announce a change of its lists (what it said meanwhile is lost), and the host goes on hearing them', async () => {
    const { client, heard } = await host(at.lively);
    await until(() => expect(watched.openListens()).toBe(1));
    const sent = watched.filters.length;
    watched.endListens();
    await until(() => expect(watched.filters.length).toBe(sent + 1));
    await until(() => expect(watched.openListens()).toBe(1));
    expect(watched.filters.at(-1)).toEqual(LISTS_OF_WATCHED);
    // The lists it offers: tools and resources, not prompts.
    await until(() => expect(heard).toEqual(['tools', 'resources']));
    await call(client, 'grow', { name: 'regrown' });
    await until(() => expect(heard).toEqual(['tools', 'resources', 'tools']));
    await leave(client);
    await until(() => expect(watched.openListens()).toBe(0));
  });

  it("leave a 2025 upstream's list changes to its own session stream, as before", async () => {
    const { client, heard } = await host(at.lively);
    const gets = sessions.seen.gets;
    // The host's stream opens the upstream session's stream in the background: tell the sessions until the notice arrives.
    await until(() => {
      sessions.changeTools();
      expect(heard).toContain('tools');
    });
    expect(new Set(heard)).toEqual(new Set(['tools']));
    expect(sessions.seen.gets).toBeGreaterThan(gets);
    await leave(client);
  });

  it("follow a 2025 upstream's session stream again when it is cut (a proxy ending an idle stream), announcing a change of its lists", async () => {
    const { client, heard } = await host(at.lively);
    const gets = sessions.seen.gets;
    await until(() => expect(sessions.seen.gets).toBeGreaterThan(gets));
    const opened = sessions.seen.gets;
    sessions.cutStreams();
    await until(() => expect(sessions.seen.gets).toBeGreaterThan(opened));
    // Sessions offers tools alone: what it said while the stream was down is lost, so its tools are announced.
    await until(() => expect(heard).toEqual(['tools']));
    await until(() => {
      sessions.changeTools();
      expect(heard.length).toBeGreaterThan(1);
    });
    expect(new Set(heard)).toEqual(new Set(['tools']));
    await leave(client);
  });
});

describe("a legacy HTTP+SSE host's stream", () => {
  it("carries what the GET stream does: a 2026-07-28 upstream's list changes and subscribed resources, a 2025 upstream's own list changes, the gateway's own", async () => {
    const { client, heard, updates } = await host(at.lively, 'legacy-sse');
    await until(() => expect(watched.openListens()).toBe(1));
    expect(watched.filters.at(-1)).toEqual(LISTS_OF_WATCHED);

    await call(client, 'grow', { name: 'twig' });
    await until(() => expect(heard).toEqual(['tools']));
    await client.subscribeResource({ uri: 'watch://gamma' });
    await call(client, 'touch', { uri: 'watch://gamma' });
    await until(() => expect(updates).toEqual(['watch://gamma']));

    await until(() => {
      sessions.changeTools();
      expect(heard.length).toBeGreaterThan(1);
    });
    // Only the workspace's own configuration change speaks of prompts: no upstream here offers any.
    expect(heard).not.toContain('prompts');
    await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Another gateway' });
    await until(() => expect(heard).toContain('prompts'));

    // The stream is the session: closed, its listens and subscriptions end.
    await leave(client);
    await until(() => expect(watched.openListens()).toBe(0));
  });
  it('serves and follows the new session when the host initializes again on the same stream, the former one no more', async () => {
    const stream = await rawLegacyStream(at.lively.url.replace(/\/mcp$/, '/sse'), at.lively.token);
    try {
      const endpoint = await vi.waitFor(
        () => {
          const first = stream.events.find((e) => e.event === 'endpoint');
          expect(first).toBeDefined();
          return first!.data;
        },
        { timeout: 15_000, interval: 25 },
      );
      const post = async (id: number, method: string, params: Record<string, unknown>) => {
        const res = await fetch(new URL(endpoint, at.lively.url), {
          method: 'POST',
          headers: { authorization: `Bearer ${at.lively.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        });
        expect(res.status).toBe(202);
        await until(() => expect(stream.messages().some((m) => m.id === id && m.result)).toBe(true));
      };
      const hello = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-legacy-host', version: '1.0.0' } };
      const since = Date.now();
      await post(1, 'initialize', hello);
      await post(2, 'initialize', hello);
      await post(3, 'tools/list', {});
      // Each row names the session it was served in: the second initialize in the first session, tools/list in the second.
      await t.runtime.services.callLogs.flush();
      const rows = await (
        await t.runtime.services.clickhouse.client.query({
          query:
            "SELECT method, session_id FROM call_logs WHERE gateway_connection_guid = {c:String} AND created_at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC') ORDER BY created_at",
          query_params: { c: at.lively.connectionGuid, since },
          format: 'JSONEachRow',
        })
      ).json<{ method: string; session_id: string }>();
      expect(rows.map((r) => r.method)).toEqual(['initialize', 'initialize', 'tools/list']);
      const [first, second, list] = rows.map((r) => r.session_id);
      expect(first).toBe('');
      expect(second).not.toBe('');
      expect(list).not.toBe('');
      expect(list).not.toBe(second);
      const toolChanges = () => stream.messages().filter((m) => m.method === 'notifications/tools/list_changed').length;
      // Each configuration change is heard once: the first session's following ended with the second initialize.
      await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Changed once' });
      await until(() => expect(toolChanges()).toBeGreaterThanOrEqual(1));
      await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Changed twice' });
      await until(() => expect(toolChanges()).toBeGreaterThanOrEqual(2));
      expect(toolChanges()).toBe(2);
    } finally {
      await stream.close();
    }
  });
});

/** A legacy HTTP+SSE stream read by hand: its events as they come, and the JSON-RPC messages among them. */
async function rawLegacyStream(url: string, token: string) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
  expect(res.status).toBe(200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: { event?: string; data: string }[] = [];
  let buffer = '';
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const event: { event?: string; data: string } = { data: '' };
        for (const line of buffer.slice(0, end).split('\n')) {
          if (line.startsWith('event: ')) event.event = line.slice('event: '.length);
          else if (line.startsWith('data: ')) event.data += line.slice('data: '.length);
        }
        buffer = buffer.slice(end + 2);
        events.push(event);
      }
    }
  })();
  return {
    events,
    messages: () => events.filter((e) => e.event !== 'endpoint' && e.data).map((e) => JSON.parse(e.data) as { id?: number; method?: string; result?: unknown }),
    close: () => reader.cancel(),
  };
}
