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

/** The envelope's keys, which the SDK lifts out of `params._meta` before a handler sees the params. */
const ENVELOPE_KEYS: ReadonlySet<string> = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY]);
/** The keys a tools/call result may carry instead of content (the SDK adds no empty content to these). */
const CONTENTLESS_RESULT_KEYS = ['task', 'inputRequests', 'requestState'];

/** The members of a JSON-RPC request (the SDK's schema is strict: anything else is not a request). */
const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);
/** The SDK's verdicts on the envelopes seen, by their JSON (isModernEnvelope). */
const envelopeVerdicts = new Map<string, boolean>();
const MAX_KEPT_VERDICTS = 1_000;

/** A 2026-07-28 tools/call admitted to the direct path: its id, its params as a handler sees them, and its envelope. */
export interface DirectToolCall {
  id: string | number;
  params: Record<string, unknown>;
  envelope: Record<string, unknown>;
}

/**
 * A 2026-07-28 host's tools/call that the gateway serves without the SDK's per-request
 * server instance (docs/gateway.md, "The direct path"): one the SDK's handler would take
 * as it is, with nothing for it to refuse or lift. The revision's rules are still the
 * SDK's: the envelope is classified by its own `classifyInboundRequest` (its shape, the
 * version header against it), the rest of the body is checked as its JSON-RPC schema
 * checks it, and the Mcp-Protocol-Version, Mcp-Method and Mcp-Name headers must be
 * present and equal to the body's values as they are. Anything else (a header encoded
 * or missing, a retry's requestState or inputResponses, a task, a key the params do
 * not usually carry) is null and goes to the SDK's handler, which answers it, its
 * refusals included, in its own words.
 */
export function directToolCall(body: unknown, headers: IncomingHttpHeaders): DirectToolCall | null {
  if (!isPlainObject(body) || body.jsonrpc !== '2.0' || body.method !== 'tools/call') return null;
  const id = body.id;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return null;
  for (const key of Object.keys(body)) if (!REQUEST_KEYS.has(key)) return null;
  // Params the SDK's schema would refuse (no name, arguments not an object) are its to answer.
  if (malformedRequestParams(body, MODERN_REVISION)) return null;
  const params = body.params as { name: string; arguments?: Record<string, unknown>; _meta?: unknown };
  if (headers['mcp-protocol-version'] !== MODERN_REVISION || headers['mcp-method'] !== 'tools/call' || headers['mcp-name'] !== params.name) return null;
  for (const key of Object.keys(params)) if (key !== 'name' && key !== 'arguments' && key !== '_meta') return null;
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
  if (isPlainObject(extensions) && TASKS_EXTENSION in extensions) return null;
  if (!isModernEnvelope(envelope)) return null;
  const handlerParams: Record<string, unknown> = { name: params.name };
  if (params.arguments !== undefined) handlerParams.arguments = params.arguments;
  if (Object.keys(rest).length > 0) handlerParams._meta = rest;
  return { id, params: handlerParams, envelope };
}

/**
 * Whether the SDK classifies a tools/call with this envelope as a request of revision
 * 2026-07-28 (its envelope checks, and the version header against it). The verdict
 * depends on nothing else that directToolCall lets through (the other parts of the
 * body are checked there as the SDK's JSON-RPC schema checks them), and a host sends
 * the same envelope with every request, so it is kept: classifying costs about 12 µs.
 */
function isModernEnvelope(envelope: Record<string, unknown>): boolean {
  const key = JSON.stringify(envelope);
  let verdict = envelopeVerdicts.get(key);
  if (verdict === undefined) {
    const outcome = classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: MODERN_REVISION,
      mcpMethodHeader: 'tools/call',
      body: { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'tool', _meta: envelope } },
    });
    verdict = outcome.kind === 'modern' && outcome.messageKind === 'request' && outcome.classification.revision === MODERN_REVISION;
    if (envelopeVerdicts.size >= MAX_KEPT_VERDICTS) envelopeVerdicts.clear();
    envelopeVerdicts.set(key, verdict);
  }
  return verdict;
}

/**
 * A tools/call result as the SDK's handler encodes it for revision 2026-07-28: an empty
 * content list where a result has none, `resultType` (`complete` unless the result
 * names its own), and the server's identity in `_meta`. (The SDK also validates the
 * result against its schema, and an input_required result's requests against the
 * host's capabilities; the direct path relays an upstream's result as it came, as a
 * 2025 host's path does: the upstream had those capabilities in the envelope.)
 */
export function encodeToolCallResult(result: Record<string, unknown>, serverInfo: { name: string; version: string }): Record<string, unknown> {
  let encoded = result;
  if (result.resultType !== 'input_required' && result.content === undefined && !CONTENTLESS_RESULT_KEYS.some((key) => key in result))
    encoded = { ...encoded, content: [] };
  if (encoded.resultType === undefined) encoded = { ...encoded, resultType: 'complete' };
  const meta = encoded._meta;
  if (meta === undefined) return { ...encoded, _meta: { [SERVER_INFO_META_KEY]: serverInfo } };
  if (!isPlainObject(meta) || meta[SERVER_INFO_META_KEY] !== undefined) return encoded;
  return { ...encoded, _meta: { ...meta, [SERVER_INFO_META_KEY]: serverInfo } };
}

/** A handler's failure as the SDK's handler answers it in revision 2026-07-28 (its code, message and data). */
export function encodeToolCallError(id: string | number, error: unknown): Record<string, unknown> {
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
