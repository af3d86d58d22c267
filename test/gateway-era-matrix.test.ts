import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as Client2026, LOG_LEVEL_META_KEY, StreamableHTTPClientTransport as Transport2026, type LoggingLevel } from '@modelcontextprotocol/client';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { gatewayClient } from './helpers/gateway.js';
import { invoke } from './helpers/harness.js';
import { startTwoEraGateway, type TwoEraGateway } from './helpers/two-era-gateway.js';

/**
 * The era matrix (contract 8.1, issue 12): a 2025 host (the 1.x SDK client, a session)
 * and a 2026-07-28 host (the v2 client pinned to 2026-07-28, no fallback), each using a
 * 2025 upstream (server-everything, behind a tap that records what it is sent) and a
 * 2026-07-28-only upstream (the v2-SDK fixture, `legacy: 'reject'`) through one gateway.
 * Every cell runs the same cases; what differs per upstream is in UPSTREAMS, what
 * differs per host revision is in the Host adapter. Change notifications and the input
 * bridges in depth: gateway-listen, gateway-list-changes, gateway-bridging.
 */
type Revision = '2025' | '2026-07-28';

const ROOTS = [{ uri: 'file:///work/matrix', name: 'matrix' }];
/** What a host answers an upstream's questions with (both revisions alike). */
const ANSWERS = {
  elicit: { action: 'decline' as const },
  sample: (model: string) => ({ model, role: 'assistant' as const, content: { type: 'text' as const, text: 'sampled' } }),
};
/** How long a case may wait for something to happen on the other side. */
const WAIT_MS = 8_000;

interface CallOptions {
  signal?: AbortSignal;
  onprogress?: (progress: { progress: number; total?: number }) => void;
}

/** One host of either revision, as the cases use it. */
interface Host {
  revision: Revision;
  listTools(): Promise<string[]>;
  callTool(name: string, args: Record<string, unknown>, opts?: CallOptions): Promise<CallToolResult>;
  getPrompt(name: string): Promise<string>;
  readResource(uri: string): Promise<string>;
  complete(prompt: string, argument: string, value: string): Promise<string[]>;
  /** Sets the level as the host's revision does: logging/setLevel (2025), the envelope of each later request (2026-07-28). */
  setLogLevel(level: LoggingLevel | undefined): Promise<void>;
  /** The log messages (notifications/message) the host received, in order. */
  logs: { level: string; data: unknown }[];
  /** A 2025 host's subscription (a request of its session); undefined for a 2026-07-28 host, which has none. */
  subscribe?: (uri: string) => Promise<void>;
  close(): Promise<void>;
}

const textOf = (result: CallToolResult): string => result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

async function host2025(g: TwoEraGateway): Promise<Host> {
  const client = await gatewayClient(g.url, g.token, { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
  const logs: Host['logs'] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
  client.setRequestHandler(ElicitRequestSchema, async () => ANSWERS.elicit);
  client.setRequestHandler(CreateMessageRequestSchema, async () => ANSWERS.sample('model-2025'));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: ROOTS }));
  return {
    revision: '2025',
    logs,
    listTools: async () => (await client.listTools()).tools.map((t) => t.name),
    callTool: async (name, args, opts = {}) =>
      (await client.callTool({ name, arguments: args }, CallToolResultSchema, { ...opts, timeout: WAIT_MS * 2 })) as CallToolResult,
    getPrompt: async (name) => JSON.stringify((await client.getPrompt({ name })).messages),
    readResource: async (uri) => JSON.stringify((await client.readResource({ uri })).contents),
    complete: async (name, argument, value) =>
      (await client.complete({ ref: { type: 'ref/prompt', name }, argument: { name: argument, value } })).completion.values,
    setLogLevel: async (level) => void (await client.setLoggingLevel(level ?? 'debug')),
    subscribe: async (uri) => void (await client.subscribeResource({ uri })),
    close: () => client.close(),
  };
}

