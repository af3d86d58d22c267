import { createHash } from 'node:crypto';
import { JsonLogsSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { epochMs, type CallLogRow } from '../../src/forwarder/call-log-row.js';
import { GUID_ATTRIBUTES, SCOPE_NAME, SCOPE_VERSION, SERVICE_NAME } from '../../src/forwarder/record-sql.js';

/**
 * The forwarder's records as the specification describes them, written in plain JS
 * from rows read back from ClickHouse and serialised by the OpenTelemetry exporters'
 * own serializers (@opentelemetry/otlp-transformer) or JSON.stringify (HEC): the
 * reference test/forwarder-encoding.test.ts holds the records ClickHouse writes
 * (src/forwarder/record-sql.ts) to. A second, independent statement of the mapping,
 * on purpose.
 */
type ReadableLogRecord = Parameters<typeof JsonLogsSerializer.serializeRequest>[0][number];
type ReadableSpan = Parameters<typeof JsonTraceSerializer.serializeRequest>[0][number];
type AttributeValue = string | number;

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
const present = (value: string | undefined): string | undefined => (value === undefined || value === '' || value === ZERO_UUID ? undefined : value);
const integer = (value: string | undefined): number => Math.trunc(Number(value)) || 0;

export function callAttributes(row: CallLogRow): Record<string, AttributeValue> {
  const attrs: Record<string, AttributeValue> = { 'log.record.uid': row.guid };
  const method = present(row.method);
  attrs['mcp_gateway.call.type'] = row.type;
  if (method) attrs['mcp.method.name'] = method;
  if (method === 'tools/call') attrs['gen_ai.operation.name'] = 'execute_tool';
  const tool = present(row.tool_name);
  if (tool) attrs['gen_ai.tool.name'] = tool;
  attrs['mcp_gateway.call.status'] = row.status;
  const error = present(row.error_message);
  if (error) attrs['mcp_gateway.error.message'] = error;
  const errorType = present(row.error_type);
  if (errorType) attrs['error.type'] = errorType;
  if (errorType && /^-?\d+$/.test(errorType)) attrs['rpc.response.status_code'] = errorType;
  attrs['mcp_gateway.call.duration_ms'] = integer(row.duration_ms);
  attrs['mcp_gateway.request.bytes'] = integer(row.request_bytes);
  attrs['mcp_gateway.response.bytes'] = integer(row.response_bytes);
  for (const [column, key] of GUID_ATTRIBUTES) {
    const value = present(row[column as keyof CallLogRow]);
    if (value) attrs[key] = value;
  }
  const session = present(row.session_id);
  if (session) attrs['mcp.session.id'] = session;
  const protocol = present(row.protocol_version);
  if (protocol) attrs['mcp.protocol.version'] = protocol;
  return attrs;
}

export function spanName(row: CallLogRow): string {
  const method = present(row.method) ?? row.type;
  const tool = present(row.tool_name);
  return method && tool ? `${method} ${tool}` : method || (tool ?? '');
}

export function logBody(row: CallLogRow): string {
  const what = spanName(row);
  const took = `${integer(row.duration_ms)} ms`;
  if (row.status === 'error') return `${what} failed after ${took}${present(row.error_message) ? `: ${row.error_message}` : ''}`;
  return `${what} ok in ${took}`;
}

const isHexId = (value: string | undefined, length: number): value is string =>
  !!value && value.length === length && /^[0-9a-f]+$/.test(value) && !/^0+$/.test(value);

/** The row's ids when valid, otherwise derived from the row guid (SHA-256). */
export function callSpanIds(row: CallLogRow): { traceId: string; spanId: string } {
  const traceId = present(row.trace_id)?.toLowerCase();
  const spanId = present(row.span_id)?.toLowerCase();
  const digest = createHash('sha256').update(row.guid).digest('hex');
  return { traceId: isHexId(traceId, 32) ? traceId : digest.slice(0, 32), spanId: isHexId(spanId, 16) ? spanId : digest.slice(32, 48) };
}

/** A log record's trace context: only when the row carries valid ids. */
function logSpanContext(row: CallLogRow): { traceId: string; spanId: string; traceFlags: number } | undefined {
  const traceId = present(row.trace_id)?.toLowerCase();
  const spanId = present(row.span_id)?.toLowerCase();
  return isHexId(traceId, 32) && isHexId(spanId, 16) ? { traceId, spanId, traceFlags: 1 } : undefined;
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms - Math.floor(ms / 1000) * 1000) * 1_000_000];
const SCOPE = { name: SCOPE_NAME, version: SCOPE_VERSION };
const resources = new Map<string, ReturnType<typeof resourceFromAttributes>>();
/** One resource object per workspace: the serializer groups records by resource identity. */
const resourceOf = (org: string) => {
  if (!resources.has(org)) resources.set(org, resourceFromAttributes({ 'service.name': SERVICE_NAME, 'mcp_gateway.organization.guid': org }));
  return resources.get(org)!;
};

