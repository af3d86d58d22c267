import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2026, StreamableHTTPClientTransport as StreamableHTTPClientTransport2026 } from '@modelcontextprotocol/client';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { buildApp } from '../src/http/app.js';
import { sealSession } from '../src/gateway/session-id.js';
import { SESSION_MAX_AGE_MS } from '../src/gateway/ended-sessions.js';
import { withoutEchoedSecrets } from '../src/gateway/echoed-secrets.js';
import { openPostgres, type PostgresStore } from '../src/stores/postgres.js';
import { assertNeverLeaked, closeClients, copyStoreTemplate, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer, startReplica } from './helpers/gateway.js';
import { startSecretEchoUpstream, type SecretEchoUpstream } from './helpers/secret-echo-upstream.js';

/**
 * The gateway under hostile or careless input (issue 17): malformed tool calls and
 * request ids, sessions used after their end, failures that are not the host's, and
 * an upstream that echoes the credential the gateway sent it.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let echo: SecretEchoUpstream;
let gatewayGuid: string;
let gatewayUrl: string;
let token: string;
let connectionGuid: string;
const AUTH_TOKEN = `echo-secret-${randomBytes(8).toString('hex')}`;
const API_KEY = `api-key+${randomBytes(8).toString('hex')}/=~`;
// The key as the careless upstream also echoes it: percent-encoded, in base64 after a prefix.
const SECRETS = [AUTH_TOKEN, API_KEY, encodeURIComponent(API_KEY), Buffer.from(`client:${API_KEY}`).toString('base64')];
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  [t, echo] = await Promise.all([startTestApp(), startSecretEchoUpstream()]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Hardened' });
  gatewayGuid = gw.body.guid;
  for (const [name, url] of [
    ['echo-json', echo.jsonUrl],
    ['echo-stream', echo.streamUrl],
  ] as const) {
    const server = await registerServer(t, ws, {
      name,
      url,
      authType: 'headers',
      headers: { Authorization: `Bearer ${AUTH_TOKEN}`, 'X-Api-Key': API_KEY },
      accessControl: 'global',
    });
    const assigned = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid,
      inboundServerGuid: server.serverGuid,
      identityScheme: 'sharedIdentity',
      sharedIdentityGuid: server.identityGuid,
    });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(201);
  }
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid });
  ({ token, connectionGuid } = issued.body);
  gatewayUrl = issued.body.url.replace(t.config.publicBaseUrl, base);
}, 120_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await closeClients();
  await t?.close();
  await echo?.close();
});

interface RawAnswer {
  status: number;
  text: string;
  body: any;
  headers: Headers;
}

/** One POST at the gateway as a host would send it; `body` as a value or as raw text. */
async function post(body: unknown, headers: Record<string, string> = {}, url = gatewayUrl): Promise<RawAnswer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  return answerOf(res);
}

async function answerOf(res: Response): Promise<RawAnswer> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, text, body, headers: res.headers };
}

/** The envelope and headers of a 2026-07-28 request. */
function modern(method: string, params: Record<string, unknown>, id: unknown = 1): { body: unknown; headers: Record<string, string> } {
  return {
    body: {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
    headers: {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
    },
  };
}

async function callLogRows(): Promise<any[]> {
  await t.runtime.services.callLogs.flush();
  const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid }, includeDetail: true, take: 250 });
  expect(logs.status).toBe(200);
  return logs.body.items;
}

