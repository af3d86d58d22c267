import { ProtocolErrorCode } from '@modelcontextprotocol/server';

type Params = Record<string, unknown>;

/** What a JSON value is, as a message names a wrong one ("not an array"). */
export const kindOf = (value: unknown): string =>
  Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
/** A JSON object: not null, not an array. */
export const isPlainObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The syslog severities MCP's logging uses (RFC 5424). */
const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** Requests of the 2025 revisions that 2026-07-28 dropped (server/discover and the envelope replace initialize; listen streams replace subscriptions; the envelope carries the log level). */
const GONE_IN_2026 = new Set(['initialize', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']);

/** What each named request needs of its params, said in words: null when they will do. */
const RULES: Record<string, (p: Params) => string | null> = {
  initialize: (p) => {
    if (typeof p.protocolVersion !== 'string' || p.protocolVersion === '')
      return 'initialize needs params.protocolVersion: the revision the client speaks, such as 2025-11-25.';
    if (!isPlainObject(p.capabilities)) return `initialize params.capabilities must be an object of the client's capabilities, not ${kindOf(p.capabilities)}.`;
    const info = p.clientInfo;
    if (!isPlainObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string')
      return 'initialize needs params.clientInfo: an object with the client name and version (strings).';
    return null;
  },
  'completion/complete': (p) => {
    const ref = p.ref;
    const refOk =
      isPlainObject(ref) && ((ref.type === 'ref/prompt' && typeof ref.name === 'string') || (ref.type === 'ref/resource' && typeof ref.uri === 'string'));
    if (!refOk) return 'completion/complete needs params.ref: {type: "ref/prompt", name} or {type: "ref/resource", uri}.';
    const arg = p.argument;
    if (!isPlainObject(arg) || typeof arg.name !== 'string' || typeof arg.value !== 'string')
      return 'completion/complete needs params.argument: an object with the argument name and the value typed so far (strings).';
    if (p.context !== undefined && !isPlainObject(p.context)) return `completion/complete params.context must be an object, not ${kindOf(p.context)}.`;
    return null;
  },
  'tools/call': (p) => {
    if (typeof p.name !== 'string' || p.name === '') return 'tools/call needs params.name: the name of a tool from tools/list.';
    if (p.arguments !== undefined && !isPlainObject(p.arguments))
      return `tools/call params.arguments must be an object of the tool's parameters, not ${kindOf(p.arguments)}.`;
    return null;
  },
  'prompts/get': (p) => {
    if (typeof p.name !== 'string' || p.name === '') return 'prompts/get needs params.name: the name of a prompt from prompts/list.';
    if (p.arguments !== undefined && !isPlainObject(p.arguments))
      return `prompts/get params.arguments must be an object of the prompt's arguments, not ${kindOf(p.arguments)}.`;
    if (p.arguments !== undefined && Object.values(p.arguments as Params).some((v) => typeof v !== 'string'))
      return 'prompts/get params.arguments must map each argument name to a string.';
    return null;
  },
  'logging/setLevel': (p) =>
    typeof p.level === 'string' && LOG_LEVELS.includes(p.level) ? null : `logging/setLevel needs params.level, one of ${LOG_LEVELS.join(', ')}.`,
  // The SDK's own schema refuses a cursor that is not a string as an internal error (-32603, its issues dumped);
  // a string cursor is one these servers never issued (cursorRule).
  'tools/list': (p) => cursorRule('tools/list', p),
  'prompts/list': (p) => cursorRule('prompts/list', p),
  'resources/list': (p) => cursorRule('resources/list', p),
  'resources/templates/list': (p) => cursorRule('resources/templates/list', p),
  'resources/read': (p) => uriRule('resources/read', p),
  'resources/subscribe': (p) => uriRule('resources/subscribe', p),
  'resources/unsubscribe': (p) => uriRule('resources/unsubscribe', p),
};

/** What every request's `_meta` must be: an object, its progress token a string or a number (an upstream's schema refuses the request whole). */
function metaProblem(meta: unknown): string | null {
  if (meta === undefined) return null;
  if (!isPlainObject(meta)) return `params._meta must be an object, not ${kindOf(meta)}.`;
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== 'string' && !(typeof token === 'number' && Number.isInteger(token)))
    return `params._meta.progressToken must be a string or an integer, not ${kindOf(token)}.`;
  return null;
}

/**
 * What a 2026-07-28 retry carries (input_required): the host's answers keyed as the inputRequests were, and the
 * requestState it was given, echoed. Of another type, the SDK would drop the answers without a word (and ask again)
 * or call the state expired.
 */
function retryProblem(p: Params): string | null {
  if (p.inputResponses !== undefined && !isPlainObject(p.inputResponses))
    return `params.inputResponses must be an object of the answers, keyed as the inputRequests were, not ${kindOf(p.inputResponses)}.`;
  if (p.requestState !== undefined && typeof p.requestState !== 'string')
    return `params.requestState must be the string the input_required result carried, not ${kindOf(p.requestState)}.`;
  return null;
}

/**
 * Every list of both MCP surfaces comes whole, in one page with no nextCursor (a
 * gateway merges its upstreams' lists, the admin endpoint lists the registry), so any
 * cursor is one it did not issue: invalid params, as the revisions' pagination says,
 * rather than a silent first page. A surface that pages must learn its own cursors here.
 */
function cursorRule(method: string, p: Params): string | null {
  if (p.cursor === undefined) return null;
  if (typeof p.cursor !== 'string') return `${method} params.cursor must be a string, not ${kindOf(p.cursor)}.`;
  return `${method} params.cursor was not issued by this server: its lists come whole, in one page with no nextCursor; list again without a cursor.`;
}

function uriRule(method: string, p: Params): string | null {
  return typeof p.uri === 'string' && p.uri !== '' ? null : `${method} needs params.uri: the URI of a resource from resources/list.`;
}

/**
 * What a 2025-11-25 tools/call's task augmentation (`params.task`) must be, in words: null
 * when absent or well formed. The gateways ask it of a host that may augment (one that
 * does not has it dropped); the admin endpoint of every 2025 request, as its SDK's schema does.
 */
export function taskAugmentationProblem(task: unknown): string | null {
  if (task === undefined || (isPlainObject(task) && (task.ttl === undefined || typeof task.ttl === 'number'))) return null;
  return 'tools/call params.task must be an object: { ttl?: milliseconds to keep the task }.';
}

/** The admin endpoint's answer (-32602 in words) to a 2025 tools/call whose task augmentation its SDK would refuse with a dump of its issues, or null. */
export function malformedTaskAugmentation(message: unknown): { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string } } | null {
  const m = message as { method?: unknown; id?: unknown; params?: { task?: unknown } } | null;
  if (!m || typeof m !== 'object' || m.method !== 'tools/call' || m.id === undefined || !isPlainObject(m.params)) return null;
  const problem = taskAugmentationProblem(m.params.task);
  return problem ? { jsonrpc: '2.0', id: m.id, error: { code: ProtocolErrorCode.InvalidParams, message: problem } } : null;
}

/**
 * A JSON-RPC answer for a request whose params the SDK's own schema (or an upstream's)
 * would refuse with a dump of its issues: the same -32602, in words (contract: bad
 * input is named). Null when the message is not such a request. One rule for every
 * MCP surface: the admin endpoint and the gateways (which must not forward such a
 * request upstream). A surface serving only some methods names them in `served`.
 */
export function malformedRequestParams(
  message: unknown,
  revision: 'any' | '2026-07-28' = 'any',
  served?: ReadonlySet<string>,
): { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string } } | null {
  const m = message as { method?: unknown; id?: unknown; params?: unknown } | null;
  if (!m || typeof m !== 'object' || typeof m.method !== 'string' || m.id === undefined) return null;
  // Methods revision 2026-07-28 no longer has are its handler's to refuse (HTTP 404, -32601), whatever their params.
  if (revision === '2026-07-28' && GONE_IN_2026.has(m.method)) return null;
  // So are methods the surface does not serve (`served`, when it names them): method not found, whatever their params.
  if (served && !served.has(m.method)) return null;
  const rule = Object.hasOwn(RULES, m.method) ? RULES[m.method]! : null;
  const params = m.params ?? {};
  const problem = !isPlainObject(params)
    ? rule
      ? `${m.method} params must be an object, not ${kindOf(m.params)}.`
      : null
    : (metaProblem(params._meta) ?? (revision === '2026-07-28' ? retryProblem(params) : null) ?? (rule ? rule(params) : null));
  return problem ? { jsonrpc: '2.0', id: m.id, error: { code: ProtocolErrorCode.InvalidParams, message: problem } } : null;
}