function logRecord(row: CallLogRow): ReadableLogRecord {
  const spanContext = logSpanContext(row);
  return {
    hrTime: hrTime(epochMs(row.created_at)),
    hrTimeObserved: hrTime(epochMs(row.ingested_at)),
    ...(spanContext ? { spanContext } : {}),
    severityNumber: row.status === 'error' ? 17 : 9, // API SeverityNumber ERROR / INFO
    severityText: row.status === 'error' ? 'ERROR' : 'INFO',
    body: logBody(row),
    resource: resourceOf(row.organization_guid),
    instrumentationScope: SCOPE,
    attributes: callAttributes(row),
    droppedAttributesCount: 0,
  } as ReadableLogRecord;
}

function span(row: CallLogRow): ReadableSpan {
  const { traceId, spanId } = callSpanIds(row);
  const parentSpanId = present(row.parent_span_id)?.toLowerCase();
  // The host's span, only under the host's own trace (the row's ids valid).
  const parented = logSpanContext(row) !== undefined && isHexId(parentSpanId, 16);
  const startMs = epochMs(row.created_at);
  const durationMs = Math.max(0, integer(row.duration_ms));
  const isError = row.status === 'error';
  return {
    name: spanName(row),
    kind: 1, // API SpanKind.SERVER; the serializer writes OTLP's 2
    spanContext: () => ({ traceId, spanId, traceFlags: 1 }),
    ...(parented ? { parentSpanContext: { traceId, spanId: parentSpanId, traceFlags: 1, isRemote: true } } : {}),
    startTime: hrTime(startMs),
    endTime: hrTime(startMs + durationMs),
    duration: hrTime(durationMs),
    ended: true,
    status: isError ? { code: 2, message: present(row.error_message) ?? 'error' } : { code: 1 },
    attributes: callAttributes(row),
    links: [],
    events: [],
    resource: resourceOf(row.organization_guid),
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  } as unknown as ReadableSpan;
}

/** HEC `time`: epoch seconds with milliseconds as a plain decimal. */
export function hecTime(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return `${seconds}.${String(ms - seconds * 1000).padStart(3, '0')}`;
}

const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes!).toString('utf8');
export const referenceLogs = (rows: CallLogRow[]): string => text(JsonLogsSerializer.serializeRequest(rows.map(logRecord)));
export const referenceTraces = (rows: CallLogRow[]): string => text(JsonTraceSerializer.serializeRequest(rows.map(span)));
export const referenceHec = (rows: CallLogRow[]): string =>
  rows
    .map((row) => {
      const linked = logSpanContext(row);
      const fields = {
        ...Object.fromEntries(Object.entries(callAttributes(row)).map(([k, v]) => [k, String(v)])),
        // Splunk's names for the trace context, when the row has valid ids (as the OTLP log record).
        ...(linked ? { trace_id: linked.traceId, span_id: linked.spanId } : {}),
      };
      const rest = JSON.stringify({ host: SERVICE_NAME, source: SERVICE_NAME, sourcetype: 'mcp:call', event: logBody(row), fields });
      return `{"time":${hecTime(epochMs(row.created_at))},${rest.slice(1)}`;
    })
    .join('\n');
