import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epochMs, type CallLogRow } from '../src/forwarder/call-log-row.js';
import { CallLogSource } from '../src/forwarder/call-log-source.js';
import type { EncodedBatch } from '../src/forwarder/encoded-batch.js';
import type { BodyKind } from '../src/forwarder/record-sql.js';
import { startTestApp, type TestApp } from './helpers/harness.js';
import { referenceHec, referenceLogs, referenceTraces } from './helpers/forwarder-reference.js';
import { HecReceiver } from './helpers/hec-receiver.js';
import { OtlpReceiver } from './helpers/otlp-receiver.js';

/**
 * ClickHouse writes the forwarder's records (src/forwarder/record-sql.ts). These tests
 * store rows in the real call_logs table, read them back both ways and hold the
 * bodies to the reference: the OpenTelemetry exporters' own serializers
 * (@opentelemetry/otlp-transformer) and JSON.stringify for HEC, fed from the same
 * rows by an independent statement of the mapping (test/helpers/forwarder-reference.ts).
 * The strict receivers must accept the bodies too.
 */
let t: TestApp;
let source: CallLogSource;

beforeAll(async () => {
  t = await startTestApp();
  await t.runtime.forwarder.stop();
  source = new CallLogSource(t.runtime.services.clickhouse);
});
afterAll(async () => {
  await t?.close();
});

const ZERO = '00000000-0000-0000-0000-000000000000';
type StoredRow = Omit<CallLogRow, 'organization_guid' | 'guid' | 'ingested_at' | 'duration_ms' | 'request_bytes' | 'response_bytes'> & {
  duration_ms: number;
  request_bytes: number;
  response_bytes: number;
};
const base: StoredRow = {
  created_at: '2026-11-21 10:00:00.123',
  type: 'tool_call',
  method: 'tools/call',
  tool_name: 'search_docs',
  status: 'ok',
  error_message: '',
  error_type: '',
  duration_ms: 42,
  request_bytes: 120,
  response_bytes: 2048,
  gateway_connection_guid: 'c1c1c1c1-0000-4000-8000-000000000001',
  user_guid: 'c1c1c1c1-0000-4000-8000-000000000002',
  outbound_gateway_guid: 'c1c1c1c1-0000-4000-8000-000000000003',
  inbound_server_guid: 'c1c1c1c1-0000-4000-8000-000000000004',
  host_guid: '',
  server_container_guid: ZERO,
  team_guid: 'c1c1c1c1-0000-4000-8000-000000000005',
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  span_id: '00f067aa0ba902b7',
  parent_span_id: '',
  session_id: 'sess-1',
  protocol_version: '2025-11-25',
};

