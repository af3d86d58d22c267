import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_ARRIVAL_MS } from '../src/http/app.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, rest, startTestApp, type TestApp } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';

/**
 * What the service's own log and connections give away to a careless or hostile
 * client (found by a security trial, session 26): a token sent in a query string was
 * written to the request log whole, and a body sent a byte at a time held its
 * connection for ever.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

describe('the service log', () => {
  it('masks a token sent in a query string, on the admin interface and at a gateway', async () => {
    const ws = await newWorkspace(t);
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Logged' })).body;
    const issued = (await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.guid })).body;
    expect((await rest(t, null, 'GET', `/api/v1/svc-admin/whoami?access_token=${ws.token}`)).status).toBe(401);
    const gatewayPath = `${new URL(issued.url).pathname}?token=${issued.token}&api_key=plain-key-value`;
    expect((await rest(t, null, 'POST', gatewayPath, { jsonrpc: '2.0', id: 1, method: 'ping' })).status).toBe(401);
    const logged = t.httpLog.join('\n');
    expect(logged).toContain('access_token=[REDACTED]');
    expect(logged).toContain('api_key=[REDACTED]');
    assertNeverLeaked(t, [ws.token, issued.token, 'plain-key-value']);
  });
});

describe('connections', () => {
  // Node's server closes a connection whose request has not arrived whole by then (it checks every 30 s: not waited for here).
  it('give a client a bounded time to send its whole request', async () => {
    await t.app.listen({ port: await freePort(), host: '127.0.0.1' });
    expect(t.app.server.requestTimeout).toBe(REQUEST_ARRIVAL_MS);
  });
});