async function host2026(g: TwoEraGateway, name = 'matrix-host-2026'): Promise<Host> {
  const client = new Client2026(
    { name, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: {}, sampling: {}, roots: {} } },
  );
  const logs: Host['logs'] = [];
  client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params));
  client.setRequestHandler('elicitation/create', async () => ANSWERS.elicit);
  client.setRequestHandler('sampling/createMessage', async () => ANSWERS.sample('model-2026'));
  client.setRequestHandler('roots/list', async () => ({ roots: ROOTS }));
  await client.connect(new Transport2026(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${g.token}` } } }));
  let level: LoggingLevel | undefined;
  return {
    revision: '2026-07-28',
    logs,
    listTools: async () => (await client.listTools()).tools.map((t) => t.name),
    callTool: async (name, args, opts = {}) =>
      (await client.callTool(
        { name, arguments: args, ...(level ? { _meta: { [LOG_LEVEL_META_KEY]: level } } : {}) },
        { ...opts, timeout: WAIT_MS * 2 },
      )) as CallToolResult,
    getPrompt: async (name) => JSON.stringify((await client.getPrompt({ name })).messages),
    readResource: async (uri) => JSON.stringify((await client.readResource({ uri })).contents),
    complete: async (name, argument, value) =>
      (await client.complete({ ref: { type: 'ref/prompt', name }, argument: { name: argument, value } })).completion.values,
    setLogLevel: async (next) => void (level = next),
    close: () => client.close(),
  };
}

/** Waits until `check` holds, at most WAIT_MS; fails with `what` otherwise. */
async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${WAIT_MS} ms: ${what}`);
    await sleep(50);
  }
}

/** The call-log row of the call whose arguments carry `tag`, once written (at most WAIT_MS). */
async function cancelledRow(g: TwoEraGateway, tag: string): Promise<Record<string, any>> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    await g.t.runtime.services.callLogs.flush();
    const page = await invoke(g.t, 'rest', g.ws.token, 'query_logs', { filters: { type: 'tool_call' }, includeDetail: true, take: 1000 });
    const row = (page.body.items as Record<string, any>[]).find((r) => String(r.request_body).includes(tag));
    if (row) return row;
    if (Date.now() > deadline) throw new Error(`not within ${WAIT_MS} ms: the row of the cancelled call ${tag}`);
    await sleep(100);
  }
}

/** What the cases need of one upstream revision: names, expected answers, and how to see its side of a cancellation. */
interface UpstreamSpec {
  tool: { name: string; args: Record<string, unknown>; text: string };
  prompt: { name: string; text: string };
  resource: { uri: string; text: string };
  completion: { prompt: string; argument: string; value: string; values: string[] };
  progress: { name: string; args: Record<string, unknown>; steps: number };
  /** A call that runs until cancelled (`tag` tells the calls apart), and what the upstream saw of it. */
  slow: {
    name: string;
    args: (tag: string) => Record<string, unknown>;
    running: (g: TwoEraGateway, tag: string) => boolean;
    cancelled: (g: TwoEraGateway, tag: string) => boolean;
  };
  logging: (g: TwoEraGateway, host: Host) => Promise<void>;
  /** One of elicitation, sampling and roots, per host revision (gateway-bridging covers them all in depth). */
  input: Record<Revision, { what: string; name: string; args: Record<string, unknown>; text: string }>;
}

/** server-everything's tools/call of a `slow` call, as the tap saw it (its arguments carry the tag). */
const tappedCall = (g: TwoEraGateway, tag: string) =>
  g.tap!.messages.find((m) => m.method === 'tools/call' && (m.params?.arguments as { tag?: string } | undefined)?.tag === tag);

