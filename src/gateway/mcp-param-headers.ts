import { ERRORS } from './call-model.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { resolveExposedName } from './aggregate.js';
import type { Catalog } from './catalog.js';
import { HTTP_TOKEN } from '../core/http-token.js';

/**
 * SEP-2243 (revision 2026-07-28): a tool's inputSchema may mark properties with
 * `x-mcp-header: "<Name>"`, and a tools/call over Streamable HTTP then carries each
 * marked argument in an `Mcp-Param-<Name>` header, which the server checks against the
 * body (HeaderMismatch -32020 when missing or different). The v2 SDK has this codec but
 * does not export it (`scanXMcpHeaderDeclarations`, `buildMcpParamHeaders`,
 * `validateMcpParamHeaders` in its core-internal `mcpParamHeaders.ts`); this is the
 * smallest faithful copy of the parts a gateway needs, checked against the SDK's own
 * client and server in test/gateway-param-headers.test.ts.
 */

/** One marked property: where its value sits in `arguments`, and the header that mirrors it. */
export interface ParamHeaderDeclaration {
  path: readonly string[];
  headerName: string;
  type: string | undefined;
}

const PREFIX = 'Mcp-Param-';
const MARK = 'x-mcp-header';
const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
/** Keywords under which a mark is not "statically reachable through properties": it makes the tool invalid. */
const UNREACHABLE = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'dependentSchemas',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
] as const;
const NAMED_SUBSCHEMAS = new Set(['patternProperties', 'dependentSchemas', '$defs', 'definitions']);
const SENTINEL_START = '=?base64?';
const SENTINEL_END = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const CANONICAL_DECIMAL = /^-?\d+(\.\d+)?$/;

/**
 * The declarations a server built on the v2 SDK checks for a tool: all of them when
 * the schema is valid, the ones found when the only fault is a `number`-typed mark
 * (the SDK's server still checks those), none when the schema is otherwise invalid
 * (conforming clients do not call such a tool, and the SDK's server checks nothing).
 */
export function scanParamHeaderDeclarations(inputSchema: unknown): readonly ParamHeaderDeclaration[] {
  const declarations: ParamHeaderDeclaration[] = [];
  const seen = new Set<string>();
  let numberTyped = false;
  // Returns true at the first fault that invalidates the whole schema.
  const visit = (node: unknown, path: string[], reachable: boolean): boolean => {
    if (node === null || typeof node !== 'object') return false;
    const schema = node as Record<string, unknown>;
    if (MARK in schema) {
      const name = schema[MARK];
      if (!reachable || path.length === 0 || typeof name !== 'string' || !HTTP_TOKEN.test(name)) return true;
      const type = typeof schema.type === 'string' ? schema.type : undefined;
      if (type === undefined || !PRIMITIVE.has(type)) {
        if (type !== 'number') return true;
        numberTyped = true;
      }
      if (seen.has(name.toLowerCase())) return true;
      seen.add(name.toLowerCase());
      declarations.push({ path, headerName: name, type });
    }
    const properties = schema.properties;
    if (properties !== null && typeof properties === 'object')
      for (const [key, child] of Object.entries(properties)) if (visit(child, [...path, key], reachable)) return true;
    for (const keyword of UNREACHABLE) {
      const sub = schema[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub) ? sub : sub !== null && typeof sub === 'object' && NAMED_SUBSCHEMAS.has(keyword) ? Object.values(sub) : [sub];
      for (const branch of branches) if (visit(branch, [...path, `<${keyword}>`], false)) return true;
    }
    return false;
  };
  if (visit(inputSchema, [], true)) return numberTyped ? declarations : [];
  return declarations;
}

/**
 * The `Mcp-Param-*` headers of one tools/call: a null or absent argument has none, and
 * a value that is not a primitive (or a number that is not finite or not a safe
 * integer) has none rather than a malformed one.
 */
export function paramHeaders(declarations: readonly ParamHeaderDeclaration[], args: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const declaration of declarations) {
    const value = asHeaderText(valueAt(args, declaration.path));
    if (value !== undefined) out[`${PREFIX}${declaration.headerName}`] = encodeValue(value);
  }
  return out;
}

/** A request's `Mcp-Param-*` header that disagrees with its body: which one, and why in words naming it. */
export interface ParamHeaderProblem {
  header: string;
  reason: string;
}

/** Where a host's Mcp-Param-* headers are read from: a Headers object, or the request's own headers read in place. */
export type ParamHeaderSource = Pick<Headers, 'get'>;

/**
 * What is wrong with a request's `Mcp-Param-*` headers against its body; null when
 * they agree. The server side of SEP-2243, for a gateway that serves tools it relays:
 * a header for a null or absent argument is ignored, and integers compare as numbers
 * (`42.0` is `42`).
 */
export function paramHeaderMismatch(declarations: readonly ParamHeaderDeclaration[], args: unknown, headers: ParamHeaderSource): ParamHeaderProblem | null {
  for (const declaration of declarations) {
    const header = `${PREFIX}${declaration.headerName}`;
    const raw = valueAt(args, declaration.path);
    const expected = asHeaderText(raw);
    if (expected === undefined) continue;
    const sent = headers.get(header);
    if (sent === null) return { header, reason: `the body carries ${declaration.path.join('.')} but the ${header} header is absent` };
    const decoded = decodeValue(sent);
    if (decoded === undefined) return { header, reason: `the ${header} header carries an invalid Base64 sentinel value` };
    const numeric = (declaration.type === 'integer' || declaration.type === 'number') && typeof raw === 'number' && CANONICAL_DECIMAL.test(decoded);
    if (numeric ? Number(decoded) !== raw : decoded !== expected)
      return { header, reason: `the ${header} header does not match ${declaration.path.join('.')} in the body` };
  }
  return null;
}

