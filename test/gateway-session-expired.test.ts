import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayServing, listenLoopback } from './helpers/gateway.js';
import { startAskingUpstream, type AskingUpstream } from './helpers/asking-upstream.js';

/**
 * A 2025 host's session whose upstream session is gone (the upstream restarted) is
 * answered 404, and from then on it is over: MCP's Streamable HTTP transport says a
 * server that terminated a session answers 404 to every request that names it, so a
 * ping or a GET must not still be served in it.
 */
let t: TestApp;
let ws: CreatedWorkspace;
let upstream: AskingUpstream;
let gateway: { url: string; token: string };

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestApp(), startAskingUpstream()]);
  const base = await listenLoopback(t);
  ws = await newWorkspace(t);
  gateway = await gatewayServing(t, ws, base, 'Expiring', [['Asking', upstream.url]]);
}, 120_000);
afterAll(async () => {
  await closeClients();
  await t?.close();
  await upstream?.close();
});

const post = (body: unknown, sessionId?: string) =>
  fetch(gateway.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${gateway.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    },
    body: JSON.stringify(body),
  });

describe('a session whose upstream session expired', () => {
  it('is answered 404 for every later request, a ping and a GET included', async () => {
    const init = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'h', version: '1' } },
    });
    const sessionId = init.headers.get('mcp-session-id')!;
    await init.text();
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId)).status).toBe(202);
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'asking__hold', arguments: { ms: 1 } } };
    const before = await post(call, sessionId);
    expect(before.status).toBe(200);
    expect(await before.text()).toContain('held 1 ms');

    upstream.forgetSessions();
    const expired = await post({ ...call, id: 3 }, sessionId);
    expect(expired.status).toBe(404);
    expect(await expired.text()).toMatch(/Session expired upstream/);

    const ping = await post({ jsonrpc: '2.0', id: 4, method: 'ping' }, sessionId);
    expect(ping.status).toBe(404);
    await ping.text();
    const stream = await fetch(gateway.url, {
      headers: { authorization: `Bearer ${gateway.token}`, accept: 'text/event-stream', 'mcp-session-id': sessionId },
    });
    expect(stream.status).toBe(404);
    await stream.text();

    // A new session works.
    const again = await post({
      jsonrpc: '2.0',
      id: 5,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'h', version: '1' } },
    });
    const renewed = again.headers.get('mcp-session-id')!;
    await again.text();
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, renewed)).text();
    expect(await (await post({ ...call, id: 6 }, renewed)).text()).toContain('held 1 ms');
  });
});
