import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_OPEN_STREAMS_PER_CONNECTION } from '../src/gateway/rate-limits.js';
import { rawListen } from './helpers/gateway.js';
import { invoke } from './helpers/harness.js';
import { startTwoEraGateway, type TwoEraGateway } from './helpers/two-era-gateway.js';

/**
 * Hostile input at a gateway's host-facing endpoints that the fuzz (fuzz-gateway.test.ts) answers well-formed but
 * not in the words it needs: a request method without an id, a body declared as something else than JSON (or in
 * another charset than UTF-8) or compressed, more event streams than a host ever opens, a 2026-07-28 retry whose
 * answers or state are of the wrong type. Raw HTTP against a gateway in front of server-everything (behind a tap, to
 * see what reaches it) and a 2026-07-28 v2 SDK upstream that asks for input.
 */
let g: TwoEraGateway;
let session: Record<string, string>;

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'hostile-host', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};

beforeAll(async () => {
  g = await startTwoEraGateway('Hostile input', { asksForInput: true }, { tapEverything: true });
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hostile-host', version: '1' } },
  });
  session = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);
}, 120_000);

afterAll(async () => {
  await g?.close();
});

/** One raw POST; `headers` override the usual ones (undefined drops one). */
async function post(body: unknown, headers: Record<string, string | undefined> = {}, target?: string) {
  const all: Record<string, string | undefined> = {
    authorization: `Bearer ${g.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...headers,
  };
  const res = await fetch(target ?? g.url, {
    method: 'POST',
    headers: Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined)),
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: () => JSON.parse(text) as { id?: unknown; result?: any; error?: { code: number; message: string } },
  };
}

const echoCall = (message: string) => ({ jsonrpc: '2.0', id: 'echo', method: 'tools/call', params: { name: 'everything__echo', arguments: { message } } });

/** A 2026-07-28 request with its envelope and headers. */
const modern = (method: string, name: string, params: Record<string, unknown>, withId = true) =>
  [
    { jsonrpc: '2.0', ...(withId ? { id: 1 } : {}), method, params: { ...params, _meta: ENVELOPE } },
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name },
  ] as const;

async function expectStillServed(): Promise<void> {
  const res = await post(echoCall('still here'), session);
  expect(res.status).toBe(200);
  expect(res.json().result.content[0].text).toBe('Echo: still here');
}

/** Opens a legacy HTTP+SSE stream; the URL its messages go to, and a way to close it. */
async function legacyStream(): Promise<{ messageUrl: string; close: () => void }> {
  const abort = new AbortController();
  const res = await fetch(g.url.replace(/\/mcp$/, '/sse'), { headers: { authorization: `Bearer ${g.token}` }, signal: abort.signal });
  const reader = res.body!.getReader();
  let text = '';
  while (!/data: (\S+)\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  return { messageUrl: new URL(/data: (\S+)\n/.exec(text)![1]!, g.url).href, close: () => abort.abort() };
}

describe('a request method sent without an id', () => {
  it('is refused (HTTP 400, -32600) naming the method, in a 2025 session and from a 2026-07-28 host, and reaches no upstream', async () => {
    const notified = { jsonrpc: '2.0', method: 'tools/call', params: { name: 'everything__echo', arguments: { message: 'lost id' } } };
    const old = await post(notified, session);
    expect(old.status).toBe(400);
    expect(old.json().error).toMatchObject({ code: -32600, message: expect.stringMatching(/^tools\/call is a request, and has no id: send it with an id/) });
    const [body, headers] = modern('tools/call', 'everything__echo', { name: 'everything__echo', arguments: { message: 'lost id' } }, false);
    const fresh = await post(body, headers);
    expect(fresh.status).toBe(400);
    expect(fresh.json().error).toMatchObject({ code: -32600, message: expect.stringMatching(/^tools\/call is a request, and has no id/) });
    // A notification proper is still relayed (202), and the session serves on.
    expect((await post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, session)).status).toBe(202);
    await expectStillServed();
    expect(g.tap!.messages.filter((m) => m.method === 'tools/call' && m.id === undefined)).toEqual([]);
    expect(g.tap!.messages.some((m) => m.method === 'notifications/roots/list_changed')).toBe(true);
  });

  it('names an id of the wrong type as what it is', async () => {
    const res = await post({ ...echoCall('x'), id: { nested: 1 } }, session);
    expect(res.status).toBe(400);
    expect(res.json().error).toMatchObject({ code: -32600, message: 'The id must be a string or an integer, not an object.' });
  });
});

describe('a body that is not declared application/json, or is compressed', () => {
  it('is refused with HTTP 415 naming the header, on the Streamable HTTP endpoint and the legacy one', async () => {
    const message = JSON.stringify(echoCall('typed'));
    const cases: [Record<string, string | undefined>, string | Uint8Array, RegExp][] = [
      [{ 'content-type': 'text/plain' }, message, /^Content-Type text\/plain is not accepted: send the message as application\/json\.$/],
      // A Uint8Array, for which fetch sets no type of its own (it calls a string text/plain).
      [{ 'content-type': undefined }, new TextEncoder().encode(message), /^Content-Type is missing/],
      [{ 'content-type': 'application/xml' }, '<call/>', /^Content-Type application\/xml is not accepted/],
      [{ 'content-encoding': 'gzip' }, gzipSync(message), /^Content-Encoding gzip is not accepted: send the message uncompressed\.$/],
      // Read as UTF-8 before: bytes of Latin-1 beyond ASCII were "not valid UTF-8" (-32700), ASCII ones served as if UTF-8.
      [
        { 'content-type': 'application/json; charset=ISO-8859-1' },
        Buffer.from(JSON.stringify(echoCall('café')), 'latin1'),
        /^Content-Type application\/json; charset=ISO-8859-1 is not accepted: send the message as application\/json in UTF-8 \(charset=utf-8, or no charset\)\.$/,
      ],
      [{ 'content-type': 'application/json;charset="utf-16"' }, message, /^Content-Type application\/json;charset="utf-16" is not accepted/],
    ];
    for (const [headers, body, words] of cases) {
      const res = await post(body, { ...session, ...headers });
      expect(res.status, JSON.stringify(headers)).toBe(415);
      expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(words) } });
    }
    const legacy = await legacyStream();
    try {
      const res = await post(message, { 'content-type': 'text/plain' }, legacy.messageUrl);
      expect(res.status).toBe(415);
      expect(res.json().error).toMatchObject({ code: -32600, message: expect.stringMatching(/^Content-Type text\/plain is not accepted/) });
      const latin1 = await post(message, { 'content-type': 'application/json; charset=latin1' }, legacy.messageUrl);
      expect(latin1.status).toBe(415);
      expect(latin1.json().error).toMatchObject({
        code: -32600,
        message: expect.stringMatching(/^Content-Type application\/json; charset=latin1 is not accepted/),
      });
    } finally {
      legacy.close();
    }
    await expectStillServed();
  });

  it('is served when its charset is UTF-8, in any case, quoted or spelled utf8', async () => {
    for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'application/json; charset=utf8']) {
      const res = await post(echoCall('café'), { ...session, 'content-type': type });
      expect(res.status, type).toBe(200);
      expect(res.json().result.content[0].text).toBe('Echo: café');
    }
  });
});

describe('a 2026-07-28 retry of an input_required call', () => {
  it('whose inputResponses or requestState is of the wrong type is invalid params naming the field, logged; the proper retry completes', async () => {
    const call = { name: 'modern__confirm', arguments: { action: 'ship' } };
    const first = await post(...modern('tools/call', 'modern__confirm', call));
    const asked = first.json().result;
    expect(asked).toMatchObject({ resultType: 'input_required' });
    const answers = { confirm: { action: 'accept', content: { ok: true } } };
    const wrong: [Record<string, unknown>, RegExp][] = [
      [{ inputResponses: [answers.confirm], requestState: asked.requestState }, /^params\.inputResponses must be an object of the answers, .* not an array\.$/],
      [{ inputResponses: 'accept', requestState: asked.requestState }, /^params\.inputResponses must be an object .* not a string\.$/],
      [{ inputResponses: answers, requestState: 5 }, /^params\.requestState must be the string the input_required result carried, not a number\.$/],
      [{ inputResponses: answers, requestState: { sealed: false } }, /^params\.requestState must be .* not an object\.$/],
    ];
    for (const [retry, words] of wrong) {
      const res = await post(...modern('tools/call', 'modern__confirm', { ...call, ...retry }));
      expect(res.json().error, JSON.stringify(retry)).toMatchObject({ code: -32602, message: expect.stringMatching(words) });
    }
    const done = await post(...modern('tools/call', 'modern__confirm', { ...call, inputResponses: answers, requestState: asked.requestState }));
    expect(done.json().result.content[0].text).toMatch(/^ship confirmed/);
    await g.t.runtime.services.callLogs.flush();
    const logs = await invoke(g.t, 'rest', g.ws.token, 'query_logs', { includeDetail: false, take: 1000 });
    expect(logs.status).toBe(200);
    const refused = (logs.body.items as { status: string; error_message: string | null }[]).filter((r) =>
      /params\.(inputResponses|requestState) must/.test(r.error_message ?? ''),
    );
    expect(refused).toHaveLength(4);
    for (const row of refused) expect(row.status).toBe('error');
  });
});

describe('a HEAD request', () => {
  it('opens no event stream, on the legacy endpoint or in a session, and a GET still does', async () => {
    const auth = { authorization: `Bearer ${g.token}` };
    for (const [url, headers] of [
      [g.url.replace(/\/mcp$/, '/sse'), auth],
      [g.url, { ...auth, ...session, accept: 'text/event-stream' }],
    ] as const) {
      const res = await fetch(url, { method: 'HEAD', headers, signal: AbortSignal.timeout(10_000) });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type') ?? '').not.toContain('text/event-stream');
    }
    const stream = await legacyStream();
    expect(stream.messageUrl).toContain('/message');
    stream.close();
  });
});

describe('open event streams', () => {
  /** Opens an event stream (a GET in a session, or the legacy /sse) as far as its headers; `close` drops it as a host does. */
  async function openStream(url: string, headers: Record<string, string>) {
    const abort = new AbortController();
    const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
    return { res, close: () => abort.abort() };
  }

  /** Opens a 2026-07-28 `subscriptions/listen` stream as far as its headers; `close` drops it as a host does. */
  async function openListen(token: string) {
    const abort = new AbortController();
    const res = await rawListen(g.url, token, 'listen', abort.signal);
    return { res, close: () => abort.abort() };
  }

  /** Opens one stream once a slot is free: a slot comes back when the gateway sees the stream close, a moment after the host does. */
  async function openOnceFree(url: string, headers: Record<string, string>) {
    return vi.waitFor(
      async () => {
        const stream = await openStream(url, headers);
        if (stream.res.status !== 200) await stream.res.text();
        expect(stream.res.status).toBe(200);
        return stream;
      },
      { timeout: 15_000, interval: 50 },
    );
  }

  it('are at most MAX_OPEN_STREAMS_PER_CONNECTION a connection, GET in a session, the legacy /sse and subscriptions/listen together; a slot comes back when a stream closes', async () => {
    // A connection of its own, so the other tests' streams are not counted against it.
    const gatewayGuid = /\/gateways\/([^/]+)\/mcp$/.exec(g.url)![1]!;
    const issued = await invoke(g.t, 'rest', g.ws.token, 'issue_gateway_token', { gatewayGuid });
    const auth = { authorization: `Bearer ${issued.body.token as string}` };
    const init = await post(
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'greedy-host', version: '1' } },
      },
      auth,
    );
    const own = { ...auth, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    const sse = g.url.replace(/\/mcp$/, '/sse');
    const listening = 10;
    const half = (MAX_OPEN_STREAMS_PER_CONNECTION - listening) / 2;
    const gets = await Promise.all(Array.from({ length: half }, () => openStream(g.url, own)));
    const legacy = await Promise.all(Array.from({ length: half }, () => openStream(sse, auth)));
    const listens = await Promise.all(Array.from({ length: listening }, () => openListen(issued.body.token as string)));
    for (const { res } of [...gets, ...legacy, ...listens]) expect(res.status).toBe(200);
    for (const { res } of listens) expect(res.headers.get('content-type')).toContain('text/event-stream');

    const expectRefused = async () => {
      for (const [kind, open] of [
        ['GET', () => openStream(g.url, own)],
        ['/sse', () => openStream(sse, auth)],
        ['subscriptions/listen', () => openListen(issued.body.token as string)],
      ] as const) {
        const { res } = await open();
        expect(res.status, kind).toBe(429);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(await res.json()).toEqual({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: -32029,
            message: `Too many open event streams: at most ${MAX_OPEN_STREAMS_PER_CONNECTION} per connection. Close one, or retry after 5 s.`,
            data: { code: 'rate_limited', retryAfterSeconds: 5 },
          },
        });
      }
    };
    await expectRefused();
    // Another connection is not held back, and a POST of this one is served.
    const other = await legacyStream();
    other.close();
    const call = await post(echoCall('streams full'), own);
    expect(call.json().result.content[0].text).toBe('Echo: streams full');

    // The host drops a stream: its slot comes back (to a GET in the session), and no more.
    legacy.pop()!.close();
    gets.push(await openOnceFree(g.url, own));
    await expectRefused();

    // A listen stream dropped gives its slot back too.
    listens.pop()!.close();
    legacy.push(await openOnceFree(sse, auth));
    await expectRefused();

    // The session ends: its GET streams end, and their slots come back.
    const ended = await fetch(g.url, { method: 'DELETE', headers: own });
    expect(ended.status).toBe(200);
    for (const { res } of gets) await res.text();
    for (let i = 0; i < gets.length; i++) legacy.push(await openOnceFree(sse, auth));
    expect(legacy.length + listens.length).toBe(MAX_OPEN_STREAMS_PER_CONNECTION);
    const { res } = await openStream(sse, auth);
    expect(res.status).toBe(429);
    await res.text();
    for (const stream of [...legacy, ...listens]) stream.close();
  });
});
