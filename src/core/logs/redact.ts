/**
 * Redaction of secrets before anything is stored: call-log headers and alert
 * debug context. Header names compare case-insensitively.
 */
export const REDACTED = '[REDACTED]';

/** Header names whose values are credentials wherever they appear. */
const SENSITIVE_HEADER_NAMES = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
  'x-auth-token',
  'x-access-token',
  'mcp-gateway-token',
]);

/** True when a header of this name carries a credential: the fixed list, any `svc-` name, or one of `extraNames`. */
export function isSensitiveHeaderName(name: string, extraNames: Iterable<string> = []): boolean {
  const lower = name.toLowerCase();
  if (SENSITIVE_HEADER_NAMES.has(lower) || lower.startsWith('svc-')) return true;
  for (const extra of extraNames) if (extra.toLowerCase() === lower) return true;
  return false;
}

/**
 * Returns a copy of `headers` in which the value of every sensitive header is
 * replaced by `[REDACTED]` (names stay, so a reader still sees that it was sent).
 * `extraNames` adds names known to be secret, e.g. an identity's header names.
 */
export function redactHeaders(headers: Record<string, string> | undefined, extraNames: Iterable<string> = []): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  const extra = [...extraNames];
  for (const [name, value] of Object.entries(headers)) out[name] = isSensitiveHeaderName(name, extra) ? REDACTED : String(value);
  return out;
}

const BEARER = /\b(Bearer|Basic|Splunk)\s+[A-Za-z0-9._~+/=-]+/gi;
const TOKEN_LIKE = /\bsvc[pg]_[A-Za-z0-9]+_[A-Za-z0-9_-]+/g;

/**
 * Redacts a free-form structure (an alert's debug context): every property named
 * like a sensitive header, at any depth, loses its value; credentials spelled out
 * in strings (`Bearer ...`, our own token format) are masked too.
 */
export function redactDeep(value: unknown, extraNames: Iterable<string> = [], depth = 0): unknown {
  const extra = [...extraNames];
  if (depth > 20) return REDACTED;
  if (typeof value === 'string') return value.replace(BEARER, (_m, scheme: string) => `${scheme} ${REDACTED}`).replace(TOKEN_LIKE, REDACTED);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, extra, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSensitiveHeaderName(k, extra) || /secret|password|token/i.test(k) ? REDACTED : redactDeep(v, extra, depth + 1);
    }
    return out;
  }
  return value;
}