describe('tools/call whose arguments are not an object', () => {
  const malformed: { label: string; params: Record<string, unknown>; message: RegExp }[] = [
    { label: 'null', params: { name: 'echo-json__echo_credential', arguments: null }, message: /arguments must be an object .* not null/ },
    { label: 'an array', params: { name: 'echo-json__echo_credential', arguments: [1, 2] }, message: /arguments must be an object .* not an array/ },
    { label: 'a string', params: { name: 'echo-json__echo_credential', arguments: 'x' }, message: /arguments must be an object .* not a string/ },
    { label: 'no name', params: { arguments: {} }, message: /needs params\.name/ },
  ];

  it.each(malformed)('is invalid params (-32602) in words, never forwarded, for a 2025 host: arguments $label', async ({ params, message }) => {
    const callsBefore = echo.calls.length;
    const res = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32602 } });
    expect(res.body.error.message).toMatch(message);
    expect(res.text).not.toMatch(/invalid_type|expected|zod/i);
    expect(echo.calls.length).toBe(callsBefore);
  });

  it.each(malformed)('is the same for a 2026-07-28 host: arguments $label', async ({ params, message }) => {
    const callsBefore = echo.calls.length;
    const request = modern('tools/call', params, 'm-1');
    const res = await post(request.body, request.headers);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 'm-1', error: { code: -32602 } });
    expect(res.body.error.message).toMatch(message);
    expect(res.text).not.toMatch(/invalid_type|expected|zod/i);
    expect(echo.calls.length).toBe(callsBefore);
  });

  it('is logged as an error row, like any refusal, with the tool name when there is one', async () => {
    const rows = (await callLogRows()).filter((r) => /params\.(arguments must be an object|name)/.test(r.error_message ?? ''));
    expect(rows.length).toBe(malformed.length * 2);
    for (const row of rows) expect(row).toMatchObject({ status: 'error', method: 'tools/call', type: 'tool_call' });
    expect(rows.filter((r) => r.tool_name === 'echo-json__echo_credential').length).toBe(6);
  });
});

describe('prompts and resources requests whose params are malformed', () => {
  const malformed: { method: string; params: unknown; message: RegExp }[] = [
    { method: 'resources/read', params: {}, message: /resources\/read needs params\.uri/ },
    { method: 'resources/read', params: { uri: 5 }, message: /resources\/read needs params\.uri/ },
    { method: 'resources/subscribe', params: { uri: '' }, message: /resources\/subscribe needs params\.uri/ },
    { method: 'prompts/get', params: { arguments: {} }, message: /prompts\/get needs params\.name/ },
    { method: 'prompts/get', params: { name: 'echo-json__p', arguments: ['a'] }, message: /arguments must be an object .* not an array/ },
    { method: 'prompts/get', params: { name: 'echo-json__p', arguments: { a: 1 } }, message: /map each argument name to a string/ },
    { method: 'tools/call', params: 5, message: /tools\/call params must be an object, not a number/ },
    { method: 'logging/setLevel', params: { level: 'nope' }, message: /logging\/setLevel needs params\.level, one of debug/ },
    // Found by a trial (session 25): forwarded, they made the upstream answer HTTP 400, which was blamed on it (and alerted).
    {
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: 'all', clientInfo: 'me' },
      message: /initialize params\.capabilities must be an object .* not a string/,
    },
    {
      method: 'initialize',
      params: { protocolVersion: 5, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      message: /needs params\.protocolVersion/,
    },
    { method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x' } }, message: /needs params\.clientInfo/ },
    {
      method: 'tools/call',
      params: { name: 'echo-json__echo_credential', arguments: {}, _meta: { progressToken: { x: 1 } } },
      message: /params\._meta\.progressToken must be a string or an integer, not an object/,
    },
    { method: 'tools/list', params: { _meta: 'x' }, message: /params\._meta must be an object, not a string/ },
    { method: 'completion/complete', params: { ref: { type: 'ref/prompt' }, argument: { name: 'a', value: 'b' } }, message: /needs params\.ref/ },
    { method: 'completion/complete', params: { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a' } }, message: /needs params\.argument/ },
  ];

  it.each(malformed)(
    '$method with params $params is invalid params (-32602) in words, never forwarded, for both revisions',
    async ({ method, params, message }) => {
      const callsBefore = echo.calls.length;
      const old = await post({ jsonrpc: '2.0', id: 8, method, params });
      expect(old.status).toBe(200);
      expect(old.body).toMatchObject({ jsonrpc: '2.0', id: 8, error: { code: -32602 } });
      expect(old.body.error.message).toMatch(message);
      // Revision 2026-07-28 has no initialize (nor the other two), and its envelope is the _meta these requests would send.
      const modernToo = !['resources/subscribe', 'logging/setLevel', 'initialize'].includes(method) && !Object.hasOwn(params as object, '_meta');
      if (typeof params === 'object' && params !== null && modernToo) {
        const request = modern(method, params as Record<string, unknown>, 'm-2');
        const res = await post(request.body, request.headers);
        expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 'm-2', error: { code: -32602 } });
        expect(res.body.error.message).toMatch(message);
      }
      expect(echo.calls.length).toBe(callsBefore);
    },
  );
});

describe('keys of what a host sends', () => {
  it('refuses __proto__ anywhere (-32700, HTTP 400), and lets constructor and prototype through to the upstream as ordinary keys', async () => {
    const refused = await post(
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo-json__echo_credential","arguments":{"__proto__":{"x":1}}}}',
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: -32700, message: expect.stringContaining('__proto__') } });
    const callsBefore = echo.calls.length;
    const passed = await post({
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'echo-json__echo_credential', arguments: { constructor: 'c', prototype: 'p' } },
    });
    expect(passed.status).toBe(200);
    expect(passed.body.error?.code).not.toBe(-32700);
    expect(echo.calls.length).toBe(callsBefore + 1);
  });
});

