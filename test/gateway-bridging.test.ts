import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';
import { Client as Client2025 } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, legacySseClient, listenLoopback, modernEnvelope, modernHeaders, registerServer, startReplica } from './helpers/gateway.js';
import { startAskingUpstream, type AskingUpstream } from './helpers/asking-upstream.js';
import { startModernUpstream } from './helpers/modern-upstream.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';
import { missingCapability } from '../src/gateway/bridge-input-requests.js';
import { InputWaiters } from '../src/gateway/bridge-input-rounds.js';

/**
 * Bridging between protocol revisions at one gateway (contract 8.1): a 2026-07-28
 * host using a 2025 upstream that asks for input with server-to-client requests
 * (an input_required result with a sealed requestState, the upstream's call held
 * open), and a 2025 host using a 2026-07-28 upstream that answers input_required
 * (server-to-client requests on the host's stream, the upstream retried). Real
 * peers: the 1.x SDK (2025 host and upstream), the v2 SDK (2026-07-28 host and
 * upstream), all on 127.0.0.1.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let asking: AskingUpstream;
let modern: Awaited<ReturnType<typeof startModernUpstream>>;
let everythingSse: Upstream;
let gatewayGuid: string;
const clients: { close(): Promise<void> }[] = [];
const extraApps: FastifyInstance[] = [];

const HOST_CAPABILITIES = { elicitation: {}, sampling: {}, roots: {} };
const ROOTS = [{ uri: 'file:///work/project', name: 'project' }];
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

/** A token (its own connection, so its call logs are its own) for the bridging gateway. */
async function connection(): Promise<{ token: string; connectionGuid: string; url: string }> {
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid });
  return { token: issued.body.token, connectionGuid: issued.body.connectionGuid, url: issued.body.url.replace(t.config.publicBaseUrl, base) };
}

/** A v2 client pinned to 2026-07-28 that fulfils input_required with its handlers (the SDK's auto-fulfilment). */
async function modernHost(url: string, token: string, asked: string[] = [], legs?: string[]): Promise<Client2026> {
  const client = new Client2026(
    { name: 'host-2026', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: HOST_CAPABILITIES },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(`elicit:${request.params.message}`);
    const message = request.params.message;
    const content: Record<string, string | boolean> = message === 'Your name?' ? { name: 'Ada' } : { ok: true };
    return { action: 'accept', content };
  });
  client.setRequestHandler('sampling/createMessage', async (request) => {
    const first = request.params.messages[0]!.content as { text?: string };
    asked.push(`sample:${first.text ?? ''}`);
    return { model: 'model-2026', role: 'assistant', content: { type: 'text', text: `hello ${first.text ?? ''}` } };
  });
  client.setRequestHandler('roots/list', async () => {
    asked.push('roots');
    return { roots: ROOTS };
  });
  await client.connect(
    new Transport2026(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } }, ...(legs ? { fetch: recordingFetch(legs) } : {}) }),
  );
  clients.push(client);
  return client;
}

/** A fetch that notes each request's method (a retry leg marked) and the answer: what an assertion on a call's rounds shows when it fails. */
function recordingFetch(legs: string[]): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const res = await fetch(url, init);
    const sent = (typeof init?.body === 'string' ? JSON.parse(init.body) : {}) as { method?: string; params?: { requestState?: unknown } };
    const leg = `${sent.method ?? init?.method ?? 'GET'}${sent.params?.requestState === undefined ? '' : ' (retry)'} -> ${res.status}`;
    void res
      .clone()
      .text()
      .then(
        (body) => legs.push(`${leg} ${body.slice(0, 300)}`),
        () => legs.push(`${leg} (body unread)`),
      );
    return res;
  };
}

/**
 * A 1.x client (a 2025 host with a session) that answers elicitation, sampling and roots requests;
 * over Streamable HTTP, or the legacy HTTP+SSE transport when the URL ends in /sse.
 */
