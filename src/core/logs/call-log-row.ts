import type { InsertFormat } from '../../stores/clickhouse.js';
import { isGuid } from '../ids.js';
import { randomGuidV7, randomHex } from './random-hex.js';
import { redactHeaders } from '../redaction.js';
import { CALL_LOG_SCHEMA, CALL_STATUSES, DETAIL_COLUMNS, LOG_TYPES, THIN_INSERT_COLUMNS, type CallLogFields, type ColumnSpec } from './call-log-schema.js';

// The producers' names for what the schema declares (seed-logs, the gateway, benches and tests import them from here).
export { DETAIL_INSERT_COLUMNS, LOG_TYPES, STORED_DETAIL_LIMIT, THIN_INSERT_COLUMNS, type LogType } from './call-log-schema.js';

/**
 * What a producer (the gateway, seed-logs) hands the writer for one MCP call: a
 * field for every column of call_logs and call_log_details (call-log-schema.ts)
 * except ingested_at, which ClickHouse stamps when the batch is inserted. Absent
 * guids and text are stored as '' and read back as null; a row guid, trace id
 * (32 hex) or span id (16 hex) the producer leaves out is drawn at random.
 */
export interface CallLogInput extends CallLogFields {
  /** Header names known to carry secrets for this call (e.g. the identity's header names); their values are redacted. */
  sensitiveHeaderNames?: string[];
}

const UINT32_MAX = 4_294_967_295;
const MAX_CREATED_MS = Date.UTC(2299, 11, 31);

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

/** Text at most this long is remembered by `remembered`; longer text is worked out every time. */
const REMEMBERED_CHARS = 256;

/**
 * `compute` remembered (a Map emptied when it holds `limit` values) for the short values
 * a workspace repeats on most rows: guids, methods, tool names, session ids, error
 * messages. A map lookup costs less than a guid's regular expression or a JSON.stringify
 * and its check for lone surrogates (docs/call-logs.md, "Session 38"); what `compute`
 * throws is not remembered.
 */
function remembered(compute: (text: string) => string, limit: number): (text: string) => string {
  const known = new Map<string, string>();
  return (text) => {
    if (text.length > REMEMBERED_CHARS) return compute(text);
    let result = known.get(text);
    if (result === undefined) {
      result = compute(text);
      if (known.size >= limit) known.clear();
      known.set(text, result);
    }
    return result;
  };
}

/** A guid lowercased, or '' when the value is none; a workspace has few distinct ones. */
const lowercaseGuid = remembered((value) => (isGuid(value) ? value.toLowerCase() : ''), 50_000);

const optionalGuid = (value: string | null | undefined, field: string): string => {
  if (value == null || value === '') return '';
  const guid = lowercaseGuid(value);
  if (!guid) throw new TypeError(`call log ${field} must be a guid`);
  return guid;
};

const count = (value: number | undefined, field: string): number => {
  if (value === undefined) return 0;
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`call log ${field} must be a non-negative number`);
  return Math.min(Math.round(value), UINT32_MAX);
};

/**
 * A hex id column's check: the id lowercased, or a random one when absent. The last id
 * checked is remembered: consecutive calls of one trace (an agent's turn) carry the
 * same trace id, and the check is a regular expression.
 */
function hexIdColumn(digits: number, field: string): (value: string | undefined) => string {
  const pattern = new RegExp(`^[0-9a-f]{${digits}}$`);
  let lastValue = '';
  let lastId = '';
  return (value) => {
    if (value === undefined || value === '') return randomHex(digits / 2);
    if (value === lastValue) return lastId;
    const lower = value.toLowerCase();
    if (!pattern.test(lower)) throw new TypeError(`call log ${field} must be ${digits} hex characters`);
    lastValue = value;
    lastId = lower;
    return lower;
  };
}

/** How many values a thin text column remembers the JSON of. */
const REMEMBERED_TEXTS = 4096;

/**
 * A JSON string of any text. A lone surrogate becomes U+FFFD first: JSON.stringify writes it as an escape
 * (`\\ud800`) that ClickHouse's JSON reader refuses, and with it the whole insert (a lone high surrogate), or
 * stores as invalid UTF-8 (a lone low one).
 */
const json = (text: string): string => JSON.stringify(text.isWellFormed() ? text : text.toWellFormed());

const refuse = (message: string): never => {
  throw new TypeError(message);
};

/** What the generated row writers call (their only free variable). */
const helpers = {
  optionalGuid,
  count,
  refuse,
  headers: (value: Record<string, string> | null | undefined, sensitive: readonly string[]): string =>
    value ? JSON.stringify(redactHeaders(value, sensitive)) : '',
  json,
  /** Per text column and per hex id column, its writer (valueCode adds them). */
  texts: [] as ((text: string) => string)[],
  hexIds: [] as ((value: string | undefined) => string)[],
};

/** The format encodeCallLog's lines are in. */
export const CALL_LOG_INSERT_FORMAT = 'JSONCompactEachRow' satisfies InsertFormat;

/**
 * The code (in a generated row writer) of one column's value as a JSON array element.
 * Guids, hex ids and enums are validated and hold neither quote nor backslash: they
 * are quoted as they are; free text and headers go through json. Counts are bare
 * numbers.
 */