describe('request ids the answer could not carry back', () => {
  const cases: [string, string][] = [
    ['a 5,000-digit integer (Infinity once parsed)', '9'.repeat(5000)],
    ['an integer past 2^53', '9007199254740993'],
    ['a fraction', '1.5'],
    ['an exponent beyond a double', '1e400'],
    ['null', 'null'],
    ['a boolean', 'true'],
    ['an object', '{"a":1}'],
  ];

  it.each(cases)('refuses %s as an invalid request (-32600, id null, HTTP 400), for both revisions', async (_label, id) => {
    const legacy = await post(`{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":{}}`);
    const request = modern('tools/list', {}, 0) as { body: Record<string, unknown>; headers: Record<string, string> };
    const modernText = JSON.stringify(request.body).replace('"id":0', `"id":${id}`);
    const current = await post(modernText, request.headers);
    for (const res of [legacy, current]) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/^The id/) } });
    }
  });

  it.each([
    ['an object with only jsonrpc', { jsonrpc: '2.0' }],
    ['an id with neither method, result nor error', { jsonrpc: '2.0', id: 1, params: {} }],
    ['a response with both a result and an error', { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }],
    ['a method that is not a string', { jsonrpc: '2.0', id: 1, method: 5 }],
    ['an empty method', { jsonrpc: '2.0', method: '' }],
  ])('refuses %s as an invalid request (-32600, HTTP 400), not accepted as a notification or an answer', async (_label, body) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
  });

  it('answers the largest exact integer and a string id with the id itself', async () => {
    const big = await post(`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`);
    expect(big.status).toBe(200);
    expect(big.text).toContain('"id":9007199254740991');
    const named = await post({ jsonrpc: '2.0', id: 'x'.repeat(64), method: 'ping' });
    expect(named.body).toEqual({ jsonrpc: '2.0', id: 'x'.repeat(64), result: {} });
  });
});

