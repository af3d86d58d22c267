import type { JSONRPCMessage, LoggingLevel } from '@modelcontextprotocol/server';
import { isPlainObject } from '../mcp/request-params.js';
import { encodeValue, paramHeaders, type ParamHeaderDeclaration } from './mcp-param-headers.js';

/** The revision an upstream learned at validation speaks without sessions or initialize. */
export const MODERN_REVISION = '2026-07-28';

const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
const LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
/** What revision 2026-07-28 adds to a complete result: its kind and cache hints, none of them a 2025 host's. */
const MODERN_RESULT_FIELDS = ['resultType', 'ttlMs', 'cacheScope'] as const;

/** Where Mcp-Name comes from for the methods that name something (the tasks extension's name their task). */
const NAMED_BY: Record<string, 'name' | 'uri' | 'taskId'> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

export interface HostIdentity {
  clientInfo: { name: string; version: string };
  clientCapabilities: Record<string, unknown>;
  /**
   * The least severe log message the host wants: a 2026-07-28 host's envelope says it
   * per request, a 2025 host's logging/setLevel once (host-log-levels.ts). Absent, a
   * 2026-07-28 upstream sends no log messages for the request.
   */
  logLevel?: LoggingLevel;
}

/**
 * A message as a 2026-07-28 upstream takes it (the upstream side of the revision):
 * the per-request envelope in `params._meta` (the revision, the host's info,
 * capabilities and log level; any other `_meta` of the host's kept), and the headers
 * that must match the body: routing (`Mcp-Method`, `Mcp-Name`) and, for a tools/call,
 * the `Mcp-Param-*` mirror of the arguments the upstream's tool marks with
 * `x-mcp-header` (`paramDeclarations`: the tool's, by its upstream name; see
 * ParamHeaderSchemas).
 */
export function toModernUpstream(
  message: JSONRPCMessage,
  host: HostIdentity,
  paramDeclarations: readonly ParamHeaderDeclaration[] = [],
): { message: JSONRPCMessage; headers: Record<string, string> } {
  const m = message as { method?: string; params?: Record<string, unknown> };
  if (m.method === undefined) return { message, headers: { 'mcp-protocol-version': MODERN_REVISION } };
  const params = m.params ?? {};
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  const enveloped = {
    ...message,
    params: {
      ...params,
      _meta: {
        ...meta,
        [PROTOCOL_VERSION_KEY]: MODERN_REVISION,
        [CLIENT_INFO_KEY]: host.clientInfo,
        [CLIENT_CAPABILITIES_KEY]: host.clientCapabilities,
        ...(host.logLevel !== undefined ? { [LOG_LEVEL_KEY]: host.logLevel } : {}),
      },
    },
  } as JSONRPCMessage;
  const headers: Record<string, string> = { 'mcp-method': m.method };
  const namedBy = NAMED_BY[m.method];
  const name = namedBy ? params[namedBy] : undefined;
  // Encoded as the SDK's client encodes it: a raw URI or task id of any character would be refused by node:http (and by the upstream).
  if (typeof name === 'string') headers['mcp-name'] = encodeValue(name);
  if (m.method === 'tools/call' && paramDeclarations.length > 0) Object.assign(headers, paramHeaders(paramDeclarations, params.arguments));
  return { message: enveloped, headers };
}

/**
 * A 2026-07-28 upstream answers a request's JSON-RPC error with an HTTP error status
 * (400 for invalid params or a missing client capability, 404 for an unknown tool...):
 * that error, when the body holds it for this request, is the upstream's answer and
 * reaches the host as such. Null for anything else (401/403 stay credential failures).
 */
export function errorAnswerIn(status: number, body: string, request: JSONRPCMessage): JSONRPCMessage | null {
  if (status < 400 || status >= 500 || status === 401 || status === 403) return null;
  try {
    const answer = JSON.parse(body) as { id?: unknown; error?: { code?: unknown; message?: unknown } };
    const sameId = answer.id === (request as { id?: unknown }).id;
    return sameId && typeof answer.error?.code === 'number' && typeof answer.error.message === 'string' ? (answer as JSONRPCMessage) : null;
  } catch {
    return null;
  }
}

/**
 * A 2026-07-28 upstream's result without the upstream's identity in `_meta`: the host
 * speaks to the gateway, which says who it is itself (server/discover and, when a
 * result names no one, the SDK's encoding or the direct path's). Relayed, an
 * upstream's name and version would contradict the gateway's discover answer and
 * tell a host what runs behind the gateway.
 */
export function withoutUpstreamIdentity(message: JSONRPCMessage): JSONRPCMessage {
  const result = (message as { result?: unknown }).result;
  if (!isPlainObject(result) || !isPlainObject(result._meta) || !(SERVER_INFO_KEY in result._meta)) return message;
  const { [SERVER_INFO_KEY]: _, ...rest } = result._meta;
  const stripped: Record<string, unknown> = { ...result };
  if (Object.keys(rest).length > 0) stripped._meta = rest;
  else delete stripped._meta;
  return { ...message, result: stripped } as JSONRPCMessage;
}

/**
 * A 2026-07-28 upstream's message as a 2025 host takes it: a complete result without
 * what the revision adds to it (`resultType`, the cache hints `ttlMs` and `cacheScope`,
 * the server's identity in `_meta`, which a 2025 host learned at initialize, from the
 * gateway). An `input_required` or `task` result is left whole: the bridges turn it
 * into the host's revision (bridge-input-rounds.ts, bridge-core-tasks.ts).
 */
export function toLegacyHost(message: JSONRPCMessage): JSONRPCMessage {
  const result = (withoutUpstreamIdentity(message) as { result?: unknown }).result;
  if (!isPlainObject(result) || (result.resultType !== undefined && result.resultType !== 'complete')) return message;
  if (result === (message as { result?: unknown }).result && !MODERN_RESULT_FIELDS.some((field) => field in result)) return message;
  const legacy: Record<string, unknown> = { ...result };
  for (const field of MODERN_RESULT_FIELDS) delete legacy[field];
  return { ...message, result: legacy } as JSONRPCMessage;
}