const UPSTREAMS: Record<Revision, UpstreamSpec> = {
  '2025': {
    tool: { name: 'everything__echo', args: { message: 'matrix' }, text: 'Echo: matrix' },
    prompt: { name: 'everything__simple-prompt', text: 'This is a simple prompt without arguments.' },
    resource: { uri: 'demo://resource/dynamic/text/1', text: 'Resource 1:' },
    completion: { prompt: 'everything__completable-prompt', argument: 'department', value: 'S', values: ['Sales', 'Support'] },
    progress: { name: 'everything__trigger-long-running-operation', args: { duration: 0.3, steps: 3 }, steps: 3 },
    slow: {
      name: 'everything__trigger-long-running-operation',
      // Its schema drops the tag (the tap still sees it) and tapHoldMs: the tap holds the call that long, so the host's
      // request closes before the upstream's answer has begun (a cancellation must not wait for the answer to start).
      args: (tag) => ({ duration: 6, steps: 12, tag, tapHoldMs: 500 }),
      running: (g, tag) => tappedCall(g, tag) !== undefined,
      // A 2025 upstream hears of a cancellation only through notifications/cancelled in the call's session: its
      // transport says a closed request is not one (server-everything's tool would run on).
      cancelled: (g, tag) => {
        const call = tappedCall(g, tag)!;
        return g.tap!.messages.some((m) => m.method === 'notifications/cancelled' && m.params?.requestId === call.id && m.sessionId === call.sessionId);
      },
    },
    logging: async (g, host) => {
      if (!host.subscribe) {
        // server-everything sends log messages only on its session's GET stream, never within a request, and revision
        // 2026-07-28 has no such stream: what a 2026-07-28 host's level does is set it on the upstream session the
        // gateway opens for it (logging/setLevel), as docs/gateway.md says.
        await host.setLogLevel('warning');
        await host.callTool('everything__echo', { message: 'at warning' });
        await host.setLogLevel(undefined);
        const call = g.tap!.messages.find((m) => m.method === 'tools/call' && (m.params?.arguments as { message?: string }).message === 'at warning')!;
        const levels = g.tap!.messages.filter((m) => m.method === 'logging/setLevel' && m.sessionId === call.sessionId).map((m) => m.params?.level);
        expect(levels).toEqual(['warning']);
        return;
      }
      // A 2025 host hears it on its session's event stream (GET), which the gateway merges from the upstream's. Each
      // subscription makes server-everything log at `info`: heard at `info`, not at `warning`, heard again at `info`.
      let n = 0;
      const subscribed = async () => {
        const uri = `demo://resource/dynamic/text/${100 + ++n}`;
        await host.subscribe!(uri);
        return (): boolean => host.logs.some((l) => l.level === 'info' && String(l.data).includes(uri));
      };
      await host.setLogLevel('info');
      // The host's event stream opens after its initialize: subscribe until it carries the first message.
      let heard = await subscribed();
      for (let tries = 0; !heard() && tries < 20; tries++) {
        await sleep(250);
        if (!heard()) heard = await subscribed();
      }
      expect(heard()).toBe(true);
      await host.setLogLevel('warning');
      const quiet = await subscribed();
      await host.setLogLevel('info');
      const again = await subscribed();
      await until('an info message after the level went back to info', again);
      // The stream keeps order: sent at all, the message at `warning` would have come before this one.
      expect(quiet()).toBe(false);
    },
    input: {
      '2025': { what: 'sampling', name: 'everything__trigger-sampling-request', args: { prompt: 'matrix', maxTokens: 10 }, text: 'model-2025' },
      '2026-07-28': { what: 'elicitation', name: 'everything__trigger-elicitation-request', args: {}, text: 'declined' },
    },
  },
  '2026-07-28': {
    tool: { name: 'modern__shout', args: { text: 'matrix' }, text: 'MATRIX' },
    prompt: { name: 'modern__haiku', text: 'Write a haiku.' },
    resource: { uri: 'modern://motd', text: 'hello from 2026' },
    completion: { prompt: 'modern__greet', argument: 'name', value: 'A', values: ['Ada', 'Alan'] },
    progress: { name: 'modern__count', args: { steps: 3 }, steps: 3 },
    slow: {
      name: 'modern__wait',
      args: (tag) => ({ tag }),
      running: (g, tag) => g.modern.waits.get(tag) === 'waiting',
      // The tool's own abort signal fired: its HTTP request was closed.
      cancelled: (g, tag) => g.modern.waits.get(tag) === 'cancelled',
    },
    logging: async (_g, host) => {
      // The tool logs at info and at error; at warning only the error may reach the host.
      await host.setLogLevel('warning');
      const before = host.logs.length;
      expect(textOf(await host.callTool('modern__log', {}))).toBe('logged');
      await host.setLogLevel(undefined);
      expect(host.logs.slice(before)).toEqual([expect.objectContaining({ level: 'error', data: 'loud failure' })]);
    },
    input: {
      '2025': { what: 'roots', name: 'modern__roots', args: {}, text: `roots: ${ROOTS[0]!.uri}` },
      '2026-07-28': { what: 'sampling', name: 'modern__sample', args: { prompt: 'matrix' }, text: 'model model-2026 said sampled' },
    },
  },
};