async function legacyHost(
  url: string,
  token: string,
  asked: string[] = [],
  capabilities: Record<string, unknown> = HOST_CAPABILITIES,
  fetchVia?: typeof fetch,
): Promise<Client2025> {
  const client: Client2025 = url.endsWith('/sse')
    ? await legacySseClient(url, token, capabilities)
    : await gatewayClient(url, token, { capabilities, ...(fetchVia ? { fetch: fetchVia } : {}) });
  clients.push(client);
  if (!capabilities.elicitation) return client;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(`elicit:${request.params.message}`);
    return request.params.message === 'Your name?' ? { action: 'accept', content: { name: 'Grace' } } : { action: 'accept', content: { ok: true } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    const first = request.params.messages[0]!.content as { text?: string };
    asked.push(`sample:${first.text ?? ''}`);
    return { model: 'model-2025', role: 'assistant', content: { type: 'text', text: `hi ${first.text ?? ''}` } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push('roots');
    return { roots: ROOTS };
  });
  return client;
}

/** The connection's call-log rows of one type, after the writer has flushed. */
async function rows(connectionGuid: string, type: string): Promise<{ tool_name: string; status: string; error_message: string | null; method: string }[]> {
  await t.runtime.services.callLogs.flush();
  const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid, type } });
  return logs.body.items;
}

/** Another replica over the same services with a short upstream timeout (which also bounds how long input is awaited). */
async function shortReplica(): Promise<string> {
  const { app, base: replicaBase } = await startReplica({
    ...t.runtime.services,
    config: { ...t.config, gateway: { ...t.config.gateway, upstreamTimeoutMs: 1500 } },
  });
  extraApps.push(app);
  return replicaBase;
}

/** Waits (without a deadline of its own) until the connection has a row that `found` accepts. */
async function eventually<T>(read: () => Promise<T[]>, found: (row: T) => boolean): Promise<T> {
  for (;;) {
    const hit = (await read()).find(found);
    if (hit) return hit;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The envelope and headers of a raw 2026-07-28 tools/call. */
function modernCall(token: string, name: string, args: Record<string, unknown>, retry: Record<string, unknown> = {}): RequestInit {
  return {
    method: 'POST',
    headers: modernHeaders(token, 'tools/call', name),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        ...retry,
        _meta: modernEnvelope('raw-2026', HOST_CAPABILITIES),
      },
    }),
  };
}

/** The JSON-RPC message of a response, whether it came as JSON or as the last event of a stream. */
async function answerOf(res: Response): Promise<{ result?: Record<string, any>; error?: { code: number; message: string; data?: Record<string, unknown> } }> {
  const body = await res.text();
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const data = body
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
    return data.find((m) => 'result' in m || 'error' in m) as never;
  }
  return JSON.parse(body);
}

beforeAll(async () => {
  [t, asking, modern, everythingSse] = await Promise.all([
    startTestApp({ GATEWAY_UPSTREAM_TIMEOUT_MS: '20000' }),
    startAskingUpstream(),
    startModernUpstream({ asksForInput: true }),
    startEverything('sse'),
  ]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const old = await registerServer(t, ws, { name: 'Asking', url: asking.url, authType: 'none' });
  const next = await registerServer(t, ws, { name: 'Modern', url: modern.url, authType: 'none' });
  const sse = await registerServer(t, ws, { name: 'Everything', url: everythingSse.url, authType: 'none' });
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Bridging gateway' });
  gatewayGuid = gw.body.guid;
  for (const serverGuid of [old.serverGuid, next.serverGuid, sse.serverGuid])
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: serverGuid });
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  for (const app of extraApps) await app.close();
  await t?.close();
  await Promise.all([asking, modern, everythingSse].map((u) => u?.close()));
});