describe('a session its host ended', () => {
  const replicas: FastifyInstance[] = [];
  let replicaUrl: string;
  beforeAll(async () => {
    const replica = await startReplica(t.runtime.services);
    replicas.push(replica.app);
    closers.push(() => replica.app.close());
    replicaUrl = `${replica.base}/gateways/${gatewayGuid}/mcp`;
  });

  const initialize = async (url = gatewayUrl): Promise<string> => {
    const res = await post(
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      {},
      url,
    );
    expect(res.status).toBe(200);
    return res.headers.get('mcp-session-id')!;
  };
  const listWith = (sessionId: string, url = gatewayUrl) => post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': sessionId }, url);
  const end = async (sessionId: string, url = gatewayUrl) =>
    answerOf(await fetch(url, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId } }));
  const open = async (sessionId: string, url = gatewayUrl) => {
    const res = await fetch(url, { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': sessionId } });
    await res.body?.cancel();
    return res.status;
  };

  it('refuses a request naming a revision the gateway does not speak (400, in the 1.x SDK’s words), on every method; initialize negotiates', async () => {
    const sessionId = await initialize();
    const unknown = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '1999-01-01' };
    const listed = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, unknown);
    expect([listed.status, listed.body.error?.code]).toEqual([400, -32000]);
    expect(listed.body.error.message).toMatch(/^Bad Request: Unsupported protocol version: 1999-01-01 \(supported versions: 2025-11-25, /);
    const got = await fetch(gatewayUrl, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...unknown } });
    await got.body?.cancel();
    expect(got.status).toBe(400);
    const ended = await fetch(gatewayUrl, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, ...unknown } });
    expect(ended.status).toBe(400);
    // The session is unharmed, and a revision it speaks is served.
    expect((await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' })).status).toBe(
      200,
    );
    const negotiated = await post(
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { 'mcp-protocol-version': '1999-01-01' },
    );
    expect([negotiated.status, negotiated.body.result?.protocolVersion]).toEqual([200, '2025-11-25']);
  });

  it('answers what revision 2026-07-28 does not have (GET, DELETE, a batch) as its SDK does, never "unsupported revision"', async () => {
    const modern = { authorization: `Bearer ${token}`, 'mcp-protocol-version': '2026-07-28' };
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(gatewayUrl, { method, headers: { ...modern, accept: 'text/event-stream' } });
      const body = (await res.json()) as { error: { code: number; message: string } };
      expect([method, res.status, res.headers.get('allow'), body.error]).toEqual([method, 405, 'POST', { code: -32000, message: 'Method not allowed.' }]);
    }
    const batch = await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }], { 'mcp-protocol-version': '2026-07-28' });
    expect([batch.status, batch.body.error]).toEqual([400, { code: -32600, message: 'Bad Request: JSON-RPC batches are not supported by this endpoint' }]);
  });

  it('is a 404 for every method after DELETE, and the end is stored for the other replicas', async () => {
    const sessionId = await initialize();
    expect((await listWith(sessionId)).status).toBe(200);
    expect((await end(sessionId)).status).toBe(200);
    const after = await listWith(sessionId);
    expect(after.status).toBe(404);
    expect(after.body).toMatchObject({ error: { code: -32001 } });
    expect(await open(sessionId)).toBe(404);
    expect((await end(sessionId)).status).toBe(404);
    const stored = await t.runtime.services.db.selectFrom('ended_gateway_sessions').selectAll().where('connection_guid', '=', connectionGuid).execute();
    expect(stored.length).toBeGreaterThan(0);
    for (const row of stored) expect(new Date(row.expires_at).getTime()).toBeGreaterThan(Date.now());
  });

  it('ended through one replica is a 404 at another on one store: at once for an id it has not seen, within its cache TTL for one it has', async () => {
    // Never seen by the second replica: it asks the store.
    const unseen = await initialize();
    expect((await end(unseen)).status).toBe(200);
    expect((await listWith(unseen, replicaUrl)).status).toBe(404);
    // Ended through the second replica, refused by the first.
    const other = await initialize(replicaUrl);
    expect((await end(other, replicaUrl)).status).toBe(200);
    expect((await listWith(other)).status).toBe(404);
    // Served by the second replica just before the end: refused once its "still open" verdict expires.
    const seen = await initialize();
    expect((await listWith(seen, replicaUrl)).status).toBe(200);
    expect((await end(seen)).status).toBe(200);
    await vi.waitFor(async () => expect((await listWith(seen, replicaUrl)).status).toBe(404), { timeout: 15_000, interval: 200 });
  });

  it('a session past its maximum age is a 404 even though its id still opens', async () => {
    const old = sealSession(t.runtime.services.gatewaySessionKey, {
      id: randomBytes(8).toString('hex'),
      connectionGuid,
      protocolVersion: '2025-06-18',
      clientCapabilities: {},
      clientInfo: { name: 'old', version: '1' },
      upstreams: {},
      createdAt: Date.now() - SESSION_MAX_AGE_MS - 60_000,
    });
    expect((await listWith(old)).status).toBe(404);
    const fresh = sealSession(t.runtime.services.gatewaySessionKey, {
      id: randomBytes(8).toString('hex'),
      connectionGuid,
      protocolVersion: '2025-06-18',
      clientCapabilities: {},
      clientInfo: { name: 'fresh', version: '1' },
      upstreams: {},
      createdAt: Date.now(),
    });
    expect((await listWith(fresh)).status).toBe(200);
  });
});

