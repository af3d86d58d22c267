import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * Hostile input on the admin MCP endpoint (and, where one rule serves both, at a
 * gateway): each is answered in words naming what is wrong, as the gateway answers it.
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

const ADMIN_MCP = '/api/v1/svc-admin/mcp';
const post = (url: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    payload: JSON.stringify(body),
  });
/** The one JSON-RPC message of an answer, sent as JSON or as one SSE event. */
const messageOf = (payload: string) => JSON.parse(payload.startsWith('{') ? payload : /^data: (.*)$/m.exec(payload)![1]!);
/** A gateway's connect path and its token. */
const newGateway = async (name: string) => {
  const gateway = await invoke(t, 'rest', ws.token, 'create_gateway', { name });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gateway.body.guid });
  return { url: new URL(issued.body.url).pathname, token: issued.body.token as string };
};

describe('an MCP-Protocol-Version header naming no revision', () => {
  it.each(['banana', '2025-13-99'])('%s is refused as unsupported by the admin endpoint, in the gateway’s words', async (version) => {
    const gateway = await newGateway(`Version ${version}`);
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    const atGateway = await post(gateway.url, gateway.token, list, { 'mcp-protocol-version': version });
    const atAdmin = await post(ADMIN_MCP, ws.token, list, { 'mcp-protocol-version': version });
    expect(atAdmin.statusCode).toBe(400);
    expect(atAdmin.json().error.message).toMatch(new RegExp(`^Bad Request: Unsupported protocol version: ${version} \\(supported versions: .*2025-11-25`));
    expect({ status: atAdmin.statusCode, body: atAdmin.json() }).toEqual({ status: atGateway.statusCode, body: atGateway.json() });
  });
});

describe('a field with no name', () => {
  it('GET /teams?= and tools/call with arguments {"": 1} say it in words, on both surfaces', async () => {
    const expected = { path: '', message: 'a field with an empty name is not allowed' };
    const rest = await t.app.inject({ method: 'GET', url: '/api/v1/svc-admin/teams?=', headers: { authorization: `Bearer ${ws.token}` } });
    expect(rest.statusCode).toBe(400);
    expect(rest.json()).toMatchObject({ code: 'validation_failed', detail: 'input: a field with an empty name is not allowed', errors: [expected] });
    const two = await t.app.inject({ method: 'GET', url: '/api/v1/svc-admin/teams?=&zz=1', headers: { authorization: `Bearer ${ws.token}` } });
    expect(two.json().detail).toBe('2 invalid parameters: (a field with an empty name), zz');
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, 'create_team', { name: 'Never stored', '': 1 });
      expect(res.status, surface).toBe(400);
      expect(res.body.errors, surface).toEqual([expected]);
    }
  });
});

describe('an unknown tool with a long name', () => {
  it('is named cut to 200 bytes with an ellipsis, on a character boundary, by the admin endpoint and a gateway', async () => {
    const gateway = await newGateway('Long names');
    // 'é' is two bytes: a cut at 200 bytes that ignored characters would split one.
    const name = `x${'é'.repeat(250_000)}`;
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } };
    const atAdmin = messageOf((await post(ADMIN_MCP, ws.token, call)).payload);
    const atGateway = (await post(gateway.url, gateway.token, call, { 'mcp-protocol-version': '2025-03-26' })).json();
    const shown = `x${'é'.repeat(99)}…`;
    expect(atAdmin.error).toEqual({ code: -32602, message: `Unknown tool: ${shown}. tools/list names every tool.` });
    expect(atGateway.error).toMatchObject({ code: -32602, message: `Tool ${shown} not found on this gateway.` });
  });
});