describe('a 2026-07-28 host using a 2025 upstream that asks for input', () => {
  it("gets the upstream's elicitation, sampling and roots requests as input_required, and its retry completes the one upstream call", async () => {
    const { url, token, connectionGuid } = await connection();
    const asked: string[] = [];
    const host = await modernHost(url, token, asked);
    const before = { ...asking.runs };
    expect(text(await host.callTool({ name: 'asking__ask-confirm', arguments: { action: 'deploy' } }))).toBe('deploy: accept {"ok":true}');
    expect(text(await host.callTool({ name: 'asking__ask-sample', arguments: { prompt: 'world' } }))).toBe('model model-2026 said hello world');
    expect(text(await host.callTool({ name: 'asking__ask-roots', arguments: {} }))).toBe('roots: file:///work/project');
    // Two requests, one after the other: two rounds of one held call.
    expect(text(await host.callTool({ name: 'asking__ask-twice', arguments: {} }))).toBe('Ada: hello Greet Ada');
    expect(asked).toEqual(['elicit:Confirm deploy?', 'sample:world', 'roots', 'elicit:Your name?', 'sample:Greet Ada']);
    // Each tool ran once upstream: the retries answered the waiting call, they did not call again.
    for (const name of ['ask-confirm', 'ask-sample', 'ask-roots', 'ask-twice']) expect((asking.runs[name] ?? 0) - (before[name] ?? 0)).toBe(1);
    // The upstream heard the host's capabilities (that is why it could ask).
    expect(asking.declared.at(-1)).toMatchObject({ elicitation: {}, sampling: {} });
    // One row per call, written once, whatever the number of rounds.
    const logged = await rows(connectionGuid, 'tool_call');
    expect(logged.map((r) => [r.tool_name, r.status]).sort()).toEqual([
      ['ask-confirm', 'ok'],
      ['ask-roots', 'ok'],
      ['ask-sample', 'ok'],
      ['ask-twice', 'ok'],
    ]);
  });

  it("gets a request the upstream sends on its session's own stream, not the call's, when the call is the session's only one in flight", async () => {
    const { url, token } = await connection();
    const asked: string[] = [];
    const host = await modernHost(url, token, asked);
    expect(text(await host.callTool({ name: 'asking__ask-roots-aside', arguments: {} }))).toBe('roots: file:///work/project');
    expect(asked).toEqual(['roots']);
  });

  it('answers such a request at once, in words, when the session has several calls in flight (which one asked cannot be told)', async () => {
    const { url, token } = await connection();
    const asked: string[] = [];
    const host = await modernHost(url, token, asked);
    const holds = asking.runs.hold ?? 0;
    const held = host.callTool({ name: 'asking__hold', arguments: { ms: 1_500 } });
    await vi.waitFor(() => expect(asking.runs.hold).toBe(holds + 1), { timeout: 5_000, interval: 20 });
    expect(text(await host.callTool({ name: 'asking__ask-roots-aside', arguments: {} }))).toMatch(
      /^roots refused: .*The gateway cannot tell which of the host's requests in flight roots\/list belongs to/,
    );
    expect(asked).toEqual([]);
    expect(text(await held)).toBe('held 1500 ms');
  });

  it('shares one upstream session among the calls of a connection, and opens another when the upstream forgot it', async () => {
    const { url, token } = await connection();
    const host = await modernHost(url, token);
    const sessionsBefore = asking.declared.length;
    for (let i = 0; i < 3; i++) expect(text(await host.callTool({ name: 'asking__ask-roots', arguments: {} }))).toBe('roots: file:///work/project');
    await Promise.all([1, 2].map(() => host.callTool({ name: 'asking__ask-roots', arguments: {} })));
    // Five calls, one initialize: the session is the connection's, not each call's.
    expect(asking.declared.length - sessionsBefore).toBe(1);
    asking.forgetSessions();
    expect(text(await host.callTool({ name: 'asking__ask-roots', arguments: {} }))).toBe('roots: file:///work/project');
    expect(asking.declared.length - sessionsBefore).toBe(2);
  });

  it('relays the progress the upstream reports before it asks, and after, under the token of the retry that resumed the call', async () => {
    const { url, token } = await connection();
    const host = await modernHost(url, token);
    const progress: string[] = [];
    const result = await host.callTool(
      { name: 'asking__slow-confirm', arguments: {} },
      { onprogress: (p) => progress.push(`${p.progress}/${p.total ?? '-'}`) },
    );
    expect(text(result)).toBe('slow: accept');
    // The upstream's own progress (1/2, then 2/2 once answered) comes through; the SDK adds its own per round (no total).
    // The SDK takes a notification only with the token of the request it is reading: 2/2 comes on the retry's.
    expect(progress).toContain('1/2');
    expect(progress).toContain('2/2');
  });

  it('refuses a forged, altered, misplaced or replayed requestState, and a retry that reaches another replica, in words', async () => {
    const { url, token, connectionGuid } = await connection();
    const first = await answerOf(await fetch(url, modernCall(token, 'asking__ask-confirm', { action: 'ship' })));
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const [key, request] = Object.entries(first.result!.inputRequests as Record<string, { method: string; params: { message: string } }>)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { message: 'Confirm ship?' } });
    const state = String(first.result!.requestState);
    // Nothing of the upstream or the gateway can be read from the state.
    expect(state).not.toMatch(/ship|svcgw|asking|127\.0\.0\.1/);
    const answer = { inputResponses: { [key]: { action: 'accept', content: { ok: true } } } };

    const forged = await answerOf(await fetch(url, modernCall(token, 'asking__ask-confirm', { action: 'ship' }, { ...answer, requestState: 'bm90LW91cnM' })));
    expect(forged.error).toMatchObject({ code: -32602, message: expect.stringMatching(/Invalid requestState: .*not issued by this gateway/) });
    const altered = state.slice(0, -3) + (state.endsWith('AAA') ? 'AAB' : 'AAA');
    expect(
      (await answerOf(await fetch(url, modernCall(token, 'asking__ask-confirm', { action: 'ship' }, { ...answer, requestState: altered })))).error?.code,
    ).toBe(-32602);
    const otherTool = await answerOf(await fetch(url, modernCall(token, 'asking__ask-sample', { prompt: 'x' }, { ...answer, requestState: state })));
    expect(otherTool.error?.message).toMatch(/issued for tools\/call asking__ask-confirm, not for this request/);
    const other = await connection();
    const otherConnection = await answerOf(
      await fetch(url, modernCall(other.token, 'asking__ask-confirm', { action: 'ship' }, { ...answer, requestState: state })),
    );
    expect(otherConnection.error?.message).toMatch(/not issued by this gateway for this connection/);

    const replica = await startReplica(t.runtime.services);
    extraApps.push(replica.app);
    const elsewhere = await answerOf(
      await fetch(url.replace(base, replica.base), modernCall(token, 'asking__ask-confirm', { action: 'ship' }, { ...answer, requestState: state })),
    );
    expect(elsewhere.error).toMatchObject({ code: -32000, data: { reason: 'held_by_another_replica' } });
    expect(elsewhere.error?.message).toMatch(/held by another gateway replica/);

    // The call still waits here: the right retry completes it; replaying it finds nothing waiting.
    const done = await answerOf(await fetch(url, modernCall(token, 'asking__ask-confirm', { action: 'ship' }, { ...answer, requestState: state })));
    expect(done.result?.content[0].text).toBe('ship: accept {"ok":true}');
    const replayed = await answerOf(await fetch(url, modernCall(token, 'asking__ask-confirm', { action: 'ship' }, { ...answer, requestState: state })));
    expect(replayed.error).toMatchObject({ code: -32000, data: { reason: 'no_longer_waiting' } });

    // One ok row for the call; the refused retries of this connection are rows of their own, with the reason.
    const logged = await rows(connectionGuid, 'tool_call');
    expect(logged.filter((r) => r.status === 'ok').map((r) => r.tool_name)).toEqual(['ask-confirm']);
    const refused = logged.filter((r) => r.status === 'error').map((r) => r.error_message);
    expect(refused).toHaveLength(5);
    expect(refused).toEqual(
      expect.arrayContaining([expect.stringMatching(/held by another gateway replica/), expect.stringMatching(/No upstream call waits/)]),
    );
  });
});

