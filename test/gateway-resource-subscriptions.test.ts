import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { MAX_SUBSCRIBED_URI_CHARS, MAX_SUBSCRIPTIONS_PER_SESSION } from '../src/gateway/host-subscriptions.js';
import { closeClients, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, gatewayServing, listenLoopback } from './helpers/gateway.js';
import { startSubscribable2025Upstream, startWatchedUpstream, type WatchedUpstream } from './helpers/watched-upstream.js';
import type { Upstream } from './helpers/upstreams.js';

/**
 * A 2025 host's resources/subscribe to a resource of a 2026-07-28 upstream, which has
 * no such method (issue 12, bridging): the gateway answers it, keeps the session's
 * subscriptions, and the session's event stream (GET) follows the upstream through a
 * `subscriptions/listen` carrying the subscribed URIs, relaying
 * `notifications/resources/updated`. Real peers on 127.0.0.1: the 1.x SDK client as
 * the host, a v2-SDK 2026-07-28-only upstream whose resources change on a tool call,
 * and a 1.x SDK 2025 upstream whose own subscriptions still reach it.
 */
let t: TestApp;
let ws: CreatedWorkspace;
let watched: WatchedUpstream;
let old: Upstream & { seen: string[] };
let url: string;
let token: string;
const hosts: Client[] = [];

const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 25 });

beforeAll(async () => {
  [t, watched, old] = await Promise.all([startTestApp(), startWatchedUpstream(), startSubscribable2025Upstream()]);
  const base = await listenLoopback(t);
  ws = await newWorkspace(t);
  ({ token, url } = await gatewayServing(t, ws, base, 'Subscriptions', [
    ['Watched', watched.url],
    ['Old', old.url],
  ]));
}, 120_000);

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await watched?.close();
  await old?.close();
});

/** A 1.x SDK host on the gateway; the URIs of the resources/updated notifications it gets, in order. */
async function host(): Promise<{ client: Client; updates: string[] }> {
  const client = await gatewayClient(url, token);
  hosts.push(client);
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  return { client, updates };
}

async function touch(client: Client, uri: string): Promise<void> {
  const tool = (await client.listTools()).tools.find((x) => x.name.endsWith('touch'))!;
  await client.callTool({ name: tool.name, arguments: { uri } });
}

/** One raw JSON-RPC request of a 2025 host (no SDK: no event stream of its own). */
async function post(body: Record<string, unknown>, sessionId?: string): Promise<{ sessionId: string | null; answer: Record<string, any> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...body }),
  });
  return { sessionId: res.headers.get('mcp-session-id'), answer: (await res.json()) as Record<string, any> };
}

