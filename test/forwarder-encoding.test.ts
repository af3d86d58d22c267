import { JsonLogsSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { describe, expect, it } from 'vitest';
import { SERVICE_NAME, callAttributes, logBody, spanName } from '../src/forwarder/attributes.js';
import { epochMs, integer, present, type CallLogRow } from '../src/forwarder/call-log-row.js';
import { encodeHecEvents, hecTime } from '../src/forwarder/encode-hec.js';
import { callSpanIds, encodeOtlpLogs, encodeOtlpTraces, logSpanContext } from '../src/forwarder/encode-otlp.js';
import { HecReceiver } from './helpers/hec-receiver.js';
import { OtlpReceiver } from './helpers/otlp-receiver.js';

/**
 * The forwarder writes its OTLP JSON and HEC bodies as text for speed. These tests
 * hold that fast path to the reference: the OpenTelemetry exporters' own serializers
 * (@opentelemetry/otlp-transformer) fed ReadableLogRecord/ReadableSpan objects built
 * from the same rows, byte for byte, and JSON.stringify of the HEC event object. The
 * strict receivers must accept the bodies too.
 */
type ReadableLogRecord = Parameters<typeof JsonLogsSerializer.serializeRequest>[0][number];
type ReadableSpan = Parameters<typeof JsonTraceSerializer.serializeRequest>[0][number];
const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
const SCOPE = { name: `${SERVICE_NAME}/forwarder`, version: '1' };
const resources = new Map<string, ReturnType<typeof resourceFromAttributes>>();
const resourceOf = (org: string) => {
  if (!resources.has(org)) resources.set(org, resourceFromAttributes({ 'service.name': SERVICE_NAME, 'mcp_gateway.organization.guid': org }));
  return resources.get(org)!;
};

function referenceLogRecord(row: CallLogRow): ReadableLogRecord {
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

function referenceSpan(row: CallLogRow): ReadableSpan {
  const { traceId, spanId } = callSpanIds(row);
  const startMs = epochMs(row.created_at);
  const durationMs = Math.max(0, integer(row.duration_ms));
  const isError = row.status === 'error';
  return {
    name: spanName(row),
    kind: 1, // API SpanKind.SERVER; the serializer writes OTLP's 2
    spanContext: () => ({ traceId, spanId, traceFlags: 1 }),
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

const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes!).toString('utf8');
const referenceLogs = (rows: CallLogRow[]) => text(JsonLogsSerializer.serializeRequest(rows.map(referenceLogRecord)));
const referenceTraces = (rows: CallLogRow[]) => text(JsonTraceSerializer.serializeRequest(rows.map(referenceSpan)));
const referenceHec = (rows: CallLogRow[]) =>
  rows
    .map((row) => {
      const fields = Object.fromEntries(Object.entries(callAttributes(row)).map(([k, v]) => [k, String(v)]));
      const rest = JSON.stringify({ host: SERVICE_NAME, source: SERVICE_NAME, sourcetype: 'mcp:call', event: logBody(row), fields });
      return `{"time":${hecTime(epochMs(row.created_at))},${rest.slice(1)}`;
    })
    .join('\n');

const ZERO = '00000000-0000-0000-0000-000000000000';
const base: CallLogRow = {
  organization_guid: 'a8c3a7de-5a3e-4d0c-9f0e-0f4b7c1d2e3f',
  guid: '0b6f7c1e-1111-4222-8333-444455556666',
  created_at: '2026-11-21 10:00:00.123',
  ingested_at: '2026-11-21 10:00:01.456',
  type: 'tool_call',
  method: 'tools/call',
  tool_name: 'search_docs',
  status: 'ok',
  error_message: '',
  duration_ms: '42',
  request_bytes: '120',
  response_bytes: '2048',
  gateway_connection_guid: 'c1c1c1c1-0000-4000-8000-000000000001',
  user_guid: 'c1c1c1c1-0000-4000-8000-000000000002',
  outbound_gateway_guid: 'c1c1c1c1-0000-4000-8000-000000000003',
  inbound_server_guid: 'c1c1c1c1-0000-4000-8000-000000000004',
  host_guid: '',
  server_container_guid: ZERO,
  team_guid: 'c1c1c1c1-0000-4000-8000-000000000005',
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  span_id: '00f067aa0ba902b7',
  session_id: 'sess-1',
};

/** Rows that exercise every branch: errors, absent and invalid ids, odd text, two workspaces interleaved, epoch edges. */
const rows: CallLogRow[] = [
  base,
  { ...base, guid: '0b6f7c1e-1111-4222-8333-444455556667', status: 'error', error_message: 'upstream said "no"\n\ttab \\ back \u0001 ctl', duration_ms: '0' },
  { ...base, guid: '0b6f7c1e-1111-4222-8333-444455556668', trace_id: '', span_id: '', method: '', tool_name: '', type: 'initialize' },
  { ...base, guid: '0b6f7c1e-1111-4222-8333-444455556669', trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736', span_id: '00F067AA0BA902B7', method: 'resources/read' },
  { ...base, guid: '0b6f7c1e-1111-4222-8333-44445555666a', trace_id: '0'.repeat(32), span_id: 'not-hex-at-all!!', status: 'error', error_message: '', method: 'prompts/get' },
  { ...base, organization_guid: 'b9d4b8ef-6b4f-4e1d-8a1f-1a5c8d2e3f40', guid: '0b6f7c1e-1111-4222-8333-44445555666b', tool_name: 'ünïcødé 🚀 \u2028 name', session_id: '' },
  { ...base, guid: '0b6f7c1e-1111-4222-8333-44445555666c', created_at: '1970-01-01 00:00:00.000', ingested_at: '1970-01-01 00:00:00.007', duration_ms: '4294967295', request_bytes: '', response_bytes: 'x' },
  { ...base, guid: '0b6f7c1e-1111-4222-8333-44445555666d', user_guid: ZERO, team_guid: '', gateway_connection_guid: '', status: 'error', error_message: 'x'.repeat(500) },
];

describe('forwarder encoding', () => {
  it('writes OTLP logs byte for byte as the exporters\' JsonLogsSerializer', () => {
    expect(encodeOtlpLogs(rows)).toEqual(Buffer.from(referenceLogs(rows)));
    expect(encodeOtlpLogs([rows[1]!])).toEqual(Buffer.from(referenceLogs([rows[1]!])));
    // A record far larger than the body's first buffer (which then grows), multi-byte text included.
    const large = { ...rows[1]!, error_message: `${'é'.repeat(3000)} "${'🚀'.repeat(500)}"` };
    expect(encodeOtlpLogs([large])).toEqual(Buffer.from(referenceLogs([large])));
    expect(encodeHecEvents([large])).toEqual(Buffer.from(referenceHec([large])));
  });

  it('writes a batch far larger than one flush of the body writer byte for byte, every signal', () => {
    // The writer joins a few records' text before encoding it: a batch crosses that
    // boundary many times, multi-byte text included, and grows the body's buffer.
    const many = Array.from({ length: 300 }, (_, i) => ({ ...rows[i % rows.length]!, tool_name: i % 7 === 0 ? `outil-é-${i}-🚀` : `tool_${i}` }));
    expect(encodeOtlpLogs(many)).toEqual(Buffer.from(referenceLogs(many)));
    expect(encodeOtlpTraces(many)).toEqual(Buffer.from(referenceTraces(many)));
    expect(encodeHecEvents(many)).toEqual(Buffer.from(referenceHec(many)));
  });

  it('writes OTLP traces byte for byte as the exporters\' JsonTraceSerializer', () => {
    expect(encodeOtlpTraces(rows)).toEqual(Buffer.from(referenceTraces(rows)));
    expect(encodeOtlpTraces([rows[2]!])).toEqual(Buffer.from(referenceTraces([rows[2]!])));
  });

  it('writes HEC events exactly as JSON.stringify of the event object, time as a plain decimal', () => {
    expect(encodeHecEvents(rows)).toEqual(Buffer.from(referenceHec(rows)));
    expect(encodeHecEvents([rows[6]!]).toString()).toMatch(/^\{"time":0\.000,/);
  });

  it('groups records per workspace, in first-seen order, with the workspace on the resource', () => {
    const doc = JSON.parse(encodeOtlpLogs([rows[0]!, rows[5]!, rows[1]!]).toString()) as { resourceLogs: { resource: { attributes: { key: string; value: { stringValue: string } }[] }; scopeLogs: { logRecords: unknown[] }[] }[] };
    expect(doc.resourceLogs.map((r) => r.resource.attributes[1]!.value.stringValue)).toEqual([base.organization_guid, rows[5]!.organization_guid]);
    expect(doc.resourceLogs.map((r) => r.scopeLogs[0]!.logRecords.length)).toEqual([2, 1]);
  });

  it('produces bodies the strict receivers accept', () => {
    const otlp = new OtlpReceiver() as unknown as { validate(r: unknown): unknown };
    const hec = new HecReceiver('tok') as unknown as { validate(r: unknown): unknown };
    const json = { 'content-type': 'application/json' };
    // The receivers refuse all-zero and malformed span ids: spans are derived from the guid then.
    expect(otlp.validate({ path: '/', headers: json, body: encodeOtlpLogs(rows).toString() })).toBeNull();
    expect(otlp.validate({ path: '/', headers: json, body: encodeOtlpTraces(rows).toString() })).toBeNull();
    expect(hec.validate({ path: '/', headers: { ...json, authorization: 'Splunk tok' }, body: encodeHecEvents(rows).toString() })).toBeNull();
  });

  it('the strict receivers still refuse what breaks the encoding', () => {
    const otlp = new OtlpReceiver() as unknown as { validate(r: unknown): { reason: string } | null };
    const json = { 'content-type': 'application/json' };
    const good = encodeOtlpLogs([base]).toString();
    expect(otlp.validate({ path: '/', headers: json, body: good.replace(/"timeUnixNano":"(\d+)"/, '"timeUnixNano":$1') })?.reason).toMatch(/resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords\[0\]\.timeUnixNano/);
    expect(otlp.validate({ path: '/', headers: json, body: good.replace('"intValue":42', '"intValue":"4x2"') })?.reason).toMatch(/attributes\[mcp_gateway\.call\.duration_ms\]\.intValue/);
    expect(otlp.validate({ path: '/', headers: json, body: good.replace(base.trace_id, base.trace_id.toUpperCase()) })?.reason).toMatch(/traceId/);
    expect(otlp.validate({ path: '/', headers: json, body: good.replace('"attributes":[{"key":"log.record.uid"', '"attributes":[{"key":"log.record.uid","value":{"stringValue":"x"}},{"key":"log.record.uid"') })?.reason).toMatch(/logRecords\[0\]\.attributes: duplicate attribute log\.record\.uid/);
    expect(otlp.validate({ path: '/', headers: json, body: good.replace('"intValue":42', '"intValue":42,"stringValue":"42"') })?.reason).toMatch(/attributes\[mcp_gateway\.call\.duration_ms\]: AnyValue must have exactly one member/);
    expect(otlp.validate({ path: '/', headers: json, body: good.replace('"attributes":[', '"attributes":[{"key":"","value":{"stringValue":"x"}},') })?.reason).toMatch(/resource\.attributes\[0\]: KeyValue needs a key/);
    const span = encodeOtlpTraces([base]).toString();
    expect(otlp.validate({ path: '/', headers: json, body: span.replace('"kind":2', '"kind":"SPAN_KIND_SERVER"') })?.reason).toMatch(/spans\[0\]\.kind/);
    expect(otlp.validate({ path: '/', headers: json, body: span.replace(/"endTimeUnixNano":"\d+"/, '"endTimeUnixNano":"1"') })?.reason).toMatch(/end before start/);
    const hec = new HecReceiver('tok') as unknown as { validate(r: unknown): { reason: string } | null };
    const auth = { ...json, authorization: 'Splunk tok' };
    const event = encodeHecEvents([base]).toString();
    expect(hec.validate({ path: '/', headers: auth, body: event.replace(/"time":[\d.]+/, '"time":1.7e9') })?.reason).toMatch(/time/);
    expect(hec.validate({ path: '/', headers: auth, body: event.replace('"fields":{', '"fields":{"nested":{"a":"b"},') })?.reason).toMatch(/nested/);
    expect(hec.validate({ path: '/', headers: auth, body: `[${event}]` })?.reason).toMatch(/between events/);
    expect(hec.validate({ path: '/', headers: auth, body: `${event} "x" ${event}` })?.reason).toMatch(/between events/);
    expect(hec.validate({ path: '/', headers: auth, body: event.slice(0, -1) })?.reason).toMatch(/truncated/);
  });
});
