/**
 * A JSON string literal, exactly as JSON.stringify writes it. Most values the
 * forwarder writes (guids, names, ids) need no escaping: those are only quoted,
 * several times cheaper than a JSON.stringify call for each of the ~20 strings of a
 * record. Anything with a quote, backslash, control character or surrogate (which
 * JSON.stringify escapes when unpaired) goes through JSON.stringify.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON must escape
const NEEDS_ESCAPING = /["\\\u0000-\u001f\ud800-\udfff]/;

export const jsonString = (s: string): string => (NEEDS_ESCAPING.test(s) ? JSON.stringify(s) : `"${s}"`);
