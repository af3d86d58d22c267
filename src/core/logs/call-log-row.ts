import { isGuid } from '../ids.js';
import { randomGuidV7, randomHex } from './random-hex.js';
import { redactHeaders } from '../redaction.js';

/** The log types of contract section 4. */
export const LOG_TYPES = ['tool_call', 'tool_list', 'resource_read', 'prompt_get', 'initialize', 'other'] as const;
export type LogType = (typeof LOG_TYPES)[number];

/** The guid columns query_logs filters on, snake_case as in the API. */
export const GUID_FILTER_COLUMNS = [
  'gateway_connection_guid',
  'user_guid',
  'outbound_gateway_guid',
  'inbound_server_guid',
  'host_guid',
  'server_container_guid',
  'team_guid',
] as const;

/**
 * What a producer (the gateway, seed-logs) hands the writer for one MCP call.
 * Every column of `call_logs` except ingested_at, which ClickHouse stamps when the
 * batch is inserted. Absent guids are stored as '' and read back as null.
 */
export interface CallLogInput {
  organizationGuid: string;
  /** A UUID; assigned by the writer when omitted. */
  guid?: string;
  createdAt: Date | number;
  type: LogType;
  method: string;
  toolName?: string | null;
  status: 'ok' | 'error';
  errorMessage?: string | null;
  durationMs: number;
  requestBytes?: number;
  responseBytes?: number;
  gatewayConnectionGuid?: string | null;
  userGuid?: string | null;
  outboundGatewayGuid?: string | null;
  inboundServerGuid?: string | null;
  hostGuid?: string | null;
  serverContainerGuid?: string | null;
  teamGuid?: string | null;
  /** 32 hex characters; a random one when omitted. */
  traceId?: string;
  /** 16 hex characters; a random one when omitted. */
  spanId?: string;
  /** The MCP session id, when the call ran in a session. */
  sessionId?: string | null;
  requestBody?: string | null;
  responseBody?: string | null;
  requestHeaders?: Record<string, string> | null;
  responseHeaders?: Record<string, string> | null;
  /** Header names known to carry secrets for this call (e.g. the identity's header names); their values are redacted. */
  sensitiveHeaderNames?: string[];
}

/** The columns a call's row describes, after its identity and time; query_logs returns them all. */
export const CALL_COLUMNS = [
  'type',
  'method',
  'tool_name',
  'status',
  'error_message',
  'duration_ms',
  'request_bytes',
  'response_bytes',
  ...GUID_FILTER_COLUMNS,
  'trace_id',
  'span_id',
] as const;

/**
 * Thin columns in insert order. ingested_at is left out: its column default
 * (now64(3), clickhouse/0004) stamps it on the server when the INSERT runs, which
 * the forwarder's delivery horizon relies on (docs/forwarding.md).
 */
export const THIN_INSERT_COLUMNS = ['organization_guid', 'guid', 'created_at', ...CALL_COLUMNS, 'session_id'] as const;

export const DETAIL_INSERT_COLUMNS = [
  'organization_guid',
  'guid',
  'created_at',
  'request_body',
  'response_body',
  'request_headers',
  'response_headers',
] as const;

/** Bodies are stored up to this many bytes (the API shows at most 4 KiB of them). */
export const STORED_DETAIL_LIMIT = 64 * 1024;
const MAX_ERROR_MESSAGE = 4 * 1024;
const UINT32_MAX = 4_294_967_295;
const MAX_CREATED_MS = Date.UTC(2299, 11, 31);
const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

/**
 * Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character.
 * Returns the text and whether anything was cut.
 */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  // Fast path: even at 3 bytes per UTF-16 unit it fits.
  if (text.length * 3 <= maxBytes) return { text, truncated: false };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), truncated: true };
}

/** 'YYYY-MM-DD hh:mm:ss.mmm' in UTC, the DateTime64(3, 'UTC') text form ClickHouse parses fastest. */
export function chDateTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
}

/**
 * created_at as ClickHouse parses it cheapest: quoted epoch seconds with three
 * decimals ("1763640000.123"), about ten times cheaper to build than the ISO text.
 * Times before 2001 (never real call times, but legal input) keep the text form,
 * which has no ambiguity with ClickHouse's short-number date heuristics.
 */
export function chEpochMs(ms: number): string {
  if (ms < 1e12) return chDateTime(ms);
  const millis = ms % 1000;
  return `${(ms - millis) / 1000}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}`;
}

// A workspace has few distinct guids per column: remember the ones already
// checked (bounded) so a row costs a hash lookup instead of a regex per guid.
const knownGuids = new Set<string>();
const KNOWN_GUIDS_MAX = 50_000;

