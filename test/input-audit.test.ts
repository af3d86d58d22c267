import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * Hostile input the fuzz test does not send: prototype keys in a query string (the
 * body parser refuses them, fastify's query parser keeps them), and a value of the
 * wrong type that zod also measures (an empty array for a string with a minimum).
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

const request = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: string) =>
  t.app.inject({
    method,
    url: `/api/v1/svc-admin${url}`,
    headers: { authorization: `Bearer ${ws.token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload }),
  });

describe('prototype keys in the query string', () => {
  it.each(['__proto__=x', '__proto__=a&__proto__=b', 'constructor=x', 'prototype=x'])(
    'DELETE with ?%s is refused naming the key, and deletes nothing',
    async (query) => {
      const team = await invoke(t, 'rest', ws.token, 'create_team', { name: `Kept ${query}` });
      const res = await request('DELETE', `/teams/${team.body.guid}?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual([query.split('=')[0]]);
      const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
      expect(teams.body.items.map((x: { guid: string }) => x.guid)).toContain(team.body.guid);
    },
  );

  it.each(['GET /teams', 'POST /teams'])('%s with ?__proto__=a&__proto__=b names __proto__, not 0 and 1', async (route) => {
    const [method, url] = route.split(' ') as ['GET' | 'POST', string];
    const res = await request(method, `${url}?__proto__=a&__proto__=b`, method === 'POST' ? '{"name":"Never stored"}' : undefined);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: '__proto__', message: 'is not allowed as a key' }]);
    const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
    expect(teams.body.items.map((x: { name: string }) => x.name)).not.toContain('Never stored');
  });
});

describe('a value of the wrong type', () => {
  it.each([
    ['create_team', 'name'],
    ['create_access_token', 'label'],
    ['set_user_role', 'roleGuid'],
  ])('%s with %s: [] is one error, the type, on both surfaces', async (name, field) => {
    const me = (await invoke(t, 'rest', ws.token, 'whoami', {})).body.user.guid;
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, name, { ...(name === 'set_user_role' ? { userGuid: me } : {}), [field]: [] });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: field, message: 'Invalid input: expected string, received array' }]);
    }
  });

  it('get_usage_report with groupBy: "tool_name" is one error, the type (not also "at most three keys"), on both surfaces', async () => {
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, 'get_usage_report', { groupBy: 'tool_name' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: 'groupBy', message: 'Invalid input: expected array, received string' }]);
    }
  });
});

describe('a list request whose cursor is not a string', () => {
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const eras = {
    '2025-11-25': { headers: { 'mcp-protocol-version': '2025-11-25' }, meta: {} },
    '2026-07-28': { headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }, meta: { _meta: envelope } },
  };
  /** The one JSON-RPC message of an answer, sent as JSON or as one SSE event. */
  const messageOf = (payload: string) => JSON.parse(payload.startsWith('{') ? payload : /^data: (.*)$/m.exec(payload)![1]!);

  it.each([
    ['2025-11-25', 5],
    ['2025-11-25', null],
    ['2026-07-28', 5],
    ['2026-07-28', { a: 1 }],
  ] as const)('is invalid params in words on the admin endpoint and at a gateway (%s, cursor %j), never -32603', async (era, cursor) => {
    const gateway = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Cursor ${era} ${JSON.stringify(cursor)}` });
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gateway.body.guid });
    const targets = [
      { url: '/api/v1/svc-admin/mcp', token: ws.token },
      { url: new URL(issued.body.url).pathname, token: issued.body.token as string },
    ];
    for (const { url, token } of targets) {
      const res = await t.app.inject({
        method: 'POST',
        url,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...eras[era].headers },
        payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor, ...eras[era].meta } }),
      });
      const answer = messageOf(res.payload);
      expect(answer.error, url).toEqual({
        code: -32602,
        message: `tools/list params.cursor must be a string, not ${cursor === null ? 'null' : typeof cursor === 'object' ? 'an object' : `a ${typeof cursor}`}.`,
      });
    }
  });
});

describe('a body of another content type', () => {
  it('text/plain holding a JSON object is refused for its content type, not as "not a JSON object", and changes nothing', async () => {
    const gateway = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Plain text' });
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/svc-admin/gateways/${gateway.body.guid}/name`,
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'text/plain' },
      payload: '{"newName":"Renamed"}',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: 'body', message: 'must be sent as content-type application/json' }]);
    expect((await invoke(t, 'rest', ws.token, 'get_gateway', { gatewayGuid: gateway.body.guid })).body.name).toBe('Plain text');
  });

  it('a JSON string body sent as application/json is still "must be a JSON object"', async () => {
    const res = await request('POST', '/teams', '"x"');
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: 'body', message: 'must be a JSON object' }]);
  });
});

describe('JSON-RPC batches on the admin MCP endpoint', () => {
  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_team', arguments: { name: 'From a batch' } } },
    { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 5 } },
  ];
  const send = (headers: Record<string, string>) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/svc-admin/mcp',
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      payload: JSON.stringify(batch),
    });

  it.each(['2025-06-18', '2025-11-25'])('are refused whole under %s (removed in 2025-06-18), and nothing runs', async (version) => {
    const res = await send({ 'mcp-protocol-version': version });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: `JSON-RPC batches are not part of revision ${version} (removed in 2025-06-18): send one message per request.` },
    });
    const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
    expect(teams.body.items.map((x: { name: string }) => x.name)).not.toContain('From a batch');
  });

  it('are still served under 2025-03-26, the revision that has them', async () => {
    const res = await send({ 'mcp-protocol-version': '2025-03-26' });
    expect(res.statusCode).toBe(200);
  });
});
