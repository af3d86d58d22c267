import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BATCH_MESSAGES } from '../src/gateway/batch.js';
import { listenLoopback, registerServer } from './helpers/gateway.js';
import { invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * JSON-RPC batches, which revision 2025-03-26 requires a server to receive (and 2025-06-18
 * removed): a raw host in a 2025-03-26 session batches calls to server-everything through
 * a gateway, and hosts of the later revisions are refused.
 */
const PER_CONNECTION_PER_MINUTE = 150;
let t: TestApp;
let everything: Upstream;
let ws: Awaited<ReturnType<typeof newWorkspace>>;
let gatewayGuid: string;
let base: string;
let echo: string;

beforeAll(async () => {
  [t, everything] = await Promise.all([
    startTestApp({ GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: String(PER_CONNECTION_PER_MINUTE), GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '0' }),
    startEverything('streamableHttp'),
  ]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const server = await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' });
  gatewayGuid = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Batched gateway' })).body.guid;
  expect((await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server.serverGuid })).status).toBe(201);
  const host = await openSession('2025-03-26');
  const listed = await host.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  echo = (JSON.parse(listed.text) as { result: { tools: { name: string }[] } }).result.tools.map((tool) => tool.name).find((name) => name.endsWith('__echo'))!;
  expect(echo).toBeTruthy();
}, 120_000);

afterAll(async () => {
  await t?.close();
  await everything?.close();
});

interface RawAnswer {
  status: number;
  contentType: string;
  text: string;
}

/** A host without an SDK: a new gateway token (its own connection), a session of `revision`, and raw POSTs in it. */
async function openSession(revision: string | null, headers: Record<string, string> = {}) {
  const issued = (await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid })).body;
  const url = (issued.url as string).replace(t.config.publicBaseUrl, base);
  const connectionGuid = issued.connectionGuid as string;
  let sessionId = '';
  const post = async (body: unknown, extra: Record<string, string> = {}): Promise<RawAnswer> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${issued.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
        ...headers,
        ...extra,
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
  };
  if (revision) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'batching-host', version: '1' } },
      }),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(await res.text()).result.protocolVersion).toBe(revision);
    sessionId = res.headers.get('mcp-session-id')!;
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  }
  return { post, connectionGuid };
}

const call = (id: string | number, message: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: echo, arguments: { message } } });
const textOf = (answer: { result?: { content?: { text?: string }[] } }) => answer.result?.content?.[0]?.text;

/** The call-log rows of one connection, as query_logs returns them. */
async function rowsOf(connectionGuid: string): Promise<Record<string, unknown>[]> {
  await t.runtime.services.callLogs.flush();
  const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid }, includeDetail: true, take: 1000 });
  expect(logs.status).toBe(200);
  return logs.body.items;
}

