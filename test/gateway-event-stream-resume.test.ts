import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, gatewayServing, listenLoopback } from './helpers/gateway.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * A 2025 session's GET stream (what it hears besides its answers: here the gateway's
 * own list changes) has event ids and is kept like a POST stream's, and the session's
 * events are still followed while its host is away: the 1.x SDK client, whose GET
 * stream drops, comes back with Last-Event-ID and hears what was said meanwhile. Real
 * peers: that client (reconnecting on its own), the gateway, server-everything behind it.
 */
let t: TestApp;
let ws: CreatedWorkspace;
let everything: Upstream;
let gw: { url: string; token: string };

const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 25 });

beforeAll(async () => {
  [t, everything] = await Promise.all([startTestApp(), startEverything('streamableHttp')]);
  ws = await newWorkspace(t);
  gw = await gatewayServing(t, ws, await listenLoopback(t), 'Resumable events', [['Everything', everything.url]]);
}, 60_000);
afterAll(async () => {
  await closeClients();
  await t?.close();
  await everything?.close();
});

/** A fetch for the host whose GET streams the test can cut, and whose next GET it can hold back (the host away). */
function cuttableFetch() {
  const gets: (string | null)[] = [];
  let opened = 0;
  let cut: AbortController | null = null;
  let held: Promise<void> | null = null;
  const wrapped: typeof fetch = async (input, init) => {
    if ((init?.method ?? 'GET') !== 'GET') return fetch(input, init);
    gets.push(new Headers(init?.headers).get('last-event-id'));
    if (held) await held;
    const own = new AbortController();
    cut = own;
    const res = await fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, own.signal]) : own.signal });
    opened++;
    return res;
  };
  return {
    wrapped,
    gets,
    opened: () => opened,
    /** Cuts the open GET stream and holds the host's next GET until the returned function is called. */
    cutAndHold(): () => void {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      cut!.abort();
      return () => {
        held = null;
        release();
      };
    },
  };
}

describe("a 2025 session's GET stream", () => {
  it('is resumed with Last-Event-ID: the host hears what was said while its stream was down', async () => {
    const net = cuttableFetch();
    const client = await gatewayClient(gw.url, gw.token, { fetch: net.wrapped });
    let heard = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard++);
    await until(() => expect(net.opened()).toBe(1));
    expect(net.gets).toEqual([null]);

    // Any change of the workspace's configuration is a change of the gateway's lists.
    await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Change one' });
    await until(() => expect(heard).toBe(1));

    const release = net.cutAndHold();
    // The host noticed and is coming back, with the id of the last event it had.
    await until(() => expect(net.gets).toHaveLength(2));
    expect(net.gets[1]).toMatch(/^[0-9a-f]+:\d+$/);
    await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Change two, said while the host is away' });
    release();
    await until(() => expect(heard).toBe(2));
    expect(net.gets).toHaveLength(2);

    // The resumed stream goes on live.
    await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Change three' });
    await until(() => expect(heard).toBe(3));
    await client.close();
  });
});