/** The cases every cell runs. */
const CASES: { name: string; run: (g: TwoEraGateway, host: Host, up: UpstreamSpec) => Promise<void> }[] = [
  {
    name: 'tools/list and tools/call',
    run: async (_g, host, up) => {
      expect(await host.listTools()).toContain(up.tool.name);
      const result = await host.callTool(up.tool.name, up.tool.args);
      expect(textOf(result)).toBe(up.tool.text);
      // A 2025 host gets the result in its revision: none of what 2026-07-28 adds (its kind, cache hints, the server's identity).
      if (host.revision === '2025') {
        for (const field of ['resultType', 'ttlMs', 'cacheScope']) expect(result).not.toHaveProperty(field);
        expect(result._meta?.['io.modelcontextprotocol/serverInfo']).toBeUndefined();
      }
    },
  },
  {
    name: 'prompts/get',
    run: async (_g, host, up) => expect(await host.getPrompt(up.prompt.name)).toContain(up.prompt.text),
  },
  {
    name: 'resources/read',
    run: async (_g, host, up) => expect(await host.readResource(up.resource.uri)).toContain(up.resource.text),
  },
  {
    name: 'completion/complete',
    run: async (_g, host, { completion: c }) => expect(await host.complete(c.prompt, c.argument, c.value)).toEqual(c.values),
  },
  {
    name: 'progress reaches the host with its own token',
    run: async (_g, host, up) => {
      // The SDK calls onprogress only for a notification carrying the token it put in the request.
      const seen: number[] = [];
      const result = await host.callTool(up.progress.name, up.progress.args, { onprogress: (p) => void seen.push(p.progress) });
      expect(result.isError).toBeFalsy();
      expect(seen).toEqual(Array.from({ length: up.progress.steps }, (_, i) => i + 1));
    },
  },
  {
    name: 'cancellation reaches the upstream',
    run: async (g, host, up) => {
      const tag = `cancel-${host.revision}-${Date.now()}`;
      const abort = new AbortController();
      const call = host.callTool(up.slow.name, up.slow.args(tag), { signal: abort.signal });
      call.catch(() => undefined);
      await until('the upstream runs the call', () => up.slow.running(g, tag));
      abort.abort('the host changed its mind');
      await expect(call).rejects.toThrow();
      await until('the upstream sees the cancellation', () => up.slow.cancelled(g, tag));
      // The call's row is written at the cancellation, saying so: not an upstream failure after the upstream timeout.
      const row = await cancelledRow(g, tag);
      expect(row).toMatchObject({ status: 'error', error_message: expect.stringMatching(/^The call to server \S+ was cancelled: /) });
      expect(row.duration_ms).toBeLessThan(WAIT_MS);
      // Its error.type says so (no JSON-RPC code: most hosts are sent no answer then).
      const stored = await g.t.runtime.services.clickhouse.client.query({
        query: 'SELECT error_type FROM call_logs WHERE guid = {guid:UUID}',
        query_params: { guid: row.guid },
        format: 'JSONEachRow',
      });
      expect(await stored.json()).toEqual([{ error_type: 'cancelled' }]);
    },
  },
  {
    name: 'logging at the level the host set',
    run: async (g, host, up) => up.logging(g, host),
  },
  {
    name: 'one input request bridged (elicitation, sampling or roots)',
    run: async (_g, host, up) => {
      const input = up.input[host.revision];
      expect(textOf(await host.callTool(input.name, input.args)), input.what).toContain(input.text);
    },
  },
];