describe('failures that are not the host request', () => {
  it('answers a body that is not JSON, or not UTF-8, with a parse error (-32700, HTTP 400) naming the problem', async () => {
    const broken = await post('{"jsonrpc":"2.0","id":1,');
    expect(broken.status).toBe(400);
    expect(broken.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringMatching(/not valid JSON/) } });
    const latin1 = await post(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]));
    expect(latin1.status).toBe(400);
    expect(latin1.body.error).toMatchObject({ code: -32700, message: expect.stringMatching(/UTF-8/) });
  });

  /** Another app over the same services but a configuration store in the given state: a real failure, not a stand-in. */
  async function appOver(store: PostgresStore): Promise<FastifyInstance> {
    const app = await buildApp({ services: { ...t.runtime.services, db: store.db }, logger: false });
    await app.ready();
    closers.push(() => app.close());
    return app;
  }
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });
  /** A configuration store of its own: a copy of the run's migrated one (a fresh PGlite spends seconds in initdb). */
  async function migratedStore(): Promise<PostgresStore> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-hardening-'));
    dirs.push(dir);
    copyStoreTemplate(dir, 'pg');
    return openPostgres({ dataDir: dir });
  }
  /** A configuration store without its tables. */
  async function storeWithoutTables(): Promise<PostgresStore> {
    const store = await migratedStore();
    await sql`DROP SCHEMA public CASCADE`.execute(store.db);
    await sql`CREATE SCHEMA public`.execute(store.db);
    return store;
  }
  const injectPost = (app: FastifyInstance) =>
    app.inject({
      method: 'POST',
      url: `/gateways/${gatewayGuid}/mcp`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });

  it('answers 503 with -32603 while the configuration store is closed, on every method, without its internals', async () => {
    const store = await migratedStore();
    await store.close();
    const app = await appOver(store);
    const res = await injectPost(app);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32603, message: expect.stringMatching(/try again/) } });
    expect(res.headers['retry-after']).toBeDefined();
    // A session id that opens: whether it was ended is a question for the store.
    const sessionId = sealSession(t.runtime.services.gatewaySessionKey, {
      id: randomBytes(8).toString('hex'),
      connectionGuid,
      protocolVersion: '2025-06-18',
      clientCapabilities: {},
      clientInfo: { name: 'raw', version: '1' },
      upstreams: {},
      createdAt: Date.now(),
    });
    const get = await app.inject({
      method: 'GET',
      url: `/gateways/${gatewayGuid}/mcp`,
      headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId },
    });
    expect(get.statusCode).toBe(503);
    for (const body of [res.body, get.body]) expect(body).not.toMatch(/destroyed|PGlite|driver|at /);
  });

  it('answers 500 with -32603 for a failure that is a defect (a store without its tables), without its internals', async () => {
    const store = await storeWithoutTables();
    closers.push(() => store.close());
    const app = await appOver(store);
    const res = await injectPost(app);
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'The gateway could not serve this request.' } });
    expect(res.body).not.toMatch(/relation|access_tokens|select/i);
  });
});