describe("a 2025 host's resource subscriptions to a 2026-07-28 upstream", () => {
  it('are answered by the gateway and followed through the upstream listen: updates of the subscribed URIs only, none after unsubscribe', async () => {
    const { client, updates } = await host();
    expect(await client.subscribeResource({ uri: 'watch://alpha' })).toEqual({});
    // The host's event stream follows the upstream with the subscription, in the one listen that also asks for its list changes.
    await until(() => expect(watched.openListens()).toBe(1));
    expect(watched.filters.at(-1)).toEqual({ toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['watch://alpha'] });

    await touch(client, 'watch://alpha');
    await until(() => expect(updates).toEqual(['watch://alpha']));
    expect((await client.readResource({ uri: 'watch://alpha' })).contents[0]).toMatchObject({ text: 'watch://alpha v2' });

    // A subscription made while the stream is open takes effect before its answer: the listen is opened again with both URIs.
    await client.subscribeResource({ uri: 'watch://beta' });
    expect(watched.listens.at(-1)).toEqual(['watch://alpha', 'watch://beta']);
    await touch(client, 'watch://beta');
    await until(() => expect(updates).toEqual(['watch://alpha', 'watch://beta']));

    // Unsubscribed: alpha's update does not come, beta's (sent after it, on the same listen) does.
    expect(await client.unsubscribeResource({ uri: 'watch://alpha' })).toEqual({});
    expect(watched.listens.at(-1)).toEqual(['watch://beta']);
    await touch(client, 'watch://alpha');
    await touch(client, 'watch://beta');
    await until(() => expect(updates).toEqual(['watch://alpha', 'watch://beta', 'watch://beta']));

    // The last one gone, the upstream listen carries the list changes only: an update has nowhere to go.
    await client.unsubscribeResource({ uri: 'watch://beta' });
    expect(watched.filters.at(-1)).toEqual({ toolsListChanged: true, resourcesListChanged: true });
    await until(() => expect(watched.openListens()).toBe(1));
    await touch(client, 'watch://beta');
    await client.ping();
    expect(updates).toEqual(['watch://alpha', 'watch://beta', 'watch://beta']);
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    await client.close();
    await until(() => expect(watched.openListens()).toBe(0));
  });

  // A dropped event stream no longer ends them: the host may resume it, and hear the updates it missed (gateway-event-stream-resume.test.ts).
  it('end with the session (DELETE), the event stream dropped before or not', async () => {
    const first = await host();
    const transport = first.client.transport as StreamableHTTPClientTransport;
    await first.client.subscribeResource({ uri: 'watch://alpha' });
    await until(() => expect(watched.openListens()).toBe(1));
    const sessionId = transport.sessionId!;
    await first.client.close();
    const ended = await fetch(url, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId } });
    expect(ended.status).toBe(200);
    await until(() => expect(watched.openListens()).toBe(0));

    const second = await host();
    await second.client.subscribeResource({ uri: 'watch://alpha' });
    await until(() => expect(watched.openListens()).toBe(1));
    await (second.client.transport as StreamableHTTPClientTransport).terminateSession();
    await until(() => expect(watched.openListens()).toBe(0));
  });

  it("leave a 2025 upstream's own subscriptions to it, as before", async () => {
    const { client } = await host();
    const subscribing = () => watched.listens.filter((uris) => uris.length > 0).length;
    const listens = subscribing();
    await client.subscribeResource({ uri: 'old://gamma' });
    await client.unsubscribeResource({ uri: 'old://gamma' });
    expect(old.seen).toEqual(['subscribe old://gamma', 'unsubscribe old://gamma']);
    expect(subscribing()).toBe(listens);
  });

  it('are refused in words where they cannot be kept: without a session, too many, too long a URI', async () => {
    const sessionless = await post({ method: 'resources/subscribe', params: { uri: 'watch://alpha' } });
    expect(sessionless.answer.error).toMatchObject({ code: -32600, message: expect.stringMatching(/needs a session/) });

    const init = await post({ method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const sessionId = init.sessionId!;
    expect(sessionId).toBeTruthy();
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) {
      const { answer } = await post({ method: 'resources/subscribe', params: { uri: `watch://item/${i}` } }, sessionId);
      expect(answer.result).toEqual({});
    }
    // Subscribing again to one already held is no new subscription.
    expect((await post({ method: 'resources/subscribe', params: { uri: 'watch://item/0' } }, sessionId)).answer.result).toEqual({});
    const tooMany = await post({ method: 'resources/subscribe', params: { uri: 'watch://item/extra' } }, sessionId);
    expect(tooMany.answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(/at most 100 resources/) });
    await post({ method: 'resources/unsubscribe', params: { uri: 'watch://item/0' } }, sessionId);
    expect((await post({ method: 'resources/subscribe', params: { uri: 'watch://item/extra' } }, sessionId)).answer.result).toEqual({});

    const long = await post({ method: 'resources/subscribe', params: { uri: `watch://item/${'x'.repeat(MAX_SUBSCRIBED_URI_CHARS)}` } }, sessionId);
    expect(long.answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(/params\.uri is longer than/) });
  });
});
