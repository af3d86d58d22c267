import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directRequest } from '../src/gateway/modern-direct.js';
import { listenLoopback, registerServer } from './helpers/gateway.js';
import { assertProperty, fuzzRuns, problemDefect, RawJson, summarize, toJsonText } from './helpers/fuzz.js';
import { invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * JSON-RPC fuzz of a gateway in front of server-everything: arbitrary JSON, messages
 * with bad jsonrpc fields, ids of odd types, huge numbers, unknown methods and bad
 * params, batches, bodies that are not UTF-8 or nest too deep, and garbage in
 * Mcp-Session-Id, Mcp-Protocol-Version, Accept, Content-Type and Authorization; and
 * 2026-07-28 tools/calls of any name, arguments and _meta on the direct path.
 * Every answer is a JSON-RPC message (or a problem), never a 5xx and never a hang;
 * after each property the gateway still serves a normal call. Seed and runs:
 * test/helpers/fuzz.ts.
 */
const RUNS = 40;
/** A guard against a hang, not a timing assertion: no answer here takes more than a fraction of it. */
const HANG_MS = 30_000;
let t: TestApp;
let everything: Upstream;
let url: string;
let token: string;
let sessionId: string;
/** The headers of a second session, of revision 2025-03-26: the one revision whose hosts may batch. */
let batchingSession: Record<string, string>;
const tally: Record<string, number> = { sent: 0 };

beforeAll(async () => {
  [t, everything] = await Promise.all([
    // No rate limit: the fuzz sends thousands of requests on one connection.
    startTestApp({ GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: '0', GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '0' }),
    startEverything('streamableHttp'),
  ]);
  const base = await listenLoopback(t);
  const ws = await newWorkspace(t);
  const server = await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' });
  const gateway = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Fuzzed gateway' })).body;
  expect((await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gateway.guid, inboundServerGuid: server.serverGuid })).status).toBe(201);
  const issued = (await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gateway.guid })).body;
  token = issued.token;
  url = issued.url.replace(t.config.publicBaseUrl, base);
  sessionId = await initialize('2025-06-18');
  batchingSession = { 'mcp-session-id': await initialize('2025-03-26'), 'mcp-protocol-version': '2025-03-26' };
  await expectNormalCall();
}, 120_000);

afterAll(async () => {
  console.error(`fuzz-gateway: ${JSON.stringify(tally)}`);
  await t?.close();
  await everything?.close();
});

/** Opens a session of `revision` as a host without an SDK does; its id. */
async function initialize(revision: string): Promise<string> {
  const init = await post(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
    }),
    { 'mcp-session-id': '', 'mcp-protocol-version': '' },
  );
  const id = init.headers.get('mcp-session-id')!;
  expect(id).toBeTruthy();
  await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'mcp-session-id': id, 'mcp-protocol-version': revision });
  return id;
}

interface RawAnswer {
  status: number;
  contentType: string;
  text: string;
  headers: Headers;
}

/** One POST as a host in the session would send it; `headers` override (an empty value drops the header). */
async function post(body: string | Uint8Array, headers: Record<string, string> = {}, target = url): Promise<RawAnswer> {
  return request('POST', body, headers, target);
}

async function request(method: string, body: string | Uint8Array | undefined, headers: Record<string, string> = {}, target = url): Promise<RawAnswer> {
  const all: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
    ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    ...headers,
  };
  for (const [k, v] of Object.entries(all)) if (v === '') delete all[k];
  tally.sent!++;
  let res: Response;
  try {
    res = await fetch(target, { method, headers: all, body, signal: AbortSignal.timeout(HANG_MS) });
    const text = await res.text();
    tally[String(res.status)] = (tally[String(res.status)] ?? 0) + 1;
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, headers: res.headers };
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') throw new Error(`no answer within ${HANG_MS} ms: the gateway hangs`);
    throw err;
  }
}