const HOSTS: Record<Revision, (g: TwoEraGateway) => Promise<Host>> = { '2025': host2025, '2026-07-28': host2026 };
const CELLS = (['2025', '2026-07-28'] as const).flatMap((host) => (['2025', '2026-07-28'] as const).map((upstream) => ({ host, upstream })));

let g: TwoEraGateway;
beforeAll(async () => {
  g = await startTwoEraGateway('Era matrix', { asksForInput: true, protocolFeatures: true }, { tapEverything: true });
}, 120_000);
afterAll(async () => g?.close());

describe.each(CELLS)('a $host host using a $upstream upstream', (cell) => {
  let host: Host;
  beforeAll(async () => {
    host = await HOSTS[cell.host](g);
  }, 30_000);
  afterAll(async () => host?.close());
  it.each(CASES)('$name', ({ run }) => run(g, host, UPSTREAMS[cell.upstream]), 30_000);
});

describe('a 2026-07-28 host using a 2025 upstream that asks outside the call’s stream', () => {
  // server-everything's get-roots-list sends roots/list with no related request: on its session's own (GET) stream.
  it('is asked all the same when the call is the session’s only one in flight', async () => {
    const host = await host2026(g);
    try {
      const result = await host.callTool('everything__get-roots-list', {});
      expect(textOf(result)).toContain(ROOTS[0]!.uri);
    } finally {
      await host.close();
    }
  }, 30_000);
});