describe('JSON-RPC batches (revision 2025-03-26)', () => {
  it('answers a batch of a 2025-03-26 session with one JSON array, an answer per request, and writes a call-log row per call', async () => {
    const host = await openSession('2025-03-26');
    const res = await host.post([
      call(1, 'one'),
      { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
      call('two', 'two'),
      { jsonrpc: '2.0', id: 3, method: 'ping' },
    ]);
    expect(res.status).toBe(200);
    expect(res.contentType).toContain('application/json');
    const answers = JSON.parse(res.text) as { id: unknown; result?: { content?: { text?: string }[] } }[];
    expect(answers.map((a) => a.id).sort((a, b) => String(a).localeCompare(String(b)))).toEqual([1, 3, 'two']);
    expect(textOf(answers.find((a) => a.id === 1)!)).toBe('Echo: one');
    expect(textOf(answers.find((a) => a.id === 'two')!)).toBe('Echo: two');
    expect(answers.find((a) => a.id === 3)).toMatchObject({ result: {} });
    const calls = (await rowsOf(host.connectionGuid)).filter((row) => row.type === 'tool_call');
    expect(calls).toHaveLength(2);
    for (const row of calls) expect(row).toMatchObject({ method: 'tools/call', status: 'ok', tool_name: 'echo', protocol_version: '2025-03-26' });
    expect(calls.map((row) => JSON.parse(row.request_body as string).params.arguments.message).sort()).toEqual(['one', 'two']);
  });

  it('answers 202 to a batch of notifications alone', async () => {
    const host = await openSession('2025-03-26');
    const res = await host.post([{ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }]);
    expect(res.status).toBe(202);
    expect(res.text).toBe('');
  });

  it('answers each message it cannot serve on its own, and serves the rest', async () => {
    const host = await openSession('2025-03-26');
    const initialize = {
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const res = await host.post([{ jsonrpc: '1.0', id: 7, method: 'ping' }, initialize, [call(9, 'nested')], call(8, 'served')]);
    expect(res.status).toBe(200);
    const answers = JSON.parse(res.text) as { id: unknown; error?: { code: number; message: string } }[];
    expect(answers).toHaveLength(4);
    const refusals = answers.filter((a) => a.error);
    expect(refusals).toHaveLength(3);
    for (const refusal of refusals) expect(refusal.error!.code).toBe(-32600);
    expect(refusals.filter((a) => a.id === null)).toHaveLength(2);
    expect(answers.find((a) => a.id === 'init')!.error!.message).toMatch(/initialize must not be part of a JSON-RPC batch/);
    expect(textOf(answers.find((a) => a.id === 8) as never)).toBe('Echo: served');
    // Only the served call reached the upstream and the call log.
    const calls = (await rowsOf(host.connectionGuid)).filter((row) => row.type === 'tool_call');
    expect(calls.map((row) => JSON.parse(row.request_body as string).params.arguments.message)).toEqual(['served']);
  });

  it('refuses every request of a batch that shares its id with another (5 and "5" are two ids), and serves the rest', async () => {
    const host = await openSession('2025-03-26');
    const res = await host.post([call(5, 'first'), call(5, 'second'), call('5', 'string id'), { jsonrpc: '2.0', id: 5, method: 'ping' }]);
    expect(res.status).toBe(200);
    const answers = JSON.parse(res.text) as { id: unknown; error?: { code: number; message: string } }[];
    expect(answers).toHaveLength(4);
    const refused = answers.filter((a) => a.id === 5);
    expect(refused).toHaveLength(3);
    for (const answer of refused)
      expect(answer.error).toMatchObject({ code: -32600, message: expect.stringMatching(/The id 5 is carried by more than one request/) });
    expect(textOf(answers.find((a) => a.id === '5') as never)).toBe('Echo: string id');
    const calls = (await rowsOf(host.connectionGuid)).filter((row) => row.type === 'tool_call');
    expect(calls.map((row) => JSON.parse(row.request_body as string).params.arguments.message)).toEqual(['string id']);
  });

  it('answers a host that takes only event streams with one stream carrying every answer', async () => {
    const host = await openSession('2025-03-26', { accept: 'text/event-stream' });
    const res = await host.post([call('a', 'first'), call('b', 'second')]);
    expect(res.status).toBe(200);
    expect(res.contentType).toContain('text/event-stream');
    const events = res.text
      .split('\n\n')
      .map((event) => event.split('\n').find((line) => line.startsWith('data: ')))
      .filter((line): line is string => line !== undefined)
      .map((line) => JSON.parse(line.slice(6)) as { id: string });
    expect(events.map((e) => e.id).sort()).toEqual(['a', 'b']);
    expect(events.map((e) => textOf(e as never)).sort()).toEqual(['Echo: first', 'Echo: second']);
  });

  it('streams a batch whose call reports progress: the notifications and every answer in one event stream, a row per call', async () => {
    const host = await openSession('2025-03-26');
    const longRunning = {
      jsonrpc: '2.0',
      id: 'long',
      method: 'tools/call',
      params: { name: echo.replace(/__echo$/, '__trigger-long-running-operation'), arguments: { duration: 0.3, steps: 3 }, _meta: { progressToken: 'p1' } },
    };
    const res = await host.post([longRunning, call('short', 'beside')]);
    expect(res.status).toBe(200);
    expect(res.contentType).toContain('text/event-stream');
    const messages = [...res.text.matchAll(/^data: (.*)$/gm)].map(
      (m) => JSON.parse(m[1]!) as { id?: string; method?: string; params?: { progressToken?: string } },
    );
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress).toHaveLength(3);
    expect(progress.every((m) => m.params?.progressToken === 'p1')).toBe(true);
    expect(
      messages
        .filter((m) => m.id !== undefined)
        .map((m) => m.id)
        .sort(),
    ).toEqual(['long', 'short']);
    // The stream ends after the last answer: the long call's, which comes after its progress.
    expect(messages.at(-1)!.id).toBe('long');
    const calls = (await rowsOf(host.connectionGuid)).filter((row) => row.type === 'tool_call');
    expect(calls.map((row) => row.tool_name).sort()).toEqual(['echo', 'trigger-long-running-operation']);
  });

  it('refuses a batch outside a 2025-03-26 session, an empty one and one too large, serving nothing of it', async () => {
    for (const revision of ['2025-06-18', '2025-11-25']) {
      const host = await openSession(revision);
      const res = await host.post([call(1, 'refused')]);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toMatchObject({ id: null, error: { code: -32600, message: expect.stringContaining(`not part of revision ${revision}`) } });
      expect((await rowsOf(host.connectionGuid)).filter((row) => row.type === 'tool_call')).toEqual([]);
    }
    const sessionless = await openSession(null);
    const withoutSession = await sessionless.post([call(1, 'refused')]);
    expect(withoutSession.status).toBe(400);
    expect(JSON.parse(withoutSession.text).error.message).toMatch(/only in a session of revision 2025-03-26/);
    const host = await openSession('2025-03-26');
    const empty = await host.post([]);
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.text).error.message).toMatch(/empty/);
    const tooLarge = await host.post(Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => call(i, 'refused')));
    expect(tooLarge.status).toBe(400);
    expect(JSON.parse(tooLarge.text).error.message).toContain(`at most ${MAX_BATCH_MESSAGES}`);
    expect((await rowsOf(host.connectionGuid)).filter((row) => row.type === 'tool_call')).toEqual([]);
  });

  it('counts every message of a batch against the rate limits', async () => {
    const host = await openSession('2025-03-26');
    // initialize and notifications/initialized took two of the connection's requests this minute.
    const fits = await host.post(Array.from({ length: MAX_BATCH_MESSAGES }, (_, i) => call(i, 'fits')));
    expect(fits.status).toBe(200);
    expect(JSON.parse(fits.text)).toHaveLength(MAX_BATCH_MESSAGES);
    const over = await host.post(Array.from({ length: MAX_BATCH_MESSAGES }, (_, i) => call(i, 'over')));
    expect(over.status).toBe(429);
    expect(JSON.parse(over.text).error).toMatchObject({ code: -32029, data: { code: 'rate_limited' } });
    const messages = (await rowsOf(host.connectionGuid))
      .filter((row) => row.type === 'tool_call')
      .map((row) => JSON.parse(row.request_body as string).params.arguments.message);
    expect(messages.filter((m) => m === 'over')).toEqual([]);
  });
});