describe('the redaction of echoed secrets', () => {
  const secret = 'Bearer s3cr"et-value-0123';
  it('hands on a message that echoes nothing as the same object', () => {
    const message = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'nothing here' }] } } as any;
    expect(withoutEchoedSecrets(message, [secret])).toBe(message);
  });

  it('redacts the value and its long parts in strings and keys at any depth, keeping a __proto__ key a key', () => {
    const message = JSON.parse(
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: { a: [`x ${secret} y`, { [`k-s3cr"et-value-0123`]: 1 }], b: 's3cr"et-value-0123' } }).replace(
        '"b"',
        '"__proto__":{"polluted":true},"b"',
      ),
    );
    const out = withoutEchoedSecrets(message, [secret]) as any;
    expect(JSON.stringify(out)).not.toContain('s3cr');
    expect(out.result.a[0]).toBe('x [REDACTED] y');
    expect(Object.keys(out.result.a[1])).toEqual(['k-[REDACTED]']);
    expect(Object.hasOwn(out.result, '__proto__')).toBe(true);
    expect(({} as any).polluted).toBeUndefined();
    expect(message.result.b).toBe('s3cr"et-value-0123');
  });

  it('replaces a part nested past the walk with the marker when it holds a secret, and leaves it when it does not', () => {
    let deep: unknown = `echo ${secret}`;
    let clean: unknown = 'nothing';
    for (let i = 0; i < 150; i++) {
      deep = { next: deep };
      clean = { next: clean };
    }
    expect(JSON.stringify(withoutEchoedSecrets({ jsonrpc: '2.0', id: 1, result: deep } as any, [secret]))).not.toContain('s3cr');
    const untouched = { jsonrpc: '2.0', id: 1, result: clean } as any;
    expect(withoutEchoedSecrets(untouched, [secret])).toBe(untouched);
  });
});

