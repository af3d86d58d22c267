import { validationFailed, type AppError, type FieldError } from '../core/errors.js';

/**
 * Keys refused in admin bodies: `__proto__` would rewrite an object's prototype
 * wherever a parsed body is copied into another object, and none of the three names
 * a header, grant, identity or filter (a map that took them would behave oddly).
 */
export const ADMIN_REFUSED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
/**
 * Keys refused in what hosts send a gateway: only `__proto__`. A tool's arguments are
 * the upstream's business, and `constructor` or `prototype` there is an ordinary key.
 */
export const GATEWAY_REFUSED_KEYS: ReadonlySet<string> = new Set(['__proto__']);
/** Nothing refused at parse time: the admin MCP endpoint judges the keys of a tool's arguments as the tool's failure (toolArguments). */
export const NO_REFUSED_KEYS: ReadonlySet<string> = new Set();

/**
 * Deeper nesting is refused: no input of the service comes near it, and every later
 * walk of the value (validation, redaction, JSON.stringify for the audit log or an
 * upstream) recurses and would overflow the stack. serde_json's default limit.
 */
export const MAX_JSON_DEPTH = 128;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses a JSON request body for every route of the service (REST, the admin MCP
 * endpoint, the gateways). Refused with a 400 naming the problem, never repaired
 * in silence: bytes that are not UTF-8 (they would be stored as U+FFFD), text that
 * is not JSON, nesting deeper than MAX_JSON_DEPTH, and `refusedKeys` at any depth
 * (a copy of the object would drop them or change its prototype). An empty body is
 * no body.
 */
export function parseJsonBody(body: Buffer, refusedKeys: ReadonlySet<string> = ADMIN_REFUSED_KEYS): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw validationFailed([{ path: 'body', message: 'is not valid UTF-8' }]);
  }
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw validationFailed([{ path: 'body', message: 'is not valid JSON' }]);
  }
  const found: FieldError[] = [];
  findRefusedStructure(value, [], found, refusedKeys);
  if (found.length > 0) throw validationFailed(found);
  return value;
}

/**
 * Prototype keys and nesting past the limit; the walk itself never goes deeper than the limit. `at` is the path
 * to `value`, a stack of keys joined only for what is found: a host's every call is walked, and a path string for
 * each key would be most of what the walk allocates.
 */
function findRefusedStructure(value: unknown, at: (string | number)[], found: FieldError[], refusedKeys: ReadonlySet<string>): void {
  if (value === null || typeof value !== 'object' || found.length >= 20) return;
  if (at.length >= MAX_JSON_DEPTH) {
    found.push({ path: at.join('.') || 'body', message: `nests deeper than ${MAX_JSON_DEPTH} levels` });
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      at.push(i);
      findRefusedStructure(value[i], at, found, refusedKeys);
      at.pop();
    }
    return;
  }
  // JSON.parse makes plain objects, whose enumerable keys are all their own (`__proto__` among them, when sent).
  for (const key in value) {
    at.push(key);
    if (refusedKeys.has(key)) found.push({ path: at.join('.'), message: 'is not allowed as a key' });
    else findRefusedStructure((value as Record<string, unknown>)[key], at, found, refusedKeys);
    at.pop();
  }
}

/**
 * An admin MCP message whose body was parsed without refusing keys (NO_REFUSED_KEYS):
 * a refused key in a tool call's arguments is the operation's refusal (a tool failure,
 * audited, as REST answers the same input), named by its path in the arguments, and the
 * arguments go on without it; one anywhere else refuses the request (400), as before.
 */
export function refuseKeysOfMcpMessage(message: unknown): { message: unknown; argumentsRefusal: AppError | null } {
  const found: FieldError[] = [];
  findRefusedStructure(message, [], found, ADMIN_REFUSED_KEYS);
  if (found.length === 0) return { message, argumentsRefusal: null };
  const inArguments = 'params.arguments.';
  const elsewhere = found.filter((e) => !e.path.startsWith(inArguments));
  if (elsewhere.length > 0) throw validationFailed(elsewhere);
  const m = message as { params: { arguments: unknown } };
  return {
    message: { ...m, params: { ...m.params, arguments: withoutKeys(m.params.arguments, ADMIN_REFUSED_KEYS) } },
    argumentsRefusal: validationFailed(found.map((e) => ({ ...e, path: e.path.slice(inArguments.length) }))),
  };
}

/** A copy of a parsed JSON value without `keys` at any depth (built key by key: never through a setter). */
function withoutKeys(value: unknown, keys: ReadonlySet<string>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => withoutKeys(v, keys));
  const out: Record<string, unknown> = {};
  for (const key in value)
    if (!keys.has(key))
      Object.defineProperty(out, key, {
        value: withoutKeys((value as Record<string, unknown>)[key], keys),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  return out;
}
