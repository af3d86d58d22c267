import { z } from 'zod';
import { validationFailed, type FieldError } from './errors.js';
import { HTTP_TOKEN } from './http-token.js';
import { shownHeaderName } from './redaction.js';

/** The most headers one map may hold (an identity's, a collector's). */
export const MAX_HEADERS = 32;
const MAX_NAME_LENGTH = 256;
const MAX_VALUE_LENGTH = 8_192;
/** Control characters but tab: Node refuses to send them in a header value, and CR/LF would split the header. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u0008\u000a-\u001f\u007f]/;
/** Beyond Latin-1: an HTTP header value is bytes, and Node cannot send such a character in one. */
const BEYOND_LATIN1 = /[^\t\u0020-\u00ff]/;
/** The reserved prefix of the service's own headers (admin-api resources rule 5). */
const RESERVED_PREFIX = 'svc-';
/** Headers the service sets on each exchange, or that would break it: no map may set them. */
const EXCHANGE_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-connection',
]);

/** A header map as an operation takes it: names to values, which are write-only. */
export const headerMapInput = (description: string) => z.record(z.string().max(MAX_NAME_LENGTH), z.string().max(MAX_VALUE_LENGTH)).describe(description);

/**
 * A header map as the service keeps it, an identity's or a collector's alike (admin-api
 * resources rule 5): entries whose name starts with `svc-` or whose name or value is
 * empty are dropped, names are trimmed; a name that is not an HTTP token, is given twice
 * (names are case-insensitive) or is one the exchange owns, a value with control
 * characters or characters beyond Latin-1, and more than MAX_HEADERS headers are
 * refused; a value of spaces alone counts as empty. Errors name the header (cut where
 * its name ends: a pasted header line holds its value after the name), never its value.
 */
export function checkedHeaderMap(input: Record<string, string>, field = 'headers'): Record<string, string> {
  const kept: Record<string, string> = {};
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const [given, value] of Object.entries(input)) {
    const name = given.trim();
    const lower = name.toLowerCase();
    const path = `${field}.${shownHeaderName(given)}`;
    // A value of spaces alone is empty once sent (HTTP trims a value): dropped like an empty one.
    if (!name || value.trim() === '' || lower.startsWith(RESERVED_PREFIX)) continue;
    if (!HTTP_TOKEN.test(name)) errors.push({ path, message: 'is not a valid HTTP header name' });
    else if (EXCHANGE_HEADERS.has(lower)) errors.push({ path, message: 'is set by the service on each request and cannot be configured' });
    else if (seen.has(lower)) errors.push({ path, message: 'is given twice (header names are case-insensitive)' });
    else if (CONTROL_CHARACTER.test(value)) errors.push({ path, message: 'value must be one line without control characters' });
    else if (BEYOND_LATIN1.test(value)) errors.push({ path, message: 'value must be Latin-1 text (an HTTP header carries no other characters)' });
    else {
      seen.add(lower);
      kept[name] = value;
    }
  }
  if (Object.keys(kept).length > MAX_HEADERS) errors.push({ path: field, message: `at most ${MAX_HEADERS} headers` });
  if (errors.length > 0) throw validationFailed(errors);
  return kept;
}