describe('a tools/call with a malformed task augmentation', () => {
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  it.each([5, { ttl: 'x' }, null, [1]])('task %j is invalid params in words naming params.task (2025-11-25)', async (task) => {
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {}, task } };
    const answer = messageOf((await post(ADMIN_MCP, ws.token, call, { 'mcp-protocol-version': '2025-11-25' })).payload);
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32602, message: 'tools/call params.task must be an object: { ttl?: milliseconds to keep the task }.' },
    });
  });

  it('a well-formed one is served as a plain call (the endpoint has no tasks)', async () => {
    const call = { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'whoami', arguments: {}, task: { ttl: 1000 } } };
    const answer = messageOf((await post(ADMIN_MCP, ws.token, call, { 'mcp-protocol-version': '2025-11-25' })).payload);
    expect(answer.result.structuredContent.user.emailAddress).toMatch(/@/);
  });

  it('2026-07-28 (whose tools/call has no task augmentation) serves the call, as before', async () => {
    const call = { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'whoami', arguments: {}, task: 5, _meta: envelope } };
    const res = await post(ADMIN_MCP, ws.token, call, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami' });
    expect(messageOf(res.payload).result.structuredContent.user.emailAddress).toMatch(/@/);
  });
});

describe('each message of a JSON-RPC batch (2025-03-26)', () => {
  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 5 } },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami', arguments: null } },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {}, task: 5 } },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'whoami', arguments: {} } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  ];
  const byId = (answers: any[]) => [...answers].sort((a, b) => a.id - b.id);

  it.each<Record<string, string>>([{}, { 'mcp-protocol-version': '2025-03-26' }])('gets the answer it gets alone (headers %j)', async (headers) => {
    const res = await post(ADMIN_MCP, ws.token, batch, headers);
    expect(res.statusCode).toBe(200);
    const answers = byId(res.json());
    const alone = [];
    for (const message of batch.slice(0, 4))
      alone.push(messageOf((await post(ADMIN_MCP, ws.token, message, { 'mcp-protocol-version': '2025-03-26' })).payload));
    expect(answers.slice(0, 3)).toEqual(alone.slice(0, 3));
    expect(answers.map((a: { error?: { message: string } }) => a.error?.message)).toEqual([
      'tools/list params.cursor must be a string, not a number.',
      "tools/call params.arguments must be an object of the tool's parameters, not null.",
      'tools/call params.task must be an object: { ttl?: milliseconds to keep the task }.',
      undefined,
    ]);
    expect(answers[3].result.structuredContent.user.emailAddress).toMatch(/@/);
  });

  it('all refused: one array of answers, nothing served', async () => {
    const res = await post(ADMIN_MCP, ws.token, batch.slice(0, 2), { 'mcp-protocol-version': '2025-03-26' });
    expect(res.statusCode).toBe(200);
    expect(byId(res.json()).map((a: { error: { code: number } }) => a.error.code)).toEqual([-32602, -32602]);
  });
});

describe('a 2025 host whose Accept header names JSON or a stream, not both', () => {
  const send = (url: string, token: string, body: unknown, accept: string | undefined) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'mcp-protocol-version': '2025-11-25',
        ...(accept === undefined ? {} : { accept }),
      },
      payload: JSON.stringify(body),
    });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };
  const whoami = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

  it.each(['*/*', 'application/json', undefined])('Accept %s is served as JSON, as at a gateway', async (accept) => {
    const gateway = await newGateway(`Accept ${accept}`);
    const atGateway = await send(gateway.url, gateway.token, initialize, accept);
    expect(atGateway.statusCode).toBe(200);
    for (const body of [initialize, whoami]) {
      const res = await send(ADMIN_MCP, ws.token, body, accept);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: body.id, result: {} });
    }
    // A batch (2025-03-26), one of its messages refused here and one served by the SDK: one JSON array.
    const batch = await t.app.inject({
      method: 'POST',
      url: ADMIN_MCP,
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json', ...(accept === undefined ? {} : { accept }) },
      payload: JSON.stringify([whoami, { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 5 } }]),
    });
    expect(batch.statusCode).toBe(200);
    expect(
      batch
        .json()
        .map((m: { id: number }) => m.id)
        .sort(),
    ).toEqual([2, 3]);
  });

  it('Accept text/event-stream is served as a stream', async () => {
    const res = await send(ADMIN_MCP, ws.token, whoami, 'text/event-stream');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(messageOf(res.payload).result.structuredContent.user.emailAddress).toMatch(/@/);
  });
});