/** How long a tool list learned at call time stands in for the one learned at validation. */
export const LEARNED_TOOLS_TTL_MS = 10 * 60_000;
const MAX_LEARNED = 1_000;

/** What ParamHeaderSchemas needs of a route. */
type SchemaRoute = { serverGuid: string; identity: { guid: string } | null; features: { tools: Record<string, unknown>[] } | null };

/**
 * Where a gateway finds a tool's declarations at call time, without a round trip:
 * the newest tool list this process saw from the upstream for the route's identity
 * (a host's tools/list relayed, or a list fetched after the upstream said the headers
 * were wrong: the SDK's own client does the same with its cached tools/list), for
 * LEARNED_TOOLS_TTL_MS, else the list learned at validation (`route.features.tools`).
 * Each list is scanned once (a routing table keeps the same list object while it is
 * cached), so a call pays for a map lookup. Per process, bounded.
 */
export class ParamHeaderSchemas {
  private readonly scanned = new WeakMap<readonly Record<string, unknown>[], Map<string, readonly ParamHeaderDeclaration[]>>();
  private readonly learned = new Map<string, { tools: readonly Record<string, unknown>[]; until: number }>();

  /** The declarations of `toolName` (the upstream's own name) on the route's server; none for a tool its list does not have. */
  declarationsFor(route: SchemaRoute, toolName: string): readonly ParamHeaderDeclaration[] {
    const key = keyOf(route);
    const learned = this.learned.get(key);
    if (learned && learned.until <= Date.now()) this.learned.delete(key);
    const tools = learned && learned.until > Date.now() ? learned.tools : route.features?.tools;
    if (!tools) return [];
    let byName = this.scanned.get(tools);
    if (!byName) {
      byName = new Map();
      for (const tool of tools) if (typeof tool.name === 'string') byName.set(tool.name, scanParamHeaderDeclarations(tool.inputSchema));
      this.scanned.set(tools, byName);
    }
    return byName.get(toolName) ?? [];
  }

  /** Takes a tool list the upstream gave just now (to the route's identity), for LEARNED_TOOLS_TTL_MS. */
  learn(route: SchemaRoute, tools: readonly Record<string, unknown>[]): void {
    const key = keyOf(route);
    this.learned.delete(key);
    if (this.learned.size >= MAX_LEARNED) this.learned.delete(this.learned.keys().next().value!);
    this.learned.set(key, { tools, until: Date.now() + LEARNED_TOOLS_TTL_MS });
  }

  /**
   * What is wrong with a 2026-07-28 host's `Mcp-Param-*` headers on a tools/call at a
   * gateway, against the tool it names (resolved as the call will be: naming mode,
   * curation); null when they agree or the name resolves to no tool (the call is
   * refused for that later). The host built them from the gateway's tools/list, which
   * carries the upstream's schemas, arguments unchanged.
   */
  hostMismatch(
    catalog: Pick<Catalog, 'naming' | 'routes' | 'bySlug'>,
    params: { name?: unknown; arguments?: unknown },
    headers: ParamHeaderSource,
  ): ParamHeaderProblem | null {
    if (typeof params.name !== 'string') return null;
    const resolved = resolveExposedName(catalog, 'tools', params.name);
    if (!('route' in resolved)) return null;
    return paramHeaderMismatch(this.declarationsFor(resolved.route, resolved.name), params.arguments, headers);
  }
}

const keyOf = (route: SchemaRoute): string => `${route.serverGuid}|${route.identity?.guid ?? ''}`;

/** A host's request refused for its `Mcp-Param-*` headers, as a server of the revision refuses it (sent with HTTP 400). */
export function paramHeaderRefusal(id: RequestId, problem: ParamHeaderProblem): JSONRPCMessage {
  const message = `Bad Request: the request headers and body disagree: ${problem.reason}`;
  return { jsonrpc: '2.0', id, error: { code: ERRORS.headerMismatch, message, data: { mismatch: { header: problem.header, body: problem.reason } } } };
}

/**
 * Whether an upstream's answer is its SEP-2243 refusal of the `Mcp-Param-*` headers
 * (-32020 naming such a header): the tool's schema changed since the gateway learned
 * it, so the gateway learns it again and retries once.
 */
export function isParamHeaderMismatch(answer: unknown): boolean {
  const error = (answer as { error?: { code?: unknown; data?: { mismatch?: { header?: unknown } } } } | null)?.error;
  const header = error?.data?.mismatch?.header;
  return error?.code === ERRORS.headerMismatch && typeof header === 'string' && header.toLowerCase().startsWith(PREFIX.toLowerCase());
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function asHeaderText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return String(value);
  return undefined;
}

/**
 * A header value as revision 2026-07-28 carries one (Mcp-Param-*, Mcp-Name): plain visible ASCII (and tab) passes as it is;
 * anything else, surrounding whitespace, or what looks like the sentinel is Base64 in the sentinel.
 */
export function encodeValue(value: string): string {
  const plain =
    value.length > 0 &&
    value === value.trim() &&
    !(value.startsWith(SENTINEL_START) && value.endsWith(SENTINEL_END)) &&
    [...value].every((c) => c === '\t' || (c >= ' ' && c <= '~'));
  return plain ? value : `${SENTINEL_START}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_END}`;
}

function decodeValue(value: string): string | undefined {
  if (!(value.startsWith(SENTINEL_START) && value.endsWith(SENTINEL_END))) return value;
  const b64 = value.slice(SENTINEL_START.length, value.length - SENTINEL_END.length);
  if (!CANONICAL_BASE64.test(b64)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
}