/** Rows that exercise every branch: errors, absent and invalid ids, odd text, millisecond edges. */
const rows: Partial<StoredRow>[] = [
  {},
  { status: 'error', error_message: 'upstream said "no"\n\ttab \\ back \u0001 ctl / slash', error_type: '-32000', duration_ms: 0 },
  { trace_id: '', span_id: '', method: '', tool_name: '', type: 'initialize' },
  { trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736', span_id: '00F067AA0BA902B7', method: 'resources/read' },
  { trace_id: '0'.repeat(32), span_id: 'not-hex-at-all!!', status: 'error', error_message: '', error_type: 'tool_error', method: 'prompts/get' },
  { tool_name: 'ünïcødé 🚀 name', session_id: '', protocol_version: '' },
  { created_at: '2026-11-21 10:00:00.007', duration_ms: 4294967295, request_bytes: 0, response_bytes: 4294967295 },
  { created_at: '2026-11-21 10:00:00.000', user_guid: ZERO, team_guid: '', gateway_connection_guid: '', status: 'error', error_message: 'x'.repeat(500) },
  { method: 'ping', type: 'other', status: 'error', error_type: '_OTHER', tool_name: '' }, // The host's span as the parent: valid (any case), invalid, all zero, and under a trace the row does not hold.
  { parent_span_id: 'B7AD6B7169203331', method: 'tools/list' },
  { parent_span_id: 'b7ad6b716920333' },
  { parent_span_id: '0000000000000000' },
  { trace_id: '', parent_span_id: 'b7ad6b7169203331' },
];

/** Stores the rows for a new workspace (ingested one millisecond apart, in this order); returns the workspace guid. */
async function store(list: Partial<StoredRow>[]): Promise<string> {
  const org = randomUUID();
  const ingestedFrom = Date.parse('2026-11-21T10:00:01.000Z');
  await t.runtime.services.clickhouse.client.insert({
    table: 'call_logs',
    values: list.map((row, i) => ({
      ...base,
      ...row,
      organization_guid: org,
      guid: randomUUID(),
      ingested_at: new Date(ingestedFrom + i).toISOString().replace('T', ' ').replace('Z', ''),
    })),
    format: 'JSONEachRow',
    clickhouse_settings: { insert_deduplicate: 0, date_time_input_format: 'best_effort' },
  });
  return org;
}

const START = { at: new Date(0), guid: '' };

/** The batch ClickHouse writes, and the same rows read back as text for the reference. */
async function readBoth(org: string, kind: BodyKind, limit = 1000): Promise<{ batch: EncodedBatch; body: string; stored: CallLogRow[] }> {
  const horizon = await source.deliveryHorizon(0);
  const batch = await source.nextEncodedBatch(org, START, limit, horizon, kind);
  return { batch, body: Buffer.concat(batch.body).toString('utf8'), stored: await source.nextBatch(org, START, limit, horizon) };
}

const REFERENCE: Record<BodyKind, (rows: CallLogRow[]) => string> = { otlp_logs: referenceLogs, otlp_traces: referenceTraces, hec: referenceHec };
const KINDS: BodyKind[] = ['otlp_logs', 'otlp_traces', 'hec'];

/**
 * ClickHouse's JSON escapes that JSON.stringify writes differently but that decode to
 * the same string: U+2028/U+2029 escaped, other control characters in upper-case hex.
 */
const asJsonStringify = (body: string): string =>
  body
    .replace(/\\u2028/g, '\u2028')
    .replace(/\\u2029/g, '\u2029')
    .replace(/\\u00([01][0-9A-F])/g, (_m, hex: string) => `\\u00${hex.toLowerCase()}`);

describe('forwarder records written by ClickHouse', () => {
  it.each(KINDS)('%s: byte for byte what the reference serializer writes for the same rows', async (kind) => {
    const org = await store(rows);
    const { body, stored } = await readBoth(org, kind);
    expect(stored).toHaveLength(rows.length);
    expect(body).toBe(REFERENCE[kind](stored));
    // One row on its own, and a record far larger than the rest (multi-byte text included).
    const single = await readBoth(await store([rows[1]!]), kind);
    expect(single.body).toBe(REFERENCE[kind](single.stored));
    const large = await readBoth(await store([{ ...rows[1], error_message: `${'é'.repeat(3000)} "${'🚀'.repeat(500)}"` }]), kind);
    expect(large.body).toBe(REFERENCE[kind](large.stored));
  });

  it('a batch of hundreds of varied rows, every signal byte for byte', async () => {
    const many = Array.from({ length: 300 }, (_, i) => ({ ...rows[i % rows.length], tool_name: i % 7 === 0 ? `outil-é-${i}-🚀` : `tool_${i}` }));
    const org = await store(many);
    for (const kind of KINDS) {
      const { body, stored } = await readBoth(org, kind);
      expect(body).toBe(REFERENCE[kind](stored));
    }
  });

  it('escapes any text to the same JSON strings as JSON.stringify: every control character, U+2028/U+2029, quotes, backslashes', async () => {
    const controls = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('');
    const odd = `${controls}\x7f \u2028 \u2029 "q" \\ / é 🚀 <>&`;
    const org = await store([{ tool_name: odd, error_message: odd, session_id: odd, status: 'error' }]);
    for (const kind of KINDS) {
      const { body, stored } = await readBoth(org, kind);
      expect(stored[0]!.tool_name).toBe(odd);
      const reference = REFERENCE[kind](stored);
      expect(body).not.toBe(reference); // ClickHouse's own escapes
      expect(asJsonStringify(body)).toBe(reference); // and only those
      expect(JSON.parse(body)).toEqual(JSON.parse(reference));
    }
  });

  it('HEC time is epoch seconds with three decimals, never scientific notation', async () => {
    const { body } = await readBoth(await store([rows[6]!, rows[7]!]), 'hec');
    const times = body.split('\n').map((event) => /^\{"time":([^,]+),/.exec(event)![1]);
    expect(times).toEqual([
      `${Date.parse('2026-11-21T10:00:00.007Z') / 1000}`.replace(/\.(\d+)$/, (_m, d: string) => `.${d.padEnd(3, '0')}`),
      `${Date.parse('2026-11-21T10:00:00.000Z') / 1000}.000`,
    ]);
  });

  it('one workspace per batch, named on the resource; the batch knows its size, first ingest time and end', async () => {
    const org = await store(rows.slice(0, 3));
    const { batch, body, stored } = await readBoth(org, 'otlp_logs');
    const doc = JSON.parse(body) as {
      resourceLogs: { resource: { attributes: { key: string; value: { stringValue: string } }[] }; scopeLogs: { logRecords: unknown[] }[] }[];
    };
    expect(doc.resourceLogs).toHaveLength(1);
    expect(doc.resourceLogs[0]!.resource.attributes[1]).toEqual({ key: 'mcp_gateway.organization.guid', value: { stringValue: org } });
    expect(doc.resourceLogs[0]!.scopeLogs[0]!.logRecords).toHaveLength(3);
    expect(batch.count).toBe(3);
    expect(batch.firstIngestedMs).toBe(epochMs(stored[0]!.ingested_at));
    expect(batch.end).toEqual({ at: new Date(epochMs(stored[2]!.ingested_at)), guid: stored[2]!.guid });
    // From its end on there is nothing: an empty batch keeps the checkpoint.
    const after = await source.nextEncodedBatch(org, batch.end, 10, await source.deliveryHorizon(0), 'hec');
    expect(after).toEqual({ count: 0, firstIngestedMs: 0, end: batch.end, body: [] });
    // A limit cuts the batch in checkpoint order.
    const two = await source.nextEncodedBatch(org, START, 2, await source.deliveryHorizon(0), 'hec');
    expect(two.count).toBe(2);
    expect(two.end).toEqual({ at: new Date(epochMs(stored[1]!.ingested_at)), guid: stored[1]!.guid });
  });

  it('produces bodies the strict receivers accept', async () => {
    const org = await store(rows);
    const otlp = new OtlpReceiver() as unknown as { validate(r: unknown): unknown };
    const hec = new HecReceiver('tok') as unknown as { validate(r: unknown): unknown };
    const json = { 'content-type': 'application/json' };
    // The receivers refuse all-zero and malformed span ids: spans are derived from the guid then.
    expect(otlp.validate({ path: '/', headers: json, body: (await readBoth(org, 'otlp_logs')).body })).toBeNull();
    expect(otlp.validate({ path: '/', headers: json, body: (await readBoth(org, 'otlp_traces')).body })).toBeNull();
    expect(hec.validate({ path: '/', headers: { ...json, authorization: 'Splunk tok' }, body: (await readBoth(org, 'hec')).body })).toBeNull();
  });

  it('the strict receivers still refuse what breaks the encoding', async () => {
    const org = await store([{}]);
    const otlp = new OtlpReceiver() as unknown as { validate(r: unknown): { reason: string } | null };
    const json = { 'content-type': 'application/json' };
    const good = (await readBoth(org, 'otlp_logs')).body;
    expect(otlp.validate({ path: '/', headers: json, body: good.replace(/"timeUnixNano":"(\d+)"/, '"timeUnixNano":$1') })?.reason).toMatch(
      /resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords\[0\]\.timeUnixNano/,
    );
    expect(otlp.validate({ path: '/', headers: json, body: good.replace('"intValue":42', '"intValue":"4x2"') })?.reason).toMatch(
      /attributes\[mcp_gateway\.call\.duration_ms\]\.intValue/,
    );
    expect(otlp.validate({ path: '/', headers: json, body: good.replace(base.trace_id, base.trace_id.toUpperCase()) })?.reason).toMatch(/traceId/);
    expect(
      otlp.validate({
        path: '/',
        headers: json,
        body: good.replace(
          '"attributes":[{"key":"log.record.uid"',
          '"attributes":[{"key":"log.record.uid","value":{"stringValue":"x"}},{"key":"log.record.uid"',
        ),
      })?.reason,
    ).toMatch(/logRecords\[0\]\.attributes: duplicate attribute log\.record\.uid/);
    expect(otlp.validate({ path: '/', headers: json, body: good.replace('"intValue":42', '"intValue":42,"stringValue":"42"') })?.reason).toMatch(
      /attributes\[mcp_gateway\.call\.duration_ms\]: AnyValue must have exactly one member/,
    );
    expect(
      otlp.validate({ path: '/', headers: json, body: good.replace('"attributes":[', '"attributes":[{"key":"","value":{"stringValue":"x"}},') })?.reason,
    ).toMatch(/resource\.attributes\[0\]: KeyValue needs a key/);
    const span = (await readBoth(org, 'otlp_traces')).body;
    expect(otlp.validate({ path: '/', headers: json, body: span.replace('"kind":2', '"kind":"SPAN_KIND_SERVER"') })?.reason).toMatch(/spans\[0\]\.kind/);
    expect(otlp.validate({ path: '/', headers: json, body: span.replace(/"endTimeUnixNano":"\d+"/, '"endTimeUnixNano":"1"') })?.reason).toMatch(
      /end before start/,
    );
    const hec = new HecReceiver('tok') as unknown as { validate(r: unknown): { reason: string } | null };
    const auth = { ...json, authorization: 'Splunk tok' };
    const event = (await readBoth(org, 'hec')).body;
    expect(hec.validate({ path: '/', headers: auth, body: event.replace(/"time":[\d.]+/, '"time":1.7e9') })?.reason).toMatch(/time/);
    expect(hec.validate({ path: '/', headers: auth, body: event.replace('"fields":{', '"fields":{"nested":{"a":"b"},') })?.reason).toMatch(/nested/);
    expect(hec.validate({ path: '/', headers: auth, body: `[${event}]` })?.reason).toMatch(/between events/);
    expect(hec.validate({ path: '/', headers: auth, body: `${event} "x" ${event}` })?.reason).toMatch(/between events/);
    expect(hec.validate({ path: '/', headers: auth, body: event.slice(0, -1) })?.reason).toMatch(/truncated/);
  });
});