const optionalGuid = (value: string | null | undefined, field: string): string => {
  if (value == null || value === '') return '';
  if (knownGuids.has(value)) return value;
  if (!isGuid(value)) throw new TypeError(`call log ${field} must be a guid`);
  const lower = value.toLowerCase();
  if (lower === value) {
    if (knownGuids.size >= KNOWN_GUIDS_MAX) knownGuids.clear();
    knownGuids.add(value);
  }
  return lower;
};

const count = (value: number | undefined, field: string): number => {
  if (value === undefined) return 0;
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`call log ${field} must be a non-negative number`);
  return Math.min(Math.round(value), UINT32_MAX);
};

const hexId = (value: string | undefined, pattern: RegExp, bytes: number, field: string): string => {
  if (value === undefined || value === '') return randomHex(bytes);
  const lower = value.toLowerCase();
  if (!pattern.test(lower)) throw new TypeError(`call log ${field} must be ${bytes * 2} hex characters`);
  return lower;
};

export interface EncodedCallLog {
  /** The thin row as a JSONCompactEachRow line (without ingested_at): `["org","guid",...]\n`. */
  thin: string;
  /** The detail row as a JSONCompactEachRow line, or null when the call carried no detail. */
  detail: string | null;
}

/**
 * Validates one input row, redacts its headers and encodes it for a
 * JSONCompactEachRow insert. Throws TypeError on a malformed row (a producer bug).
 */
export function encodeCallLog(row: CallLogInput, extraSensitiveHeaders: readonly string[] = []): EncodedCallLog {
  const org = optionalGuid(row.organizationGuid, 'organizationGuid');
  if (!org) throw new TypeError('call log organizationGuid must be a guid');
  const createdMs = Math.floor(row.createdAt instanceof Date ? row.createdAt.getTime() : row.createdAt);
  // DateTime64(3) holds 1900-2299; outside that ClickHouse would refuse the whole batch.
  if (!Number.isFinite(createdMs) || createdMs < 0 || createdMs >= MAX_CREATED_MS)
    throw new TypeError('call log createdAt must be a date between 1970 and 2299');
  if (!(LOG_TYPES as readonly string[]).includes(row.type)) throw new TypeError(`call log type must be one of ${LOG_TYPES.join(', ')}`);
  if (row.status !== 'ok' && row.status !== 'error') throw new TypeError("call log status must be 'ok' or 'error'");
  const guid = row.guid === undefined ? randomGuidV7() : optionalGuid(row.guid, 'guid');
  if (!guid) throw new TypeError('call log guid must be a guid');
  const createdAt = chEpochMs(createdMs);
  // Guids, hex ids, enums, numbers and the time were validated above and hold no
  // character JSON escapes: they are quoted as they are. Only free text goes through
  // JSON.stringify (a whole-array stringify was the writer's largest cost per row).
  const thin =
    `["${org}","${guid}","${createdAt}","${row.type}",${JSON.stringify(String(row.method ?? '').slice(0, 200))},` +
    `${JSON.stringify(String(row.toolName ?? '').slice(0, 500))},"${row.status}",${JSON.stringify(truncateUtf8(String(row.errorMessage ?? ''), MAX_ERROR_MESSAGE).text)},` +
    `${count(row.durationMs, 'durationMs')},${count(row.requestBytes, 'requestBytes')},${count(row.responseBytes, 'responseBytes')},` +
    `"${optionalGuid(row.gatewayConnectionGuid, 'gatewayConnectionGuid')}","${optionalGuid(row.userGuid, 'userGuid')}",` +
    `"${optionalGuid(row.outboundGatewayGuid, 'outboundGatewayGuid')}","${optionalGuid(row.inboundServerGuid, 'inboundServerGuid')}",` +
    `"${optionalGuid(row.hostGuid, 'hostGuid')}","${optionalGuid(row.serverContainerGuid, 'serverContainerGuid')}","${optionalGuid(row.teamGuid, 'teamGuid')}",` +
    `"${hexId(row.traceId, HEX32, 16, 'traceId')}","${hexId(row.spanId, HEX16, 8, 'spanId')}",${JSON.stringify(String(row.sessionId ?? '').slice(0, 200))}]\n`;
  const hasDetail = row.requestBody != null || row.responseBody != null || row.requestHeaders != null || row.responseHeaders != null;
  let detail: string | null = null;
  if (hasDetail) {
    const sensitive = [...extraSensitiveHeaders, ...(row.sensitiveHeaderNames ?? [])];
    detail = `${JSON.stringify([
      org,
      guid,
      createdAt,
      truncateUtf8(String(row.requestBody ?? ''), STORED_DETAIL_LIMIT).text,
      truncateUtf8(String(row.responseBody ?? ''), STORED_DETAIL_LIMIT).text,
      row.requestHeaders ? JSON.stringify(redactHeaders(row.requestHeaders, sensitive)) : '',
      row.responseHeaders ? JSON.stringify(redactHeaders(row.responseHeaders, sensitive)) : '',
    ])}\n`;
  }
  return { thin, detail };
}
