import { EXPORTED_COLUMNS, type ColumnSpec } from '../core/logs/call-log-schema.js';
import {
  attributeParts,
  col,
  concat,
  hecField,
  hecTime,
  jsonText,
  keyValue,
  lit,
  nanos,
  present,
  SEVERITY,
  sql,
  type Attribute,
  type Part,
} from './json-sql.js';

/**
 * What the forwarder sends for one call-log row, written as ClickHouse SQL: the
 * batch query returns every record as finished JSON text (an OTLP LogRecord, an OTLP
 * Span or a HEC event), so the event loop only copies bytes into the request body.
 * Building a record in ClickHouse costs a fraction of building it in JS, and no JS
 * string or object per row is left for the GC (docs/forwarding.md, "Records built
 * by ClickHouse").
 *
 * This file is the one definition of the mapping: the attributes (each column's own
 * is named in call-log-schema.ts, after the OpenTelemetry semantic conventions for
 * MCP where they exist: mcp.method.name, gen_ai.tool.name, mcp.session.id,
 * mcp.protocol.version; the row's own ids and figures under `mcp_gateway.`; the row
 * guid as `log.record.uid`, so a duplicate delivery is recognisable; derived here:
 * gen_ai.operation.name, rpc.response.status_code), the log body, the span name and ids.
 *
 * The text is what the OpenTelemetry exporters' serializers (and JSON.stringify for
 * HEC) write for the same record, member for member;
 * test/forwarder-encoding.test.ts holds it to them (ClickHouse's own string escapes
 * aside: json-sql.ts, whose pieces every record is written with). The audit records
 * have their own mapping, audit-record-sql.ts.
 */
export type BodyKind = 'otlp_logs' | 'otlp_traces' | 'hec';

export const SERVICE_NAME = 'mcp-gateway-manager';
export const SCOPE_NAME = `${SERVICE_NAME}/forwarder`;
export const SCOPE_VERSION = '1';

// The LowCardinality(String) columns (type, method, tool_name and the guids) are used
// bare: functions of them then run once per distinct value, not once per row.
const METHOD = 'method';
const TOOL = 'tool_name';
const TYPE = 'type';
const IS_ERROR = `status = 'error'`;
const CREATED_MS = 'toUnixTimestamp64Milli(created_at)';
const INGESTED_MS = 'toUnixTimestamp64Milli(ingested_at)';

/** The row's guid columns and their attribute names (the tests' reference reads the same list). */
export const GUID_ATTRIBUTES: [string, string][] = EXPORTED_COLUMNS.filter((c) => c.kind === 'guid').map((c) => [c.name, c.attribute]);

/** Attributes computed from a column, exported right after the column's own. */
const DERIVED_ATTRIBUTES: Record<string, Attribute[]> = {
  method: [{ key: 'gen_ai.operation.name', value: `'execute_tool'`, type: 'string', when: `${METHOD} = 'tools/call'` }],
  // A JSON-RPC error code is also the response's status code (the conventions' rpc.response.status_code).
  error_type: [{ key: 'rpc.response.status_code', value: 'error_type', type: 'string', when: `match(error_type, '^-?[0-9]+$')` }],
};

/**
 * A column's own attribute (call-log-schema.ts): counts as integers, the UUID and
 * the Enum through toString(); text and guid columns only when set, the others always.
 */
function columnAttribute(c: ColumnSpec & { attribute: string }): Attribute {
  if (c.kind === 'count') return { key: c.attribute, value: c.name, type: 'int' };
  const value = c.kind === 'rowGuid' || c.kind === 'status' ? col(c.name) : c.name;
  return { key: c.attribute, value, type: 'string', ...(c.kind === 'text' || c.kind === 'guid' ? { when: present(value) } : {}) };
}

/**
 * The attributes of a call, in the columns' order, shared by OTLP logs, OTLP spans
 * and HEC fields. The first (the row guid, log.record.uid) is always set.
 */
const CALL_ATTRIBUTES: Attribute[] = EXPORTED_COLUMNS.flatMap((c) => [columnAttribute(c), ...(DERIVED_ATTRIBUTES[c.name] ?? [])]);
if (CALL_ATTRIBUTES[0]?.when !== undefined) throw new Error('the first call attribute must always be set');

/** The call's attributes as parts, each written by `item`. */
const callAttributeParts = (item: (a: Attribute) => Part[]): Part[] => attributeParts(CALL_ATTRIBUTES, item);

/** The span name the MCP conventions ask for: "{mcp.method.name} {target}" (the call type when there is no method). */
const SPAN_NAME = (() => {
  const method = `if(${present(METHOD)}, ${METHOD}, ${TYPE})`;
  return `multiIf(${method} != '' AND ${present(TOOL)}, concat(${method}, ' ', ${TOOL}), ${method} != '', ${method}, ${present(TOOL)}, ${TOOL}, '')`;
})();

/** The log body: one readable line per call ("tools/call search ok in 42 ms"; rows are thin: no request or response body). */
const LOG_BODY = `if(${IS_ERROR}, concat(${SPAN_NAME}, ' failed after ', toString(duration_ms), ' ms', if(${present('error_message')}, concat(': ', error_message), '')), concat(${SPAN_NAME}, ' ok in ', toString(duration_ms), ' ms'))`;