describe('a 2026-07-28 host using a 2025 upstream: limits', () => {
  it('ends a held call the host does not come back for: its one row says why, and a late retry is told its state expired', async () => {
    const { url, token, connectionGuid } = await connection();
    const replica = url.replace(base, await shortReplica());
    const first = await answerOf(await fetch(replica, modernCall(token, 'asking__ask-confirm', { action: 'forget' })));
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const row = await eventually(
      () => rows(connectionGuid, 'tool_call'),
      (r) => r.tool_name === 'ask-confirm',
    );
    expect(row).toMatchObject({ status: 'error', error_message: 'the host did not send the input the server asked for within 1500 ms' });
    const [key] = Object.keys(first.result!.inputRequests as object);
    const late = await answerOf(
      await fetch(
        replica,
        modernCall(
          token,
          'asking__ask-confirm',
          { action: 'forget' },
          { requestState: first.result!.requestState, inputResponses: { [key!]: { action: 'accept', content: { ok: true } } } },
        ),
      ),
    );
    // The state expired with the hold.
    expect(late.error).toMatchObject({ code: -32602, message: expect.stringMatching(/requestState has expired: send the request again without it/) });
  });

  it("bridges a 2025 upstream reached over the legacy HTTP+SSE transport (server-everything's sampling)", async () => {
    const { url, token } = await connection();
    const asked: string[] = [];
    // Each request and answer, for the message if the host is asked more than once (seen once under CI load).
    const legs: string[] = [];
    const host = await modernHost(url, token, asked, legs);
    const sampled = await host.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'over sse', maxTokens: 10 } });
    expect(text(sampled)).toContain('model-2026');
    expect(asked, legs.join('\n')).toHaveLength(1);
    expect(asked[0]).toMatch(/^sample:.*over sse/);
  });
});

