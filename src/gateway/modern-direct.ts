import type { IncomingHttpHeaders } from 'node:http';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';
import { isPlainObject, malformedRequestParams } from '../mcp/request-params.js';
import { ERRORS } from './call-model.js';
import { TASKS_EXTENSION } from './host-tasks.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { BoundedMemo } from '../core/bounded-memo.js';

/** The envelope's keys, which the SDK lifts out of `params._meta` before a handler sees the params. */
const ENVELOPE_KEYS: ReadonlySet<string> = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY]);
/** The keys a tools/call result may carry instead of content (the SDK adds no empty content to these). */
const CONTENTLESS_RESULT_KEYS = ['task', 'inputRequests', 'requestState'];

/** The members of a JSON-RPC request (the SDK's schema is strict: anything else is not a request). */
const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);
/** The SDK's verdicts on the envelopes seen, by their JSON (isModernEnvelope). */
const envelopeVerdicts = new BoundedMemo<boolean>();

/**
 * The requests served directly, each with the params it may carry besides `_meta` and
 * the one the Mcp-Name header repeats (a list has none, nor a cursor: the gateway issues none,
 * request-params.ts). Completions stay the SDK's: their
 * params' shapes are its schema's to judge.
 */
const DIRECT_SHAPES: Readonly<Record<string, { keys: readonly string[]; named?: 'name' | 'uri' }>> = {
  'tools/call': { keys: ['name', 'arguments'], named: 'name' },
  'prompts/get': { keys: ['name', 'arguments'], named: 'name' },
  'resources/read': { keys: ['uri'], named: 'uri' },
  'tools/list': { keys: [] },
  'prompts/list': { keys: [] },
  'resources/list': { keys: [] },
  'resources/templates/list': { keys: [] },
};

/**
 * The results revision 2026-07-28 lets hosts cache (`ttlMs`, `cacheScope`). A
 * gateway's are per caller (the caller's identities, the gateway's curation), so they
 * are never `public`, whatever an upstream said of its own result.
 */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read']);

/** A 2026-07-28 request admitted to the direct path: its id and method, its params as a handler sees them, and its envelope. */
export interface DirectRequest {
  id: string | number;
  method: string;
  params: Record<string, unknown>;
  envelope: Record<string, unknown>;
}

/**
 * A 2026-07-28 host's plain tools/call, prompts/get, resources/read or list that the
 * gateway serves without the SDK's per-request server instance (docs/gateway.md, "The
 * direct path"): one the SDK's handler would take as it is, with nothing for it to
 * refuse or lift. The
 * revision's rules are still the SDK's: the envelope is classified by its own
 * `classifyInboundRequest` (its shape, the version header against it), the rest of the
 * body is checked as its JSON-RPC schema checks it, and the Mcp-Protocol-Version and
 * Mcp-Method headers (and Mcp-Name where the method has one) must be present and equal
 * to the body's values as they are. Anything else (a header encoded or missing, a
 * retry's requestState or inputResponses, a task, a key the params do not usually
 * carry) is null and goes to the SDK's handler, which answers it, its refusals
 * included, in its own words.
 */
export function directRequest(body: unknown, headers: IncomingHttpHeaders): DirectRequest | null {
  if (!isPlainObject(body) || body.jsonrpc !== '2.0') return null;
  const method = body.method;
  if (typeof method !== 'string' || !Object.hasOwn(DIRECT_SHAPES, method)) return null;
  const shape = DIRECT_SHAPES[method]!;
  const id = body.id;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return null;
  for (const key of Object.keys(body)) if (!REQUEST_KEYS.has(key)) return null;
  // Params the SDK's schema would refuse (no name, arguments not an object) are its to answer.
  if (malformedRequestParams(body, MODERN_REVISION)) return null;
  const params = body.params;
  if (!isPlainObject(params) || headers['mcp-protocol-version'] !== MODERN_REVISION || headers['mcp-method'] !== method) return null;
  if (headers['mcp-name'] !== (shape.named ? params[shape.named] : undefined)) return null;
  const handlerParams: Record<string, unknown> = {};
  for (const key of Object.keys(params)) {
    if (key === '_meta') continue;
    if (!shape.keys.includes(key)) return null;
    handlerParams[key] = params[key];
  }
  const meta = params._meta;
  if (!isPlainObject(meta)) return null;
  const envelope: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const key in meta) {
    const value = meta[key];
    if (ENVELOPE_KEYS.has(key)) envelope[key] = value;
    // The SDK's schema takes a progress token of a string or an integer.
    else if (key === 'progressToken' && (typeof value === 'string' || Number.isInteger(value))) rest[key] = value;
    else return null;
  }
  const extensions = (envelope[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  // A tasks host's call may become a task, whose answer the SDK's handler shapes.
  if (method === 'tools/call' && isPlainObject(extensions) && TASKS_EXTENSION in extensions) return null;
  if (!isModernEnvelope(method, shape.named, envelope)) return null;
  if (Object.keys(rest).length > 0) handlerParams._meta = rest;
  return { id, method, params: handlerParams, envelope };
}

/**
 * Whether the SDK classifies a request of `method` with this envelope as one of
 * revision 2026-07-28 (its envelope checks, and the version header against it). The
 * verdict depends on nothing else that directRequest lets through (the other parts of
 * the body are checked there as the SDK's JSON-RPC schema checks them), and a host sends
 * the same envelope with every request, so it is kept: classifying costs about 12 µs.
 */
function isModernEnvelope(method: string, named: string | undefined, envelope: Record<string, unknown>): boolean {
  return envelopeVerdicts.get(`${method} ${JSON.stringify(envelope)}`, () => {
    const outcome = classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: MODERN_REVISION,
      mcpMethodHeader: method,
      body: { jsonrpc: '2.0', id: 0, method, params: { ...(named ? { [named]: 'x' } : {}), _meta: envelope } },
    });
    return outcome.kind === 'modern' && outcome.messageKind === 'request' && outcome.classification.revision === MODERN_REVISION;
  });
}