/** A valid W3C id of `hexDigits`: that many hex digits (any case), not all zero. */
const validId = (column: string, hexDigits: number): string => `(match(lower(${column}), '^[0-9a-f]{${hexDigits}}$') AND NOT match(${column}, '^0+$'))`;
const VALID_TRACE = validId('trace_id', 32);
const VALID_SPAN = validId('span_id', 16);
/** The host's span is the call's parent only under the host's own trace: the row's valid trace and span ids, and a valid parent. */
const HAS_PARENT = `(${VALID_TRACE} AND ${VALID_SPAN} AND ${validId('parent_span_id', 16)})`;
/** Ids for a row without valid ones of its own, derived from its guid so a re-delivered span keeps them. */
const GUID_DIGEST = `lower(hex(SHA256(${col('guid')})))`;

// OTLP enums as they appear on the wire.
const SPAN_KIND_SERVER = 2;
const STATUS = { ok: 1, error: 2 };
const TRACE_FLAG_SAMPLED = 1;
/** Span flags: the W3C trace flags plus "has is_remote" (0x100), and "is_remote" (0x200) when the parent is the host's span, as the serializer writes them. */
const SPAN_FLAGS = 0x100 | TRACE_FLAG_SAMPLED;
const SPAN_FLAGS_REMOTE_PARENT = SPAN_FLAGS | 0x200;

/** One OTLP LogRecord: time = created_at, observed = ingested_at, severity from the result, the trace context when the row has valid ids. */
const LOG_RECORD = concat([
  lit('{"timeUnixNano":"'),
  nanos(CREATED_MS),
  lit('","observedTimeUnixNano":"'),
  nanos(INGESTED_MS),
  sql(
    `if(${IS_ERROR}, '","severityNumber":${SEVERITY.error},"severityText":"ERROR","body":{"stringValue":', '","severityNumber":${SEVERITY.info},"severityText":"INFO","body":{"stringValue":')`,
  ),
  jsonText(LOG_BODY),
  lit('},"attributes":['),
  ...callAttributeParts(keyValue),
  lit('],"droppedAttributesCount":0'),
  sql(`if(${VALID_TRACE} AND ${VALID_SPAN}, concat(',"flags":${TRACE_FLAG_SAMPLED},"traceId":"', lower(trace_id), '","spanId":"', lower(span_id), '"'), '')`),
  lit('}'),
]);

/** One OTLP Span per call: start at created_at, end after duration_ms, status from the result. */
const SPAN = concat([
  lit('{"traceId":"'),
  sql(`if(${VALID_TRACE}, lower(trace_id), substring(${GUID_DIGEST}, 1, 32))`),
  lit('","spanId":"'),
  sql(`if(${VALID_SPAN}, lower(span_id), substring(${GUID_DIGEST}, 33, 16))`),
  sql(`if(${HAS_PARENT}, concat('","parentSpanId":"', lower(parent_span_id)), '')`),
  lit('","name":'),
  jsonText(SPAN_NAME),
  lit(`,"kind":${SPAN_KIND_SERVER},"startTimeUnixNano":"`),
  nanos(CREATED_MS),
  lit('","endTimeUnixNano":"'),
  nanos(`(${CREATED_MS} + duration_ms)`),
  lit('","attributes":['),
  ...callAttributeParts(keyValue),
  lit('],"droppedAttributesCount":0,"events":[],"droppedEventsCount":0,"status":'),
  sql(
    `if(${IS_ERROR}, concat('{"code":${STATUS.error},"message":', toJSONString(if(${present('error_message')}, error_message, 'error')), '}'), '{"code":${STATUS.ok}}')`,
  ),
  lit(',"links":[],"droppedLinksCount":0,"flags":'),
  sql(`if(${HAS_PARENT}, '${SPAN_FLAGS_REMOTE_PARENT}', '${SPAN_FLAGS}')`),
  lit('}'),
]);

/** One HEC event: `event` the log body, `fields` the attributes as flat strings. */
const HEC_EVENT = concat([
  lit('{"time":'),
  sql(hecTime(CREATED_MS)),
  lit(`,"host":${JSON.stringify(SERVICE_NAME)},"source":${JSON.stringify(SERVICE_NAME)},"sourcetype":"mcp:call","event":`),
  jsonText(LOG_BODY),
  lit(',"fields":{'),
  ...callAttributeParts(hecField),
  // The trace context under the names Splunk links a log event to its trace by.
  sql(`if(${VALID_TRACE} AND ${VALID_SPAN}, concat(',"trace_id":"', lower(trace_id), '","span_id":"', lower(span_id), '"'), '')`),
  lit('}}'),
]);

/** The SQL of one row's record in a body of `kind`. */
export const RECORD_SQL: Record<BodyKind, string> = { otlp_logs: LOG_RECORD, otlp_traces: SPAN, hec: HEC_EVENT };

/** What surrounds the records of one workspace's batch, and what goes between them. */
export interface Envelope {
  head: string;
  separator: string;
  tail: string;
}

/** The request envelope: OTLP wraps the records in one resource (the workspace) and scope; HEC concatenates events, one per line. */
export function envelopeOf(kind: BodyKind, organizationGuid: string): Envelope {
  if (kind === 'hec') return { head: '', separator: '\n', tail: '' };
  const [top, scopes, leaves] = kind === 'otlp_logs' ? ['resourceLogs', 'scopeLogs', 'logRecords'] : ['resourceSpans', 'scopeSpans', 'spans'];
  const resource = `{"attributes":[{"key":"service.name","value":{"stringValue":${JSON.stringify(SERVICE_NAME)}}},{"key":"mcp_gateway.organization.guid","value":{"stringValue":${JSON.stringify(organizationGuid)}}}],"droppedAttributesCount":0}`;
  return {
    head: `{"${top}":[{"resource":${resource},"${scopes}":[{"scope":{"name":${JSON.stringify(SCOPE_NAME)},"version":${JSON.stringify(SCOPE_VERSION)}},"${leaves}":[`,
    separator: ',',
    tail: ']}]}]}',
  };
}
