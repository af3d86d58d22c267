import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayServing, listenLoopback } from './helpers/gateway.js';
import { captureAlerts } from './helpers/servers.js';
import { startPickyServer, type Upstream } from './helpers/upstreams.js';
import type { NewAlert } from '../src/core/alerts.js';

/**
 * An upstream that refuses a request as malformed (HTTP 400 with a JSON-RPC error) has
 * not failed: the host hears the refusal in the upstream's words, as an invalid
 * request, and no upstream_call_failed is counted or raised (a trial, session 25, made
 * a healthy upstream alert by sending it malformed requests through the gateway).
 */
let t: TestApp;
let alerts: NewAlert[];
let upstream: Upstream;

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestApp(), startPickyServer()]);
  alerts = captureAlerts(t);
}, 60_000);
afterAll(async () => {
  await closeClients();
  await t?.close();
  await upstream?.close();
});

describe('a 2025 upstream refusing a request as malformed', () => {
  it('is the host request refused, in the upstream words, and never counted as the upstream failing', async () => {
    const ws = await newWorkspace(t);
    const gw = await gatewayServing(t, ws, await listenLoopback(t), 'Picky', [['Picky', upstream.url]]);
    const call = async (name: string) => {
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } }),
      });
      return (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
    };
    // More refusals than the alert needs (5 failures making half the calls within a minute).
    for (let i = 0; i < 6; i++)
      expect((await call('picky__picky')).error).toMatchObject({
        code: -32600,
        message: 'Server picky refused the request: picky refuses these params',
        data: { upstreamStatus: 400 },
      });
    expect((await call('picky__whoami')).result).toBeDefined();
    await new Promise((r) => setTimeout(r, 200));
    expect(alerts.filter((a) => a.organizationGuid === ws.organizationGuid && a.code === 'upstream_call_failed')).toEqual([]);
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { outbound_gateway_guid: gw.gatewayGuid }, take: 50 });
    expect(logs.body.items.map((r: { error_message: string }) => r.error_message)).toContain('Server picky refused the request: picky refuses these params');
  });
});