function valueCode(c: ColumnSpec): string {
  const field = c.field!;
  // Field names and enum values are the declaration's identifiers, never input; checked all the same.
  if (!/^[A-Za-z_]\w*$/.test(field)) throw new Error(`call log column ${c.name}: bad field name`);
  const value = `row.${field}`;
  const name = JSON.stringify(field);
  const oneOf = (allowed: readonly string[], message: string) =>
    `"\${${allowed.map((a) => `${value} === ${JSON.stringify(a)}`).join(' || ')} ? ${value} : h.refuse(${JSON.stringify(`call log ${field} ${message}`)})}"`;
  switch (c.kind) {
    case 'logType':
      return oneOf(LOG_TYPES, `must be one of ${LOG_TYPES.join(', ')}`);
    case 'status':
      return oneOf(CALL_STATUSES, `must be ${CALL_STATUSES.map((s) => `'${s}'`).join(' or ')}`);
    case 'text': {
      const { maxBytes, maxChars } = c;
      const cut = maxBytes !== undefined ? (text: string) => truncateUtf8(text, maxBytes).text : (text: string) => text.slice(0, maxChars);
      const write = (text: string) => json(cut(text));
      // A call's bodies are its own; the thin row's text repeats from row to row.
      const index = helpers.texts.push(c.part === 'thin' ? remembered(write, REMEMBERED_TEXTS) : write) - 1;
      // Most rows leave most text empty (no error, no parent span): written without a call.
      return `\${${value} == null || ${value} === '' ? '""' : h.texts[${index}](String(${value}))}`;
    }
    case 'count':
      return `\${h.count(${value}, ${name})}`;
    case 'guid':
      return `"\${h.optionalGuid(${value}, ${name})}"`;
    case 'hexId': {
      const index = helpers.hexIds.push(hexIdColumn(c.maxChars!, field)) - 1;
      return `"\${h.hexIds[${index}](${value})}"`;
    }
    case 'headers':
      return `\${h.json(h.headers(${value}, sensitive))}`;
    default:
      throw new Error(`call log column ${c.name}: a ${c.kind} column is written by encodeCallLog itself`);
  }
}

type RowWriter = (row: CallLogInput, keys: string, sensitive: readonly string[]) => string;

/**
 * A row's writer, generated once at load from the declaration: one template
 * literal of the key columns (written by encodeCallLog) and every other column's
 * value, in `names` order: the template the writer once spelled out by hand, at
 * the same cost per row. A loop over per-column closures cost about 40 % more
 * (docs/call-logs.md, "What an ingested row costs").
 */
function rowWriter(names: readonly string[]): RowWriter {
  const values = names
    .map((n) => CALL_LOG_SCHEMA.find((c) => c.name === n)!)
    .filter((c) => c.part !== 'key')
    .map((c) => `,${valueCode(c)}`)
    .join('');
  // Code from the column declaration only (never input), built once.
  return new Function('h', `return (row, keys, sensitive) => \`[\${keys}${values}]\\n\`;`)(helpers) as RowWriter;
}

// encodeCallLog writes the key columns both rows start with itself: the workspace, the row guid, the time.
if (
  CALL_LOG_SCHEMA.filter((c) => c.part === 'key')
    .map((c) => c.kind)
    .join() !== 'workspace,rowGuid,time'
)
  throw new Error('call-log-schema.ts: the key columns must be the workspace, the row guid and the time, in this order');
const writeThin = rowWriter(THIN_INSERT_COLUMNS);
const writeDetail = rowWriter(DETAIL_COLUMNS);
/** Whether a row carries detail: any detail field set (generated like the writers). */
// Code from the column declaration only (never input), built once.
const hasDetail = new Function(
  'row',
  `return ${CALL_LOG_SCHEMA.filter((c) => c.part === 'detail')
    .map((c) => `row.${c.field} != null`)
    .join(' || ')};`,
) as (row: CallLogInput) => boolean;
const NO_HEADERS: readonly string[] = [];

export interface EncodedCallLog {
  /** The thin row as a JSON line (without ingested_at): `["org","guid",...]\n`. */
  thin: string;
  /** The detail row as a JSON line, or null when the call carried no detail. */
  detail: string | null;
}

/**
 * Validates one input row, redacts its headers and encodes it for a
 * CALL_LOG_INSERT_FORMAT insert, its values in THIN_INSERT_COLUMNS and
 * DETAIL_INSERT_COLUMNS order. Throws TypeError on a malformed row (a producer bug).
 */
export function encodeCallLog(row: CallLogInput, extraSensitiveHeaders: readonly string[] = []): EncodedCallLog {
  const org = optionalGuid(row.organizationGuid, 'organizationGuid');
  if (!org) throw new TypeError('call log organizationGuid must be a guid');
  const createdMs = Math.floor(row.createdAt instanceof Date ? row.createdAt.getTime() : row.createdAt);
  // DateTime64(3) holds 1900-2299; outside that ClickHouse would refuse the whole batch.
  if (!Number.isFinite(createdMs) || createdMs < 0 || createdMs >= MAX_CREATED_MS)
    throw new TypeError('call log createdAt must be a date between 1970 and 2299');
  const guid = row.guid === undefined ? randomGuidV7() : optionalGuid(row.guid, 'guid');
  if (!guid) throw new TypeError('call log guid must be a guid');
  const keys = `"${org}","${guid}","${chEpochMs(createdMs)}"`;
  const thin = writeThin(row, keys, NO_HEADERS);
  let detail: string | null = null;
  if (hasDetail(row)) {
    detail = writeDetail(row, keys, [...extraSensitiveHeaders, ...(row.sensitiveHeaderNames ?? [])]);
  }
  return { thin, detail };
}

/** How a writer encodes call-log rows, as plain data (a producer on another thread builds the same encoder from it). */
export interface CallLogEncoding {
  /** Header names redacted on every row, beyond the built-in list and the row's own. */
  sensitiveHeaderNames: readonly string[];
}

/** The row encoder of a call-log writer with `encoding`. */
export const callLogRowEncoder =
  (encoding: CallLogEncoding) =>
  (row: CallLogInput): EncodedCallLog =>
    encodeCallLog(row, encoding.sensitiveHeaderNames);