describe('a 2025 host using a 2026-07-28 upstream that answers input_required', () => {
  it("gets the upstream's input requests as server-to-client requests on its session, and the gateway retries the upstream until it answers", async () => {
    const { url, token, connectionGuid } = await connection();
    const asked: string[] = [];
    const host = await legacyHost(url, token, asked);
    expect(text(await host.callTool({ name: 'modern__confirm', arguments: { action: 'deploy' } }))).toBe('deploy confirmed (state confirm:deploy)');
    expect(text(await host.callTool({ name: 'modern__sample', arguments: { prompt: 'world' } }))).toBe('model model-2025 said hi world (state sample)');
    expect(text(await host.callTool({ name: 'modern__roots', arguments: {} }))).toBe('roots: file:///work/project');
    expect(text(await host.callTool({ name: 'modern__two-step', arguments: {} }))).toBe('step-2:Grace: hi Greet Grace');
    expect(asked).toEqual(['elicit:Confirm deploy?', 'sample:world', 'roots', 'elicit:Your name?', 'sample:Greet Grace']);
    // The upstream was asked again with the answers and its own requestState.
    const retried = modern.requests.filter((r) => r.method === 'tools/call' && (r.params?.arguments as { action?: string })?.action === 'deploy');
    expect(retried.map((r) => r.params?.requestState)).toEqual([undefined, 'confirm:deploy']);
    expect(retried[1]!.params?.inputResponses).toEqual({ confirm: { action: 'accept', content: { ok: true } } });
    // One tool_call row per call, whatever the rounds; the host's answers are rows of their own, as for any 2025 relay.
    const calls = await rows(connectionGuid, 'tool_call');
    expect(calls.map((r) => [r.tool_name, r.status]).sort()).toEqual([
      ['confirm', 'ok'],
      ['roots', 'ok'],
      ['sample', 'ok'],
      ['two-step', 'ok'],
    ]);
    const answers = (await rows(connectionGuid, 'other')).filter((r) => r.method === 'response');
    expect(answers).toHaveLength(5);
    expect(answers.every((r) => r.status === 'ok')).toBe(true);
  });

  it("relays the upstream's progress around the rounds (its answers then come as event streams)", async () => {
    const { url, token } = await connection();
    const host = await legacyHost(url, token);
    const progress: string[] = [];
    const result = await host.callTool({ name: 'modern__slow-confirm', arguments: {} }, undefined, {
      onprogress: (p) => progress.push(`${p.progress}/${p.total}`),
    });
    expect(text(result)).toBe('slow confirmed (state slow)');
    // Once before the question, once on the retry.
    expect(progress).toEqual(['1/2', '1/2']);
  });

  it('ends the rounds when the host cancels its call while the gateway waits for its answer (notifications/cancelled)', async () => {
    const { url, token, connectionGuid } = await connection();
    const host = await gatewayClient(url, token, { capabilities: HOST_CAPABILITIES });
    clients.push(host);
    const cancel = new AbortController();
    // The host is asked, and instead of answering it cancels its call: the SDK sends notifications/cancelled.
    host.setRequestHandler(ElicitRequestSchema, () => {
      cancel.abort('changed my mind');
      return new Promise(() => undefined);
    });
    await expect(host.callTool({ name: 'modern__confirm', arguments: { action: 'cancelled' } }, undefined, { signal: cancel.signal })).rejects.toThrow();
    // The call's row says so (without the cancellation the round would wait out the 20 s upstream timeout and say that).
    const row = await eventually(
      () => rows(connectionGuid, 'tool_call'),
      (r) => r.tool_name === 'confirm',
    );
    expect(row.status).toBe('error');
    expect(row.error_message).toMatch(/needs input from the host, but the host cancelled the request/);
  });

  it('works for a host on the legacy HTTP+SSE endpoint too', async () => {
    const { url, token } = await connection();
    const asked: string[] = [];
    const host = await legacyHost(url.replace(/\/mcp$/, '/sse'), token, asked);
    expect(text(await host.callTool({ name: 'modern__confirm', arguments: { action: 'rollback' } }))).toBe('rollback confirmed (state confirm:rollback)');
    expect(asked).toEqual(['elicit:Confirm rollback?']);
  });

  it('tells the host why, when its answer reaches another replica than the one waiting for it', async () => {
    const { url, token, connectionGuid } = await connection();
    const waiting = await shortReplica();
    // Everything goes to the waiting replica but the host's answers (messages without a method), which go to the first one.
    const split: typeof fetch = (input, init) => {
      const target = typeof init?.body === 'string' && !('method' in (JSON.parse(init.body) as object)) ? base : waiting;
      const path = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      return fetch(target + path.pathname + path.search, init);
    };
    const host = await legacyHost(url, token, [], HOST_CAPABILITIES, split);
    await expect(host.callTool({ name: 'modern__confirm', arguments: { action: 'split' } })).rejects.toThrow(
      /did not reach this gateway process within 1500 ms \(with several replicas, the requests of one session must reach the same replica/,
    );
    const answer = await eventually(
      () => rows(connectionGuid, 'other'),
      (r) => r.method === 'response',
    );
    expect(answer.error_message).toMatch(/no call of this gateway process waits for this answer/);
  });

  it("answers a host that did not declare the capability with the upstream's JSON-RPC error (sent with an HTTP 400), not a hang", async () => {
    const { url, token } = await connection();
    const host = await legacyHost(url, token, [], {});
    // The host's capabilities reached the upstream in the envelope, so the upstream refuses by itself, and says why.
    await expect(host.callTool({ name: 'modern__confirm', arguments: { action: 'deploy' } })).rejects.toThrow(
      /-32021.*client capabilities do not declare the required capability/,
    );
  });
});

describe('the same revision on both sides', () => {
  it("a 2026-07-28 host fulfils a 2026-07-28 upstream's input_required through the gateway, the upstream getting its own requestState back", async () => {
    const { url, token, connectionGuid } = await connection();
    const host = await modernHost(url, token);
    expect(text(await host.callTool({ name: 'modern__confirm', arguments: { action: 'merge' } }))).toBe('merge confirmed (state confirm:merge)');
    expect(text(await host.callTool({ name: 'modern__two-step', arguments: {} }))).toBe('step-2:Ada: hello Greet Ada');
    // Every leg is an upstream call of its own, so a row of its own.
    const logged = await rows(connectionGuid, 'tool_call');
    expect(logged.filter((r) => r.tool_name === 'confirm')).toHaveLength(2);
    expect(logged.filter((r) => r.tool_name === 'two-step')).toHaveLength(3);
  });

  it('a 2025 host answers a 2025 upstream as before (relayed requests)', async () => {
    const { url, token } = await connection();
    const host = await legacyHost(url, token);
    expect(text(await host.callTool({ name: 'asking__ask-confirm', arguments: { action: 'tag' } }))).toBe('tag: accept {"ok":true}');
  });
});

describe('which host can be asked what', () => {
  it('needs the capability of each kind of request, and the elicitation mode the host declared', () => {
    const form = { method: 'elicitation/create', params: { message: 'ok?', requestedSchema: {} } };
    const url = { method: 'elicitation/create', params: { mode: 'url', message: 'sign in', url: 'https://example.com' } };
    expect(missingCapability(form, { elicitation: {} })).toBeNull();
    expect(missingCapability(url, { elicitation: {} })).toBe('elicitation (url mode)');
    expect(missingCapability(url, { elicitation: { url: {} } })).toBeNull();
    expect(missingCapability(form, { elicitation: { url: {} } })).toBe('elicitation (form mode)');
    expect(missingCapability(form, { sampling: {} })).toBe('elicitation');
    expect(missingCapability({ method: 'sampling/createMessage' }, { sampling: {} })).toBeNull();
    expect(missingCapability({ method: 'roots/list' }, { sampling: {} })).toBe('roots');
    expect(missingCapability({ method: 'tasks/get' }, HOST_CAPABILITIES)).toMatch(/not an input request/);
  });
});

describe("a 2025 host's answers to bridged requests", () => {
  it('reach only the round of the same connection, once each', async () => {
    const waiters = new InputWaiters();
    const round = waiters.open(1, 'server-1', 'connection-a');
    const answer = { jsonrpc: '2.0', id: round.idOf(0), result: { action: 'accept' } } as never;
    expect(InputWaiters.answers(answer)).toBe(true);
    expect(waiters.deliver(answer, 'connection-b')).toBeNull();
    expect(waiters.deliver({ jsonrpc: '2.0', id: round.idOf(1), result: {} } as never, 'connection-a')).toBeNull();
    expect(waiters.deliver(answer, 'connection-a')).toEqual({ serverGuid: 'server-1' });
    expect(waiters.deliver(answer, 'connection-a')).toBeNull();
    expect(await round.wait(1000, new AbortController().signal)).toEqual([answer]);
  });
});

describe("an upstream's requestState holding the credential it was sent", () => {
  it('goes back to the upstream whole, from a host of either revision, while the host sees the credential nowhere', async () => {
    const key = 'kEyInStAtE-7Qw9Zp2Lx';
    const keyed = await registerServer(t, ws, { name: 'Keyed', url: modern.url, authType: 'headers', headers: { 'X-Api-Key': key } });
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Keyed gateway' });
    const assigned = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
      gatewayGuid: gw.body.guid,
      inboundServerGuid: keyed.serverGuid,
      identityScheme: 'sharedIdentity',
      sharedIdentityGuid: keyed.identityGuid,
    });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(201);
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    const url = issued.body.url.replace(t.config.publicBaseUrl, base);
    // The upstream's state is `confirm:<action>`: an action spelling the key puts the key in it.
    const retriedStates = () =>
      modern.requests.filter((r) => r.method === 'tools/call' && r.params?.requestState !== undefined).map((r) => r.params!.requestState);

    const asked: string[] = [];
    const legacy = await legacyHost(url, issued.body.token, asked);
    const before = retriedStates().length;
    expect(text(await legacy.callTool({ name: 'keyed__confirm', arguments: { action: key } }))).toBe('[REDACTED] confirmed (state confirm:[REDACTED])');
    expect(retriedStates().slice(before)).toEqual([`confirm:${key}`]);
    expect(asked).toEqual(['elicit:Confirm [REDACTED]?']);

    const first = await answerOf(await fetch(url, modernCall(issued.body.token, 'keyed__confirm', { action: key })));
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    expect(JSON.stringify(first.result)).not.toContain(key);
    const [inputKey] = Object.keys(first.result!.inputRequests as object);
    const retry = { inputResponses: { [inputKey!]: { action: 'accept', content: { ok: true } } }, requestState: first.result!.requestState };
    const done = await answerOf(await fetch(url, modernCall(issued.body.token, 'keyed__confirm', { action: key }, retry)));
    expect(done.result?.content[0].text).toBe('[REDACTED] confirmed (state confirm:[REDACTED])');
    expect(retriedStates().slice(before)).toEqual([`confirm:${key}`, `confirm:${key}`]);
  });
});
