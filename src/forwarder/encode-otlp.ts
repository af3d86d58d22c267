import { createHash } from 'node:crypto';
import { JsonLogsSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { SERVICE_NAME, callAttributes, logBody, spanName } from './attributes.js';
import { epochMs, integer, present, type CallLogRow } from './call-log-row.js';

/**
 * Call-log rows to OTLP/HTTP JSON request bodies, through the OpenTelemetry
 * exporters' own serializers (@opentelemetry/otlp-transformer), so ids are hex,
 * times are nanosecond strings and enums are the OTLP integers, exactly as the
 * exporters would send them.
 */
type ReadableLogRecord = Parameters<typeof JsonLogsSerializer.serializeRequest>[0][number];
type ReadableSpan = Parameters<typeof JsonTraceSerializer.serializeRequest>[0][number];
type HrTime = [number, number];

const SCOPE = { name: `${SERVICE_NAME}/forwarder`, version: '1' };
// OpenTelemetry API enums (the serializers map them onto OTLP's).
const SEVERITY_INFO = 9;
const SEVERITY_ERROR = 17;
const SPAN_KIND_SERVER = 1; // API SpanKind.SERVER; the serializer writes OTLP's 2. Never add one here.
const STATUS_OK = 1;
const STATUS_ERROR = 2;
const TRACE_FLAG_SAMPLED = 1;

const hrTime = (ms: number): HrTime => [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];

const isHexId = (value: string | undefined, length: number): value is string => !!value && value.length === length && /^[0-9a-f]+$/.test(value) && !/^0+$/.test(value);

/**
 * The trace and span id of a call: the row's own when valid, otherwise derived from
 * the row guid, so a re-delivered span has the same ids.
 */
export function callSpanIds(row: CallLogRow): { traceId: string; spanId: string } {
  const traceId = present(row.trace_id)?.toLowerCase();
  const spanId = present(row.span_id)?.toLowerCase();
  const digest = () => createHash('sha256').update(row.guid).digest('hex');
  return {
    traceId: isHexId(traceId, 32) ? traceId : digest().slice(0, 32),
    spanId: isHexId(spanId, 16) ? spanId : digest().slice(32, 48),
  };
}

/** The row's trace context for a log record, only when the row carries valid ids. */
function logSpanContext(row: CallLogRow) {
  const traceId = present(row.trace_id)?.toLowerCase();
  const spanId = present(row.span_id)?.toLowerCase();
  if (!isHexId(traceId, 32) || !isHexId(spanId, 16)) return undefined;
  return { traceId, spanId, traceFlags: TRACE_FLAG_SAMPLED };
}

const resources = new Map<string, ReturnType<typeof resourceFromAttributes>>();
/** One resource object per workspace: the serializers group records by resource identity. */
function workspaceResource(organizationGuid: string) {
  let resource = resources.get(organizationGuid);
  if (!resource) {
    resource = resourceFromAttributes({ 'service.name': SERVICE_NAME, 'mcp_gateway.organization.guid': organizationGuid });
    if (resources.size > 10_000) resources.clear();
    resources.set(organizationGuid, resource);
  }
  return resource;
}

export function toLogRecord(row: CallLogRow): ReadableLogRecord {
  const spanContext = logSpanContext(row);
  return {
    hrTime: hrTime(epochMs(row.created_at)),
    hrTimeObserved: hrTime(epochMs(row.ingested_at)),
    ...(spanContext ? { spanContext } : {}),
    severityNumber: row.status === 'error' ? SEVERITY_ERROR : SEVERITY_INFO,
    severityText: row.status === 'error' ? 'ERROR' : 'INFO',
    body: logBody(row),
    resource: workspaceResource(row.organization_guid),
    instrumentationScope: SCOPE,
    attributes: callAttributes(row),
    droppedAttributesCount: 0,
  } as ReadableLogRecord;
}

/** One span per call: start at created_at, end after duration_ms, status from the result. */
export function toSpan(row: CallLogRow): ReadableSpan {
  const { traceId, spanId } = callSpanIds(row);
  const startMs = epochMs(row.created_at);
  const durationMs = Math.max(0, integer(row.duration_ms));
  const isError = row.status === 'error';
  return {
    name: spanName(row),
    kind: SPAN_KIND_SERVER,
    spanContext: () => ({ traceId, spanId, traceFlags: TRACE_FLAG_SAMPLED }),
    startTime: hrTime(startMs),
    endTime: hrTime(startMs + durationMs),
    duration: hrTime(durationMs),
    ended: true,
    status: isError ? { code: STATUS_ERROR, message: present(row.error_message) ?? 'error' } : { code: STATUS_OK },
    attributes: callAttributes(row),
    links: [],
    events: [],
    resource: workspaceResource(row.organization_guid),
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  } as unknown as ReadableSpan;
}

/** An ExportLogsServiceRequest as OTLP/HTTP JSON. */
export const encodeOtlpLogs = (rows: CallLogRow[]): Uint8Array => JsonLogsSerializer.serializeRequest(rows.map(toLogRecord))!;

/** An ExportTraceServiceRequest as OTLP/HTTP JSON. */
export const encodeOtlpTraces = (rows: CallLogRow[]): Uint8Array => JsonTraceSerializer.serializeRequest(rows.map(toSpan))!;