/**
 * A direct request's result as the SDK's handler encodes it for revision 2026-07-28: a
 * tools/call result's empty content list where it has none, a tool list without
 * `execution` (a field the revision deleted), a cacheable result's `ttlMs` (0 unless the
 * result names a valid one), `resultType` (`complete` unless the result names its own), and the
 * server's identity in `_meta`. (The SDK also
 * validates the result against its schema, and an input_required result's requests
 * against the host's capabilities; the direct path relays an upstream's result as it
 * came, as a 2025 host's path does: the upstream had those capabilities in the envelope.)
 */
export function encodeDirectResult(method: string, result: Record<string, unknown>, serverInfo: { name: string; version: string }): Record<string, unknown> {
  let encoded = result;
  if (method === 'tools/call') {
    if (result.resultType !== 'input_required' && result.content === undefined && !CONTENTLESS_RESULT_KEYS.some((key) => key in result))
      encoded = { ...encoded, content: [] };
  } else {
    if (method === 'tools/list' && Array.isArray(result.tools) && result.tools.some((tool) => isPlainObject(tool) && 'execution' in tool))
      encoded = { ...encoded, tools: result.tools.map(withoutExecution) };
    if (CACHEABLE_METHODS.has(method) && !(Number.isSafeInteger(result.ttlMs) && (result.ttlMs as number) >= 0)) encoded = { ...encoded, ttlMs: 0 };
  }
  if (encoded.resultType === undefined) encoded = { ...encoded, resultType: 'complete' };
  const meta = encoded._meta;
  if (meta === undefined) return { ...encoded, _meta: { [SERVER_INFO_META_KEY]: serverInfo } };
  if (!isPlainObject(meta) || meta[SERVER_INFO_META_KEY] !== undefined) return encoded;
  return { ...encoded, _meta: { ...meta, [SERVER_INFO_META_KEY]: serverInfo } };
}

/** A tool as revision 2026-07-28 lists it: `execution` is not part of it (tasks became an extension). */
function withoutExecution(tool: unknown): unknown {
  if (!isPlainObject(tool) || !('execution' in tool)) return tool;
  const { execution: _, ...rest } = tool;
  return rest;
}

/** A handler's failure as the SDK's handler answers it in revision 2026-07-28 (its code, message and data). */
export function encodeDirectError(id: string | number, error: unknown): Record<string, unknown> {
  const failure = error as { code?: unknown; message?: unknown; data?: unknown };
  const code = Number.isSafeInteger(failure.code) ? (failure.code as number) : ProtocolErrorCode.InternalError;
  return {
    jsonrpc: '2.0',
    id,
    error: {
      // The revision folds -32002 (resource not found) into invalid params, as the SDK's codec does.
      code: code === ProtocolErrorCode.ResourceNotFound ? ProtocolErrorCode.InvalidParams : code,
      message: typeof failure.message === 'string' ? failure.message : 'Internal error',
      ...(failure.data !== undefined ? { data: failure.data } : {}),
    },
  };
}

/**
 * The HTTP status of a JSON answer: 200, the answer being the payload, but for a missing client capability (-32021),
 * which the revision answers with 400 wherever it arises, as the SDK's handler does.
 */
export function directAnswerStatus(answer: Record<string, unknown>): number {
  return (answer.error as { code?: unknown } | undefined)?.code === ERRORS.missingClientCapability ? 400 : 200;
}

/** The event stream a direct answer becomes when the upstream sends the host something first: the SDK handler's headers. */
export const DIRECT_SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;
/** How often such a stream carries a comment while it waits (the SDK's default). */
export const DIRECT_SSE_KEEP_ALIVE_MS = 15_000;