/** Why an answer is not a well-formed one (null when it is): JSON-RPC messages, a problem, or nothing (202). */
function answerDefect(res: RawAnswer, upstreamInternal?: RegExp): string | null {
  if (res.status >= 500) return `status ${res.status}`;
  if (res.status === 202 || res.status === 204) return res.text === '' ? null : `a ${res.status} with a body`;
  if (res.contentType.startsWith('application/problem+json')) return problemDefect(JSON.parse(res.text), res.status);
  let messages: unknown[];
  try {
    messages = res.contentType.startsWith('text/event-stream')
      ? [...res.text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!))
      : res.contentType.startsWith('application/json')
        ? [JSON.parse(res.text)].flat()
        : [];
  } catch {
    return 'a body that is not JSON';
  }
  if (messages.length === 0) return `no JSON-RPC message (content-type ${res.contentType || 'none'})`;
  for (const m of messages as Record<string, any>[]) {
    if (m?.jsonrpc !== '2.0') return 'a message without jsonrpc 2.0';
    if ('error' in m) {
      if (!Number.isInteger(m.error?.code) || typeof m.error?.message !== 'string') return 'an error without an integer code and a message';
      if (m.error.code === -32603 && !upstreamInternal?.test(m.error.message)) return `an internal error: ${m.error.message}`;
    } else if (!('result' in m) && typeof m.method !== 'string') return 'neither a result, an error nor a notification';
  }
  // A refusal is an error, not a result.
  if (res.status >= 400 && !(messages as Record<string, any>[]).some((m) => 'error' in m)) return `a ${res.status} without a JSON-RPC error`;
  return null;
}

/** `upstreamInternal`: an upstream's own internal errors the gateway relays as they are (their words checked by the caller). */
function expectWellFormed(res: RawAnswer, sent: unknown, upstreamInternal?: RegExp): void {
  const defect = answerDefect(res, upstreamInternal);
  if (defect) throw new Error(`${defect}; sent ${summarize(sent)}; answered ${res.status} ${res.contentType} ${res.text.slice(0, 300)}`);
}

/** The gateway still serves a normal call in the session. */
async function expectNormalCall(): Promise<void> {
  const res = await post(
    JSON.stringify({ jsonrpc: '2.0', id: 'check', method: 'tools/call', params: { name: 'everything__echo', arguments: { message: 'still here' } } }),
  );
  expect(res.status).toBe(200);
  expect(res.text).toContain('Echo: still here');
}

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/subscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/roots/list_changed',
  'server/discover',
  'sampling/createMessage',
  'roots/list',
];
const deep = (n: number) => new RawJson('['.repeat(n) + ']'.repeat(n));
const hugeNumbers = fc.constantFrom(
  new RawJson('9'.repeat(5000)),
  new RawJson('1e400'),
  new RawJson('-1e400'),
  new RawJson('9007199254740993'),
  new RawJson('-0'),
  new RawJson('1.5e-400'),
);
/** Mostly ids a host may use (so the message goes further), sometimes ones it may not. */
const ids = fc.oneof(
  { weight: 6, arbitrary: fc.oneof(fc.integer(), fc.string({ maxLength: 20 })) },
  {
    weight: 1,
    arbitrary: fc.oneof(fc.constant(null), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant({}), fc.constant([]), hugeNumbers),
  },
);
const methods = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...METHODS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.constant(null), fc.constant([]), fc.constant({}), fc.constant(deep(200))) },
);
/** Tool calls that reach the upstream (echo, with good and bad arguments), tools that exist nowhere, and junk. */
const toolCallParams = fc.record(
  {
    name: fc.oneof(
      fc.constantFrom('everything__echo', 'everything__get-sum', 'nope__tool', 'everything__', '__echo', ''),
      fc.string({ maxLength: 20 }),
      fc.constant(1),
      fc.constant(null),
    ),
    arguments: fc.oneof(fc.record({ message: fc.string({ maxLength: 50 }) }), fc.jsonValue({ maxDepth: 3 }), hugeNumbers),
    _meta: fc.oneof(fc.constant({ progressToken: 'p' }), fc.jsonValue({ maxDepth: 2 })),
  },
  { requiredKeys: [] },
);
const params = fc.oneof(
  fc.constant(null),
  fc.constant([]),
  fc.string({ maxLength: 10 }),
  fc.integer(),
  toolCallParams,
  fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  fc.record(
    {
      uri: fc.oneof(fc.constantFrom('demo://resource/static/document/architecture.md', 'file:///etc/passwd', 'http://127.0.0.1:1/'), fc.string()),
      level: fc.string(),
    },
    { requiredKeys: [] },
  ),
);
/** Something like a JSON-RPC message: any field may be missing or of the wrong type. */
const rpcish = fc.record(
  {
    jsonrpc: fc.oneof({ weight: 5, arbitrary: fc.constant('2.0') }, { weight: 1, arbitrary: fc.constantFrom('1.0', '2', 2, null, '', '2.0 ') }),
    id: ids,
    method: methods,
    params,
    result: fc.jsonValue({ maxDepth: 2 }),
    error: fc.oneof(fc.record({ code: fc.integer(), message: fc.string() }), fc.jsonValue({ maxDepth: 2 })),
  },
  { requiredKeys: [] },
);

