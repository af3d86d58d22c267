import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/** Contract 8.1: a foreign Origin is refused (403) on both MCP endpoints; no Origin, the service's own and ALLOWED_ORIGINS are served. */
let t: TestApp;
let ws: CreatedWorkspace;

beforeAll(async () => {
  t = await startTestApp({ ALLOWED_ORIGINS: 'https://console.example.com,http://localhost:5173' });
  ws = await newWorkspace(t);
});
afterAll(async () => {
  await t?.close();
});

const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'origin-test', version: '1' } },
};

async function post(url: string, origin: string | undefined, body: unknown, token = ws.token) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(origin === undefined ? {} : { origin }),
    },
    payload: JSON.stringify(body),
  });
}

describe('Origin on the MCP endpoints', () => {
  const admin = '/api/v1/svc-admin/mcp';

  it.each(['http://evil.example.com', 'null', 'http://127.0.0.1:9998', 'https://console.example.com.evil.io'])(
    'refuses Origin %s at the admin endpoint and at a gateway, before authentication',
    async (origin) => {
      const res = await post(admin, origin, LIST);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
      // No token at all: still 403, the origin is checked first.
      const gateway = await post(`/gateways/${newGuid()}/mcp`, origin, INIT, '');
      expect(gateway.statusCode).toBe(403);
      const sse = await t.app.inject({ method: 'GET', url: `/gateways/${newGuid()}/sse`, headers: { origin } });
      expect(sse.statusCode).toBe(403);
    },
  );

  it.each([undefined, 'http://127.0.0.1:9999', 'https://console.example.com', 'http://localhost:5173'])('serves Origin %s', async (origin) => {
    const res = await post(admin, origin, INIT);
    expect(res.statusCode).toBe(200);
    // A gateway that does not exist is a 404 or 401 of its own, not the origin's 403.
    const gateway = await post(`/gateways/${newGuid()}/mcp`, origin, INIT, '');
    expect(gateway.statusCode).not.toBe(403);
  });

  it('leaves REST alone: Origin is not an MCP concern there', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/svc-admin/whoami',
      headers: { authorization: `Bearer ${ws.token}`, origin: 'http://evil.example.com' },
    });
    expect(res.statusCode).toBe(200);
  });
});
