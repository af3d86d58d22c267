import type { LogsFormat } from '../../stores/schema.js';
import { validationFailed, type FieldError } from '../errors.js';

/** The logs format a collector reports: stored value, or otlp for one saved before the field existed. */
export const resolveLogsFormat = (stored: LogsFormat | null | undefined): LogsFormat => stored ?? 'otlp';

/** RFC 9110 field-name token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the forwarder itself sets or that would break the HTTP exchange. */
const RESERVED_HEADERS = new Set([
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
/** The identity rule (admin-api resources rule 5), applied to collector headers too. */
const SERVICE_PREFIX = 'svc-';
export const MAX_COLLECTOR_HEADERS = 32;
const MAX_HEADER_VALUE = 8192;

/**
 * Checks a collector header map and returns the set to store. Entries with an empty
 * value or a name under the reserved `svc-` prefix are dropped (as for identities);
 * names that are not HTTP tokens, names the forwarder owns, names repeated in another
 * case and values with control characters are refused, naming the header, without
 * ever echoing a value.
 */
export function normalizeCollectorHeaders(input: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(input)) {
    const path = `headers.${name}`;
    if (value === '' || name.toLowerCase().startsWith(SERVICE_PREFIX)) continue;
    if (!HEADER_NAME.test(name)) errors.push({ path, message: 'is not a valid HTTP header name' });
    else if (RESERVED_HEADERS.has(name.toLowerCase())) errors.push({ path, message: 'is set by the forwarder and cannot be configured' });
    else if (seen.has(name.toLowerCase())) errors.push({ path, message: 'is given twice (header names are case-insensitive)' });
    else if (value.length > MAX_HEADER_VALUE) errors.push({ path, message: `value is longer than ${MAX_HEADER_VALUE} characters` });
    // eslint-disable-next-line no-control-regex
    else if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) errors.push({ path, message: 'value contains control characters' });
    else {
      seen.add(name.toLowerCase());
      kept[name] = value;
    }
  }
  if (Object.keys(kept).length > MAX_COLLECTOR_HEADERS) errors.push({ path: 'headers', message: `at most ${MAX_COLLECTOR_HEADERS} headers` });
  if (errors.length > 0) throw validationFailed(errors);
  return kept;
}