describe('an upstream that echoes the credential it was sent', () => {
  /** A fetch that keeps every byte the host receives. */
  function recordingFetch(received: string[]): typeof fetch {
    return async (input, init) => {
      const res = await fetch(input, init);
      if (!res.body) return res;
      const [mine, theirs] = res.body.tee();
      void (async () => {
        const decoder = new TextDecoder();
        const reader = theirs.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          received.push(decoder.decode(value, { stream: true }));
        }
      })().catch(() => undefined);
      return new Response(mine, { status: res.status, statusText: res.statusText, headers: res.headers });
    };
  }
  const expectClean = (received: string[]) => {
    const seen = received.join('');
    for (const secret of SECRETS) expect(seen).not.toContain(secret);
    expect(seen).toContain('[REDACTED]');
  };

  it('never reaches a 2025 host: lists, JSON and streamed answers, streamed notifications, errors', async () => {
    const received: string[] = [];
    const client = await gatewayClient(gatewayUrl, token, { fetch: recordingFetch(received) });
    closers.push(() => client.close());
    const notices: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void notices.push(n.params.data));
    const tools = await client.listTools();
    expect(tools.tools.find((x) => x.name === 'echo-json__echo_credential')?.description).toContain('[REDACTED]');
    for (const name of ['echo-json__echo_credential', 'echo-stream__echo_credential']) {
      const result = await client.callTool({ name, arguments: {} });
      expect(JSON.stringify(result)).toContain('authorization=[REDACTED] x-api-key=[REDACTED]');
    }
    await expect(client.callTool({ name: 'echo-stream__fail_with_credential', arguments: {} })).rejects.toThrow(/\[REDACTED\]/);
    await vi.waitFor(() => expect(notices.length).toBeGreaterThan(0));
    expect(JSON.stringify(notices)).toContain('[REDACTED]');
    expectClean(received);
  });

  it('never reaches a host reading the raw event stream', async () => {
    const res = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo-stream__echo_credential', arguments: {} } },
      { accept: 'text/event-stream' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.text).toContain('notifications/message');
    expectClean([res.text]);
  });

  it('never reaches a 2026-07-28 host', async () => {
    const received: string[] = [];
    const client = new Client2026({ name: 'host-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(
      new StreamableHTTPClientTransport2026(new URL(gatewayUrl), {
        fetch: recordingFetch(received),
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    closers.push(() => client.close());
    expect(JSON.stringify((await client.listTools()).tools)).toContain('[REDACTED]');
    for (const name of ['echo-json__echo_credential', 'echo-stream__echo_credential']) {
      expect(JSON.stringify(await client.callTool({ name, arguments: {} }))).toContain('[REDACTED]');
    }
    await expect(client.callTool({ name: 'echo-json__fail_with_credential', arguments: {} })).rejects.toThrow(/\[REDACTED\]/);
    expectClean(received);
  });

  it('never reaches a host of the legacy SSE transport', async () => {
    const received: string[] = [];
    const record = recordingFetch(received);
    const auth = { authorization: `Bearer ${token}` };
    const client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: {} });
    await client.connect(
      new SSEClientTransport(new URL(gatewayUrl.replace(/\/mcp$/, '/sse')), {
        requestInit: { headers: auth },
        eventSourceInit: { fetch: (u, init) => record(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }) },
      }),
    );
    closers.push(() => client.close());
    for (const name of ['echo-json__echo_credential', 'echo-stream__echo_credential']) {
      expect(JSON.stringify(await client.callTool({ name, arguments: {} }))).toContain('[REDACTED]');
    }
    expectClean(received);
  });

  it('reaches no call-log row through the tool name a host sends (tool_name and the Mcp-Name header are redacted like the body)', async () => {
    const name = `echo-json__${API_KEY}`;
    expect((await post({ jsonrpc: '2.0', id: 21, method: 'tools/call', params: { name, arguments: {} } })).text).not.toContain(API_KEY);
    const asModern = modern('tools/call', { name, arguments: {} }, 22);
    expect((await post(asModern.body, asModern.headers)).text).not.toContain(API_KEY);
    let rows: any[] = [];
    await vi.waitFor(
      async () => {
        // Both calls, by what they asked for (a 2026-07-28 call's body is kept without its envelope).
        rows = (await callLogRows()).filter((r) => String(r.request_body).includes('echo-json__[REDACTED]'));
        expect(rows).toHaveLength(2);
      },
      { timeout: 30_000, interval: 50 },
    );
    for (const row of rows) expect(row.tool_name).toContain('[REDACTED]');
    expect(rows.map((r) => String(r.request_headers))).toContainEqual(expect.stringContaining('"mcp-name":"echo-json__[REDACTED]"'));
    assertNeverLeaked(t, SECRETS, [rows]);
  });

  it('reaches no call-log row through a header the host sends that is not named as a credential (a token of ours masked)', async () => {
    const headers = { 'x-debug': `tok=${token}`, referer: `https://host.example/?t=${token}` };
    // A call that reaches no upstream: no credential's secrets are known for it.
    expect((await post({ jsonrpc: '2.0', id: 31, method: 'tools/call', params: { name: 'nowhere__x', arguments: {} } }, headers)).status).toBe(200);
    let row: any;
    await vi.waitFor(
      async () => {
        row = (await callLogRows()).find((r) => JSON.parse(String(r.request_body)).id === 31);
        expect(row).toBeDefined();
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(String(row.request_headers)).toContain('"x-debug":"tok=[REDACTED]"');
    assertNeverLeaked(t, [token], [row]);
  });

  it('reaches no call-log row, alert or service log line either', async () => {
    const alertsOf = async () =>
      (await invoke(t, 'rest', ws.token, 'list_alerts', { filters: { code: 'upstream_call_failed' }, take: 50 })).body.items as { guid: string }[];
    // Calls that keep failing with the credential in the error: the alert quotes the upstream's error.
    await vi.waitFor(
      async () => {
        await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo-json__fail_with_credential', arguments: {} } });
        expect((await alertsOf()).length).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 50 },
    );
    const alerts = await Promise.all((await alertsOf()).map((a) => invoke(t, 'rest', ws.token, 'get_alert', { alertGuid: a.guid }).then((r) => r.body)));
    expect(JSON.stringify(alerts)).toContain('[REDACTED]');
    // The template with its values is the alert's own subject and message (admin-api: placeholders unresolved).
    const fill = (template: string, values: Record<string, string>) => template.replace(/\{(\w+)\}/g, (_, key: string) => values[key] ?? `{${key}}`);
    for (const alert of alerts) {
      expect(fill(alert.dynamicContent.subject, alert.dynamicContent.values)).toBe(alert.subject);
      expect(fill(alert.dynamicContent.message, alert.dynamicContent.values)).toBe(alert.message);
    }
    const rows = await callLogRows();
    expect(rows.some((r) => String(r.response_body).includes('[REDACTED]'))).toBe(true);
    assertNeverLeaked(t, SECRETS, [rows, alerts]);
  });
});