describe("the gateway's instructions", () => {
  it('are the same for a 2025 host (initialize) and a 2026-07-28 host (server/discover), and say how the naming mode names', async () => {
    const [gateway] = (await invoke(g.t, 'rest', g.ws.token, 'list_gateways')).body.items;
    const instructionsOf = async () => {
      const old = await gatewayClient(g.url, g.token);
      const modern = new Client2026({ name: 'instructions', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await modern.connect(new Transport2026(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${g.token}` } } }));
      try {
        return [old.getInstructions(), modern.getInstructions()];
      } finally {
        await Promise.all([old.close(), modern.close()]);
      }
    };
    const [prefixed2025, prefixed2026] = await instructionsOf();
    expect(prefixed2025).toMatch(/^Tools, prompts and resources of several servers, each named <server>__<name>\.\n\n## everything\n\S/);
    expect(prefixed2026).toBe(prefixed2025);
    await invoke(g.t, 'rest', g.ws.token, 'set_gateway_tool_naming', { gatewayGuid: gateway.guid, mode: 'when-needed' });
    try {
      const [plain2025, plain2026] = await instructionsOf();
      expect(plain2025).toMatch(/^Tools, prompts and resources of several servers, named as each server names them, or <server>__<name> where two/);
      expect(plain2026).toBe(plain2025);
    } finally {
      await invoke(g.t, 'rest', g.ws.token, 'set_gateway_tool_naming', { gatewayGuid: gateway.guid, mode: 'prefixed' });
    }
  }, 60_000);
});

describe('a resource no server of the gateway lists', () => {
  // SEP-2164: a server names the URI it could not find in the error's data; the gateway, which answers for several, too.
  it('is answered -32602 with the URI in the data, for both revisions', async () => {
    for (const make of [host2025, host2026]) {
      const host = await make(g);
      try {
        const err = (await host.readResource('nowhere://no/such/resource').catch((e: unknown) => e)) as { code?: number; data?: unknown };
        expect(err).toMatchObject({ code: -32602, data: { uri: 'nowhere://no/such/resource' } });
      } finally {
        await host.close();
      }
    }
  }, 60_000);
});

describe('under when-needed naming', () => {
  // server-everything lists get-roots-list only to a host that declares roots: the name the host is shown routes.
  it('calls by its plain name a tool the upstream offers only to hosts that declare roots, for both revisions', async () => {
    const [gateway] = (await invoke(g.t, 'rest', g.ws.token, 'list_gateways')).body.items;
    expect((await invoke(g.t, 'rest', g.ws.token, 'set_gateway_tool_naming', { gatewayGuid: gateway.guid, mode: 'when-needed' })).status).toBe(200);
    try {
      for (const make of [host2025, host2026]) {
        const host = await make(g);
        try {
          expect(await host.listTools()).toContain('get-roots-list');
          expect(textOf(await host.callTool('get-roots-list', {}))).toContain(ROOTS[0]!.uri);
        } finally {
          await host.close();
        }
      }
    } finally {
      await invoke(g.t, 'rest', g.ws.token, 'set_gateway_tool_naming', { gatewayGuid: gateway.guid, mode: 'prefixed' });
    }
  }, 60_000);
});

describe('a trace context in _meta (SEP-414)', () => {
  it('is continued when no traceparent header comes, and the upstream hears the gateway as the parent, in _meta as in its header', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const hostSpan = '00f067aa0ba902b7';
    const host = await gatewayClient(g.url, g.token);
    try {
      await host.callTool({ name: 'everything__echo', arguments: { message: 'traced' }, _meta: { traceparent: `00-${traceId}-${hostSpan}-01` } });
    } finally {
      await host.close();
    }
    const sent = g.tap!.messages.filter((m) => m.method === 'tools/call' && (m.params?.arguments as { message?: string })?.message === 'traced');
    expect(sent).toHaveLength(1);
    const upstreamParent = String((sent[0]!.params!._meta as { traceparent: string }).traceparent);
    const [, sentTrace, gatewaySpan] = upstreamParent.split('-');
    expect(sentTrace).toBe(traceId);
    expect(gatewaySpan).not.toBe(hostSpan);
    await g.t.runtime.services.callLogs.flush();
    const stored = await g.t.runtime.services.clickhouse.client.query({
      query: "SELECT span_id, parent_span_id FROM call_logs WHERE trace_id = {traceId:String} AND type = 'tool_call'",
      query_params: { traceId },
      format: 'JSONEachRow',
    });
    expect(await stored.json()).toEqual([{ span_id: gatewaySpan, parent_span_id: hostSpan }]);
  }, 30_000);
});

describe('a request the host cancels', () => {
  it('is not answered: its event stream ends without the answer (the revisions: a receiver SHOULD NOT answer it)', async () => {
    const headers = { authorization: `Bearer ${g.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const post = (body: unknown, extra: Record<string, string> = {}) =>
      fetch(g.url, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
    const init = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'cancelling-host', version: '1' } },
    });
    await init.text();
    const session = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text();
    const call = await post(
      {
        jsonrpc: '2.0',
        id: 42,
        method: 'tools/call',
        params: { name: 'everything__trigger-long-running-operation', arguments: { duration: 5, steps: 5 }, _meta: { progressToken: 'p' } },
      },
      session,
    );
    expect(call.headers.get('content-type')).toMatch(/text\/event-stream/);
    const read = call.text();
    await sleep(300);
    await (await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 42, reason: 'changed my mind' } }, session)).text();
    const events = (await read)
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as { id?: unknown; method?: string });
    expect(events.filter((e) => e.id === 42)).toEqual([]);
  }, 30_000);
});
