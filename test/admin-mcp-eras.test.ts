import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, mcp2026Client, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * The admin MCP endpoint serves revision 2026-07-28 and the 2025 ones on one URL
 * (contract 8.1): a host pinned to 2026-07-28 discovers and calls tools with no
 * handshake; a 2025 host initializes as before; malformed calls get a readable
 * -32602 in both.
 */
let t: TestApp;
let ws: CreatedWorkspace;

beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/svc-admin/mcp',
    headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    payload: JSON.stringify(body),
  });

/** The JSON-RPC message of an answer, whether it came as JSON or as one SSE event. */
const messageOf = (payload: string) =>
  JSON.parse(
    payload.startsWith('{')
      ? payload
      : payload
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
  );

describe('the admin MCP endpoint in both eras', () => {
  it('a host pinned to 2026-07-28 lists and calls tools without initialize', async () => {
    const client = await mcp2026Client(t, ws.token);
    const tools = await client.listTools();
    expect(tools.tools.map((x) => x.name)).toContain('get_usage_report');
    const who = await client.callTool({ name: 'whoami', arguments: {} });
    expect((who.structuredContent as any).user.emailAddress).toMatch(/@/);
    await client.close();
  });

  it.each([
    [{ arguments: null }, /arguments must be an object/],
    [{ arguments: [1, 2] }, /not an array/],
    [{ arguments: 'x' }, /not a string/],
    [{}, /needs params.name/],
  ])('a tools/call with params %j is invalid params in words', async (params, message) => {
    const res = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: Object.keys(params).length === 0 ? {} : { name: 'whoami', ...params } });
    const answer = messageOf(res.payload);
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toMatch(message);
    expect(answer.error.message).not.toMatch(/invalid_type|"path"/);
  });

  it.each(['initialize', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'])(
    'a 2026-07-28 request of %s, which that revision dropped, is method not found (HTTP 404), not invalid params',
    async (method) => {
      const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
      const res = await post({ jsonrpc: '2.0', id: 500, method, params: { _meta: envelope } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method });
      expect(res.statusCode).toBe(404);
      expect(messageOf(res.payload)).toMatchObject({ id: 500, error: { code: -32601 } });
    },
  );

  // The endpoint serves tools only: a method it does not serve is not found, whatever its params (its params check would say -32602).
  it.each([
    ['logging/setLevel', {}],
    ['logging/setLevel', { level: 'loud' }],
    ['logging/setLevel', { level: 'info' }],
    ['completion/complete', {}],
    ['completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: 'v' } }],
    ['prompts/get', {}],
    ['resources/read', {}],
    ['resources/subscribe', { uri: 7 }],
    ['prompts/list', { cursor: 1 }],
  ])('a 2025 %s with params %j, a method the endpoint does not serve, is method not found', async (method, params) => {
    const res = await post({ jsonrpc: '2.0', id: 8, method, params }, { 'mcp-protocol-version': '2025-11-25' });
    expect(messageOf(res.payload)).toMatchObject({ id: 8, error: { code: -32601 } });
  });
});
