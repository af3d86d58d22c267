import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directRequest } from '../src/gateway/modern-direct.js';
import { startTwoEraGateway, type TwoEraGateway } from './helpers/two-era-gateway.js';

/**
 * A 2026-07-28 host's plain tools/call (and its lists, below) is served on the direct path (src/gateway/modern-direct.ts), without the
 * SDK's per-request server; the same call with its Mcp-Name header in the revision's base64 form (just as valid) goes
 * to the SDK's handler. Both answers must be the same (status, content type, messages once parsed): results of a
 * 2025 and a 2026-07-28 upstream, structured output, errors, an input_required result, a host without the capability
 * an upstream asks for, and progress streamed before the result.
 */
let g: TwoEraGateway;

beforeAll(async () => {
  g = await startTwoEraGateway('Direct path', { asksForInput: true });
}, 120_000);

afterAll(async () => {
  await g?.close();
});

const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw-host', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};

function toolCall(name: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}) {
  return { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args, _meta: { ...envelope, ...meta } } };
}

/** The headers a 2026-07-28 host sends; `encodedName` writes Mcp-Name in the revision's base64 form. */
function headersFor(name: string, encodedName: boolean): Record<string, string> {
  return {
    authorization: `Bearer ${g.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': encodedName ? `=?base64?${Buffer.from(name).toString('base64')}?=` : name,
  };
}

/** The JSON-RPC messages of an answer, JSON or an event stream, with the content type's essence. */
async function answerOf(res: Response): Promise<{ status: number; type: string; messages: Record<string, any>[] }> {
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const text = await res.text();
  const messages =
    type === 'text/event-stream'
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => JSON.parse(line.slice(6)))
      : [JSON.parse(text)];
  return { status: res.status, type, messages };
}

/** The same call on both paths, after checking which path each form takes. */
async function bothPaths(body: ReturnType<typeof toolCall>) {
  const name = body.params.name;
  const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
  expect(directRequest(body, lower(headersFor(name, false)))).not.toBeNull();
  expect(directRequest(body, lower(headersFor(name, true)))).toBeNull();
  const send = (encoded: boolean) => fetch(g.url, { method: 'POST', headers: headersFor(name, encoded), body: JSON.stringify(body) }).then(answerOf);
  return { direct: await send(false), sdk: await send(true) };
}

describe("a 2026-07-28 host's tools/call on the direct path", () => {
  it('is answered as the SDK handler answers it: text, structured output, a tool error, an unknown tool', async () => {
    const calls = [
      toolCall('everything__echo', { message: 'direct' }),
      toolCall('modern__measure', { text: 'direct' }),
      toolCall('everything__get-sum', { a: 'not a number', b: 2 }),
      toolCall('nowhere__nothing', {}),
    ];
    for (const body of calls) {
      const { direct, sdk } = await bothPaths(body);
      expect(direct, body.params.name).toEqual(sdk);
      expect(direct.type).toBe('application/json');
    }
    const measured = (await bothPaths(toolCall('modern__measure', { text: 'direct' }))).direct.messages[0]!.result;
    expect(measured).toMatchObject({ structuredContent: { length: 6 }, resultType: 'complete' });
    // A result names the server the host speaks to, the gateway, even where the upstream named itself (modern-upstream.ts, withoutUpstreamIdentity).
    expect(measured._meta['io.modelcontextprotocol/serverInfo'].name).toBe('Direct path');
    const echoed = (await bothPaths(toolCall('everything__echo', { message: 'named' }))).direct.messages[0]!.result;
    expect(echoed._meta['io.modelcontextprotocol/serverInfo'].name).toBe('Direct path');
  });

  it('passes an input_required result on, its requestState sealed by the gateway either way', async () => {
    const { direct, sdk } = await bothPaths(toolCall('modern__confirm', { action: 'deploy' }));
    const withoutState = (a: typeof direct) => a.messages.map((m) => ({ ...m, result: { ...m.result, requestState: typeof m.result.requestState } }));
    expect(direct.messages[0]!.result.resultType).toBe('input_required');
    expect(withoutState(direct)).toEqual(withoutState(sdk));
    expect(direct.messages[0]!.result.requestState).not.toBe(sdk.messages[0]!.result.requestState);
  });

  it('answers a host that lacks the capability an upstream asks for with HTTP 400, as the SDK handler does', async () => {
    const { direct, sdk } = await bothPaths(toolCall('modern__confirm', { action: 'deploy' }, { 'io.modelcontextprotocol/clientCapabilities': {} }));
    expect(direct.status).toBe(400);
    expect(direct.messages[0]!.error.code).toBe(-32021);
    expect(direct).toEqual(sdk);
  });

  it('streams progress before the result, as the SDK handler does', async () => {
    const body = toolCall('everything__trigger-long-running-operation', { duration: 0.3, steps: 3 }, { progressToken: 'p-1' });
    const { direct, sdk } = await bothPaths(body);
    expect(direct.type).toBe('text/event-stream');
    expect(direct.messages.map((m) => m.method ?? 'answer')).toEqual(['notifications/progress', 'notifications/progress', 'notifications/progress', 'answer']);
    expect(direct).toEqual(sdk);
  });

  it('leaves to the SDK handler whatever it would refuse or lift', () => {
    const body = toolCall('everything__echo', { message: 'x' });
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'everything__echo' };
    expect(directRequest(body, headers)).toMatchObject({ id: 7, params: { name: 'everything__echo', arguments: { message: 'x' } } });
    expect(directRequest(body, headers)!.params._meta).toBeUndefined();
    const refused: [string, unknown, Record<string, string>][] = [
      ['no Mcp-Name', body, { ...headers, 'mcp-name': undefined as never }],
      ['another Mcp-Method', body, { ...headers, 'mcp-method': 'tools/list' }],
      ['no version header', body, { ...headers, 'mcp-protocol-version': undefined as never }],
      ['a retry', { ...body, params: { ...body.params, requestState: 's' } }, headers],
      ['inputResponses', { ...body, params: { ...body.params, inputResponses: {} } }, headers],
      ['a task', { ...body, params: { ...body.params, task: {} } }, headers],
      ['no envelope', { ...body, params: { name: 'everything__echo' } }, headers],
      ['an unknown _meta key', toolCall('everything__echo', {}, { other: 1 }), headers],
      ['arguments not an object', { ...body, params: { ...body.params, arguments: [] } }, headers],
      ['a notification', { ...body, id: undefined }, headers],
      ['a fractional id', { ...body, id: 1.5 }, headers],
      ['another JSON-RPC version', { ...body, jsonrpc: '1.0' }, headers],
      ['a member JSON-RPC does not have', { ...body, extra: true }, headers],
      ['an envelope the SDK refuses', toolCall('everything__echo', {}, { 'io.modelcontextprotocol/clientCapabilities': 'all' }), headers],
      ['a progress token of another type', toolCall('everything__echo', {}, { progressToken: { a: 1 } }), headers],
      ['another revision', toolCall('everything__echo', {}, { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }), headers],
      [
        'a tasks host',
        toolCall('everything__echo', {}, { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }),
        headers,
      ],
    ];
    for (const [why, b, h] of refused) expect(directRequest(b, h), why).toBeNull();
  });
});

describe("a 2026-07-28 host's lists, prompts and reads on the direct path", () => {
  const LISTS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'];
  const listHeaders = (method: string, name?: string): Record<string, string> => ({
    authorization: `Bearer ${g.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name !== undefined ? { 'mcp-name': name } : {}),
  });
  const list = (method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) => ({
    jsonrpc: '2.0',
    id: 9,
    method,
    params: { ...params, _meta: { ...envelope, ...meta } },
  });

  /**
   * The same request both ways: plain (direct), and with a _meta key of no meaning to either, which only the SDK's
   * handler takes; `name` is what its Mcp-Name header says.
   */
  async function bothPaths(method: string, params: Record<string, unknown> = {}, name?: string) {
    const direct = list(method, params);
    const viaSdk = list(method, params, { 'x.test/path': 'sdk' });
    const lower = Object.fromEntries(Object.entries(listHeaders(method, name)).map(([k, v]) => [k.toLowerCase(), v]));
    expect(directRequest(direct, lower)).toMatchObject({ id: 9, method, params });
    expect(directRequest(viaSdk, lower)).toBeNull();
    const send = (body: unknown) => fetch(g.url, { method: 'POST', headers: listHeaders(method, name), body: JSON.stringify(body) }).then(answerOf);
    return { direct: await send(direct), sdk: await send(viaSdk) };
  }

  it('answers the tools, prompts, resources and templates lists as the SDK handler does', async () => {
    for (const method of LISTS) {
      const { direct, sdk } = await bothPaths(method);
      expect(direct, method).toEqual(sdk);
      expect(direct.status).toBe(200);
      expect(direct.messages[0]!.result).toMatchObject({ resultType: 'complete', cacheScope: 'private' });
    }
  });

  it('answers a prompt and a resource read as the SDK handler does, an unknown one too', async () => {
    const prompts = (await bothPaths('prompts/list')).direct.messages[0]!.result.prompts as { name: string; arguments?: { required?: boolean }[] }[];
    const prompt = prompts.find((p) => !(p.arguments ?? []).some((a) => a.required))!;
    const resources = (await bothPaths('resources/list')).direct.messages[0]!.result.resources as { uri: string }[];
    const asked: [string, Record<string, unknown>, string][] = [
      ['prompts/get', { name: prompt.name }, prompt.name],
      ['prompts/get', { name: 'everything__no-such-prompt', arguments: { a: 'b' } }, 'everything__no-such-prompt'],
      ['resources/read', { uri: resources[0]!.uri }, resources[0]!.uri],
      ['resources/read', { uri: 'demo://no/such/resource' }, 'demo://no/such/resource'],
      ['resources/read', { uri: 'not a uri' }, 'not a uri'],
    ];
    for (const [method, params, name] of asked) {
      const { direct, sdk } = await bothPaths(method, params, name);
      expect(direct, `${method} ${name}`).toEqual(sdk);
    }
    const read = await bothPaths('resources/read', { uri: resources[0]!.uri }, resources[0]!.uri);
    expect(read.direct.messages[0]!.result).toMatchObject({ resultType: 'complete', cacheScope: 'private', contents: [{ uri: resources[0]!.uri }] });
  });

  it('leaves to the SDK handler a list it would refuse or lift', () => {
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    const refused: [string, unknown, Record<string, string>][] = [
      ['an Mcp-Name header', list('tools/list'), { ...headers, 'mcp-name': 'x' }],
      ['another Mcp-Method', list('tools/list'), { ...headers, 'mcp-method': 'prompts/list' }],
      ['a cursor not a string', list('tools/list', { cursor: 1 }), headers],
      // The gateway issues no cursor: one is refused before either path (gateway-cursors.test.ts).
      ['a cursor', list('tools/list', { cursor: 'any' }), headers],
      ['a param lists do not have', list('tools/list', { name: 'x' }), headers],
      ['a method not served directly', list('completion/complete'), { ...headers, 'mcp-method': 'completion/complete' }],
      ['a prompt without its Mcp-Name', list('prompts/get', { name: 'p' }), { ...headers, 'mcp-method': 'prompts/get' }],
      ['a read whose Mcp-Name is another', list('resources/read', { uri: 'a://b' }), { ...headers, 'mcp-method': 'resources/read', 'mcp-name': 'a://c' }],
      ['no envelope', { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }, headers],
    ];
    for (const [why, b, h] of refused) expect(directRequest(b, h), why).toBeNull();
    // A tasks host's list is a list like any other.
    const tasksHost = list('tools/list', {}, { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    expect(directRequest(tasksHost, headers)).not.toBeNull();
  });
});