const RUNS_NOTE = `${fuzzRuns(RUNS)} runs each`;
const timeout = Math.max(60_000, fuzzRuns(RUNS) * 1_000);

describe(`JSON-RPC fuzz of a gateway (${RUNS_NOTE})`, () => {
  it(
    'answers any JSON value with a JSON-RPC error or a result, never a 5xx',
    async () => {
      await assertProperty(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
          const text = JSON.stringify(value) ?? 'null';
          expectWellFormed(await post(text), text);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers messages with bad jsonrpc fields, odd ids, unknown methods and bad params',
    async () => {
      await assertProperty(
        fc.asyncProperty(rpcish, async (message) => {
          const text = toJsonText(message);
          expectWellFormed(await post(text), text);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers the same messages for a 2026-07-28 host (the modern envelope)',
    async () => {
      await assertProperty(
        fc.asyncProperty(rpcish, fc.boolean(), async (message, withMeta) => {
          const p = (message as { params?: unknown }).params;
          const enveloped =
            withMeta && p && typeof p === 'object' && !Array.isArray(p)
              ? {
                  ...message,
                  params: {
                    ...p,
                    _meta: {
                      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                      'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1' },
                      'io.modelcontextprotocol/clientCapabilities': {},
                    },
                  },
                }
              : message;
          const text = toJsonText(enveloped);
          const method = (message as { method?: unknown }).method;
          const name = (p as { name?: unknown } | null | undefined)?.name;
          const printable = (value: unknown): value is string => typeof value === 'string' && /^[\x21-\x7e]+$/.test(value);
          // Headers that match the body take a tools/call to the direct path (src/gateway/modern-direct.ts), the rest to the SDK's handler.
          const headers = {
            'mcp-protocol-version': '2026-07-28',
            'mcp-session-id': '',
            ...(printable(method) ? { 'mcp-method': method } : {}),
            ...(printable(name) ? { 'mcp-name': name } : {}),
          };
          expectWellFormed(await post(text, headers), text);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers a 2026-07-28 tools/call whose headers match its body (the direct path), whatever its name, arguments and _meta',
    async () => {
      const envelope = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      const call = fc.record({
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 20 })),
        name: fc.oneof(fc.constantFrom('everything__echo', 'everything__get-sum', 'nope__tool'), fc.stringMatching(/^[\x21-\x7e]{1,30}$/)),
        arguments: fc.oneof(
          fc.record({ message: fc.string({ maxLength: 50 }) }),
          fc.record({ a: fc.oneof(fc.integer(), hugeNumbers, fc.string()), b: fc.jsonValue({ maxDepth: 1 }) }),
          fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
        ),
        extraMeta: fc.oneof(
          { weight: 3, arbitrary: fc.constant({}) },
          { weight: 1, arbitrary: fc.record({ progressToken: fc.oneof(fc.integer(), fc.string({ maxLength: 10 })) }) },
          { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }) },
        ),
      });
      await assertProperty(
        fc.asyncProperty(call, async ({ id, name, arguments: args, extraMeta }) => {
          const body = { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { ...envelope, ...extraMeta } } };
          const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name };
          // A plain call is one the direct path admits: the property exercises it, not only the SDK's handler.
          if (Object.keys(extraMeta).length === 0) expect(directRequest(body, headers)).not.toBeNull();
          const text = JSON.stringify(body);
          expectWellFormed(await post(text, headers), text);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'refuses batches in a 2025-06-18 session, and answers them in a 2025-03-26 one',
    async () => {
      await assertProperty(
        fc.asyncProperty(fc.array(rpcish, { maxLength: 4 }), async (batch) => {
          const text = toJsonText(batch);
          const res = await post(text);
          expectWellFormed(res, text);
          expect(res.status).toBe(400);
        }),
        Math.ceil(RUNS / 4),
      );
      await assertProperty(
        fc.asyncProperty(fc.array(rpcish, { maxLength: 4 }), async (batch) => {
          const text = toJsonText(batch);
          const res = await post(text, batchingSession);
          expectWellFormed(res, text);
          expect([200, 202, 400]).toContain(res.status);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers tasks requests in a 2025-11-25 session: the real task id, altered and forged ones, bad params',
    async () => {
      const session = { 'mcp-session-id': await initialize('2025-11-25'), 'mcp-protocol-version': '2025-11-25' };
      const created = await post(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 'task',
          method: 'tools/call',
          params: { name: 'everything__simulate-research-query', arguments: { topic: 'fuzz' }, task: { ttl: 60_000 } },
        }),
        session,
      );
      const taskId = String(JSON.parse(created.text).result.task.taskId);
      const taskIds = fc.oneof(
        fc.constant(taskId),
        fc.constant(`${taskId.slice(0, -2)}${taskId.endsWith('AA') ? 'AB' : 'AA'}`),
        fc.constant(`${taskId}==`),
        fc.base64String({ maxLength: 200 }),
        fc.string({ maxLength: 40 }),
        fc.oneof(fc.integer(), fc.constant(null), fc.constant({}), fc.constant([]), hugeNumbers),
      );
      const taskMessage = fc.record(
        {
          jsonrpc: fc.constant('2.0'),
          id: ids,
          method: fc.constantFrom('tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/list', 'tools/call'),
          params: fc.oneof(
            { weight: 4, arbitrary: fc.record({ taskId: taskIds, cursor: fc.string({ maxLength: 10 }) }, { requiredKeys: ['taskId'] }) },
            {
              weight: 2,
              arbitrary: fc.record(
                {
                  name: fc.constantFrom('everything__echo', 'everything__simulate-research-query'),
                  arguments: fc.oneof(fc.record({ message: fc.string({ maxLength: 20 }), topic: fc.string({ maxLength: 20 }) }), fc.jsonValue({ maxDepth: 2 })),
                  task: fc.oneof(fc.record({ ttl: fc.integer() }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 2 })),
                },
                { requiredKeys: ['name'] },
              ),
            },
            { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
          ),
        },
        { requiredKeys: ['jsonrpc', 'method', 'params'] },
      );
      await assertProperty(
        fc.asyncProperty(taskMessage, async (message) => {
          const text = toJsonText(message);
          // server-everything answers tasks/result of a task that ended without a result (cancelled) with its own
          // -32603, which names the task: relayed, with the host's id for the upstream's (32 hex digits).
          expectWellFormed(await post(text, session), text, /^Task (?![0-9a-f]{32} )\S+ has no result stored$/);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers a 2026-07-28 host’s requests about a task bridged to server-everything’s core tasks: real, altered and forged ids, bad inputResponses',
    async () => {
      const envelope = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
      };
      const modern = (method: string, name: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name });
      const research = 'everything__simulate-research-query';
      const created = await post(
        JSON.stringify({ jsonrpc: '2.0', id: 'task', method: 'tools/call', params: { name: research, arguments: { topic: 'fuzz' }, _meta: envelope } }),
        modern('tools/call', research),
      );
      const taskId = String(JSON.parse(created.text).result.taskId);
      const request = fc.record({
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 20 })),
        method: fc.constantFrom('tasks/get', 'tasks/update', 'tasks/cancel'),
        taskId: fc.oneof(
          fc.constant(taskId),
          fc.constant(`${taskId.slice(0, -2)}${taskId.endsWith('AA') ? 'AB' : 'AA'}`),
          fc.base64String({ maxLength: 200 }),
          fc.stringMatching(/^[\x21-\x7e]{1,40}$/),
        ),
        inputResponses: fc.oneof(fc.dictionary(fc.string({ maxLength: 40 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), fc.jsonValue({ maxDepth: 2 })),
      });
      await assertProperty(
        fc.asyncProperty(request, async ({ id, method, taskId: named, inputResponses }) => {
          const params = { taskId: named, ...(method === 'tasks/update' ? { inputResponses } : {}), _meta: envelope };
          const text = JSON.stringify({ jsonrpc: '2.0', id, method, params });
          expectWellFormed(await post(text, modern(method, named)), text);
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'refuses bodies that are not UTF-8, not JSON, too deep or too large',
    async () => {
      const bodies = fc.oneof(
        fc.constantFrom<string | Uint8Array>(
          '',
          '{',
          'nul',
          '\u0000',
          '{"jsonrpc":"2.0","id":1,"method":"ping"',
          '{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0"}',
          Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
          Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"p'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":${toJsonText(deep(100_000))}}}}`,
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"${'x'.repeat(1024 * 1024 + 1)}"}}}`,
        ),
        fc.uint8Array({ maxLength: 64 }),
        fc.string({ unit: 'binary', maxLength: 64 }),
      );
      await assertProperty(
        fc.asyncProperty(bodies, async (body) => {
          const res = await post(body);
          expectWellFormed(res, typeof body === 'string' ? body : Buffer.from(body).toString('latin1'));
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers garbage in the session, protocol version, accept, content type and authorization headers',
    async () => {
      const printable = fc.stringMatching(/^[\x21-\x7e]{1,40}$/);
      const headers = fc.record(
        {
          'mcp-session-id': fc.oneof(
            printable,
            fc.constantFrom('', `${sessionId}==`, `${sessionId}=`, sessionId.slice(0, -2), `${sessionId}x`, 'A'.repeat(4000)),
          ),
          'mcp-protocol-version': fc.oneof(printable, fc.constantFrom('', '2024-11-05', '2025-03-26', '2025-11-25', '2026-07-28', '1999-01-01', 'latest')),
          accept: fc.oneof(printable, fc.constantFrom('', 'text/html', 'application/json', 'text/event-stream', '*/*')),
          'content-type': fc.oneof(printable, fc.constantFrom('', 'text/plain', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded')),
          authorization: fc.oneof(
            printable,
            fc.constantFrom('', 'Bearer', 'Bearer ', `Bearer ${token}x`, `Basic ${Buffer.from('a:b').toString('base64')}`, `bearer ${token}`),
          ),
          'mcp-method': printable,
          'last-event-id': printable,
        },
        { requiredKeys: [] },
      );
      const messages = fc.constantFrom(
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"hi"}}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":3,"method":"ping"}',
      );
      await assertProperty(
        fc.asyncProperty(headers, messages, async (h, body) => {
          expectWellFormed(await post(body, h), { headers: h, body });
        }),
        RUNS,
      );
      await expectNormalCall();
    },
    timeout,
  );

  it(
    'answers GET and DELETE with a session id that is not the session, and the legacy message endpoint with an unknown stream',
    async () => {
      const printable = fc.stringMatching(/^[\x21-\x7e]{1,60}$/);
      const notTheSession = fc.oneof(printable, fc.constantFrom('', `${sessionId}==`, `${sessionId}x`)).filter((id) => id !== sessionId);
      await assertProperty(
        fc.asyncProperty(fc.constantFrom('GET', 'DELETE', 'LEGACY'), notTheSession, async (method, id) => {
          const res =
            method === 'LEGACY'
              ? await post('{"jsonrpc":"2.0","id":1,"method":"ping"}', {}, `${url.replace(/\/mcp$/, '/message')}?sessionId=${encodeURIComponent(id)}`)
              : await request(method, undefined, { 'mcp-session-id': id, 'content-type': '' });
          expectWellFormed(res, { method, id });
          expect(res.status).toBeGreaterThanOrEqual(400);
        }),
        Math.ceil(RUNS / 2),
      );
      await expectNormalCall();
    },
    timeout,
  );
});
