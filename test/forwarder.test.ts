import { describe, expect, it } from 'vitest';
import { epochMs } from '../src/forwarder/call-log-row.js';
import { CallLogSource, INSERT_COUNTS_SQL, clickhouseTime } from '../src/forwarder/call-log-source.js';
import { assertNeverLeaked, invoke, newWorkspace, rest, type TestApp } from './helpers/harness.js';
import { forwarderKit, until } from './helpers/forwarder-kit.js';
import { callLog, writeCallLogs, type TestCallLog } from './helpers/forwarder-rows.js';

/**
 * The forwarder end to end: real stores, the real ingest path, real HTTP receivers on
 * loopback that validate the wire formats strictly.
 */
let t: TestApp;
const OPERATOR_SECRET = 'operator-only-9d41c7e2';
const COLLECTOR_SECRET = 'customer-token-3b8e5a61';
const HEC_TOKEN = 'hec-token-0a7f4d2c9e';
const kit = forwarderKit({
  // An operator's own OTLP settings must never reach a customer's collector.
  env: {
    OTEL_EXPORTER_OTLP_HEADERS: `x-operator-secret=${OPERATOR_SECRET}`,
    OTEL_EXPORTER_OTLP_LOGS_HEADERS: `x-operator-logs=${OPERATOR_SECRET}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1',
  },
  onStart: (app) => (t = app),
});
const { alerts, forwarder, otlp } = kit;
const hec = () => kit.hec(HEC_TOKEN);
async function configure(token: string, input: Record<string, unknown>) {
  const res = await invoke(t, 'rest', token, 'set_otel_configuration', input);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // These tests count call logs and script the receivers' answers: the admin audit
  // records that travel to the same logs collector (test/forwarder-audit.test.ts) are left out.
  await t.runtime.services.db.deleteFrom('forwarder_cursors').where('signal', '=', 'audit').execute();
  return res.body;
}
const rows = (org: string, n: number, over: Partial<TestCallLog> = {}) => Array.from({ length: n }, () => callLog(org, over));
const uids = (items: { attributes: Record<string, unknown> }[]) => items.map((i) => String(i.attributes['log.record.uid']));
const cursor = (org: string, signal: 'logs' | 'traces') =>
  t.runtime.services.db.selectFrom('forwarder_cursors').selectAll().where('organization_guid', '=', org).where('signal', '=', signal).executeTakeFirstOrThrow();

describe('forwarding', () => {
  it('delivers OTLP logs and traces with MCP attributes, configured headers and nothing from OTEL_* env', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, {
      logsCollectorUrl: r.url('/otlp/v1/logs?x=1'),
      tracesCollectorUrl: r.url('/v1/traces'),
      headers: { Authorization: `Bearer ${COLLECTOR_SECRET}` },
    });
    const written = [
      ...rows(ws.organizationGuid, 60),
      ...rows(ws.organizationGuid, 5, { status: 'error', errorMessage: 'upstream said no', errorType: '-32000' }),
    ];
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('65 logs and 65 spans', () => r.logs.length >= 65 && r.spans.length >= 65);

    expect(r.invalid).toEqual([]);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    expect(new Set(uids(r.spans))).toEqual(new Set(written.map((w) => w.guid)));
    // URLs are used exactly as configured: no signal path appended.
    expect(new Set(r.requests.map((q) => q.path))).toEqual(new Set(['/otlp/v1/logs?x=1', '/v1/traces']));
    for (const q of r.requests) {
      expect(q.headers.authorization).toBe(`Bearer ${COLLECTOR_SECRET}`);
      expect(JSON.stringify(q.headers)).not.toContain(OPERATOR_SECRET);
      expect(q.headers['x-operator-secret']).toBeUndefined();
    }

    const errorRow = written.at(-1)!;
    const log = r.logs.find((l) => l.attributes['log.record.uid'] === errorRow.guid)!;
    expect(log.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'search_docs',
      'mcp.session.id': errorRow.sessionId,
      'error.type': '-32000',
      'rpc.response.status_code': '-32000',
      'mcp_gateway.inbound_server.guid': errorRow.inboundServerGuid,
      'mcp_gateway.call.duration_ms': 42,
    });
    expect(log.attributes['mcp_gateway.host.guid']).toBeUndefined(); // the zero UUID is "absent"
    expect(log.record).toMatchObject({ traceId: errorRow.traceId, spanId: errorRow.spanId, severityNumber: 17 });
    expect(log.record.timeUnixNano).toBe(`${errorRow.createdAt.getTime()}000000`);
    expect(log.record.body.stringValue).toContain('upstream said no');
    expect(log.resource['mcp_gateway.organization.guid']).toBe(ws.organizationGuid);

    const span = r.spans.find((s) => s.attributes['log.record.uid'] === errorRow.guid)!;
    expect(span.record).toMatchObject({
      traceId: errorRow.traceId,
      spanId: errorRow.spanId,
      name: 'tools/call search_docs',
      kind: 2,
      status: { code: 2, message: 'upstream said no' },
    });
    expect(BigInt(span.record.endTimeUnixNano) - BigInt(span.record.startTimeUnixNano)).toBe(42_000_000n);
    const okSpan = r.spans.find((s) => s.attributes['log.record.uid'] === written[0]!.guid)!;
    expect(okSpan.record.status.code).toBe(1);

    // The collector has the records a moment before the forwarder records its progress.
    await until(
      'both checkpoints',
      async () => (await cursor(ws.organizationGuid, 'logs')).sent_total >= 65 && (await cursor(ws.organizationGuid, 'traces')).sent_total >= 65,
    );
    expect((await cursor(ws.organizationGuid, 'logs')).sent_total).toBe(65);
    // The receiver holds every span before the forwarder has read its answer: wait for the counter.
    let metrics = { body: '' };
    await expect
      .poll(async () => (metrics = await rest(t, null, 'GET', '/metrics')).body, { timeout: 15_000 })
      .toMatch(new RegExp(`mcpgw_forwarder_records_sent_total\\{organization="${ws.organizationGuid}",signal="traces"\\} 65`));
    assertNeverLeaked(t, [COLLECTOR_SECRET, OPERATOR_SECRET], [metrics.body, alerts]);
  });

  it('delivers HEC events with the Splunk token from the configured headers', async () => {
    const ws = await newWorkspace(t);
    const h = await hec();
    await configure(ws.token, {
      logsCollectorUrl: h.url('/services/collector/event'),
      logsFormat: 'collector_hec',
      headers: { Authorization: `Splunk ${HEC_TOKEN}` },
    });
    const written = rows(ws.organizationGuid, 120);
    written[0]!.createdAt = new Date(Date.UTC(2026, 10, 21, 10, 0, 0, 7));
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('120 HEC events', () => h.events.length >= 120);
    expect(h.invalid).toEqual([]);
    expect(new Set(h.events.map((e) => e.fields['log.record.uid']))).toEqual(new Set(written.map((w) => w.guid)));
    const first = h.events.find((e) => e.fields['log.record.uid'] === written[0]!.guid)!;
    expect(first.rawTime).toBe('1795255200.007');
    expect(first.event).toBe('tools/call search_docs ok in 42 ms');
    expect(first.fields).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'search_docs', 'mcp_gateway.call.duration_ms': '42' });
    // Linked to its trace, as the OTLP log record is.
    expect(first.fields).toMatchObject({ trace_id: written[0]!.traceId!.toLowerCase(), span_id: written[0]!.spanId!.toLowerCase() });
    for (const v of Object.values(first.fields)) expect(typeof v).toBe('string');
    expect(h.requests.every((q) => q.path === '/services/collector/event')).toBe(true);
    assertNeverLeaked(t, [HEC_TOKEN], [alerts]);
  });

  it('survives a collector that is down, then answers 503 with Retry-After: every row delivered', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    await r.stop();
    const written = rows(ws.organizationGuid, 140);
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('a retry recorded while down', async () => (await cursor(ws.organizationGuid, 'logs')).attempts >= 2);
    r.answerNext({ kind: 'status', status: 503, retryAfter: '0' }, { kind: 'status', status: 429 }, { kind: 'status', status: 502 });
    await r.start();
    await until('140 logs after the outage', () => new Set(uids(r.logs)).size >= 140);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    expect(r.invalid).toEqual([]);
    const c = await cursor(ws.organizationGuid, 'logs');
    expect(c.retried_total).toBeGreaterThan(0);
    expect(c.failed_total).toBe(0);
    // An outage is told at most once (records held, see forwarder-retry-alert.test.ts), never as records skipped.
    const raised = alerts.filter((a) => a.organizationGuid === ws.organizationGuid);
    expect(raised.length).toBeLessThanOrEqual(1);
    for (const a of raised) expect(a).toMatchObject({ code: 'collector_export_failed', message: expect.stringMatching(/held/) });
  });

  it('holds the backlog through redirects (a misconfigured collector, not a refusal of the data): every row delivered, none skipped', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    r.answerNext({ kind: 'status', status: 307 }, { kind: 'status', status: 301 }, { kind: 'status', status: 308 }, { kind: 'status', status: 302 });
    const written = rows(ws.organizationGuid, 60);
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('60 logs after the redirects', () => new Set(uids(r.logs)).size >= 60);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    const c = await cursor(ws.organizationGuid, 'logs');
    expect(c.failed_total).toBe(0);
    expect(c.retried_total).toBeGreaterThan(0);
  });

  it('holds a batch the collector refuses with 400 (a wrong index, a format it does not take) until it takes it, alerting with status and a redacted body', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs'), headers: { 'X-Api-Key': COLLECTOR_SECRET } });
    const echo = JSON.stringify({ message: `bad key ${COLLECTOR_SECRET}` });
    r.answerNext({ kind: 'status', status: 400, body: echo }, { kind: 'status', status: 400, body: echo }, { kind: 'status', status: 422, body: echo });
    const written = rows(ws.organizationGuid, 80);
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('every row, once the collector takes them', () => new Set(uids(r.logs)).size >= 80);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    const c = await cursor(ws.organizationGuid, 'logs');
    expect(c.failed_total).toBe(0);
    expect(c.retried_total).toBeGreaterThan(0);
    const alert = alerts.find((a) => a.organizationGuid === ws.organizationGuid)!;
    expect(alert).toMatchObject({ code: 'collector_export_failed', messageType: 'error', message: expect.stringMatching(/held/) });
    expect(alert.debugContext).toMatchObject({ responseStatus: 422, heldRecords: 50 });
    expect(String(alert.debugContext!.responseBody)).toContain('[REDACTED]');
    assertNeverLeaked(t, [COLLECTOR_SECRET], [alerts]);
  });

  it('halves the batches of a collector that answers 413 until one fits, and delivers every row', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    r.answerNext({ kind: 'status', status: 413, body: 'too large' }, { kind: 'status', status: 413, body: 'too large' });
    const written = rows(ws.organizationGuid, 60);
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('every row', () => new Set(uids(r.logs)).size >= 60);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    // Batches of 50, refused twice: 25, then 12 a batch from then on.
    const sizes = r.requests.map((q) =>
      (JSON.parse(q.body).resourceLogs as any[]).reduce((n, rl) => n + rl.scopeLogs.reduce((m: number, sl: any) => m + sl.logRecords.length, 0), 0),
    );
    expect(Math.max(...sizes)).toBe(12);
    expect((await cursor(ws.organizationGuid, 'logs')).failed_total).toBe(0);
  });

  it('keeps every row through a refused credential (401, 403) and a wrong path (404): the collector is misconfigured, the data is not wrong', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    r.answerNext(
      { kind: 'status', status: 401, body: 'token expired' },
      { kind: 'status', status: 401, body: 'token expired' },
      { kind: 'status', status: 403, body: 'forbidden' },
      { kind: 'status', status: 404, body: 'no such path' },
    );
    const written = rows(ws.organizationGuid, 60);
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('every row, once the collector takes them', () => new Set(uids(r.logs)).size >= 60);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    const c = await cursor(ws.organizationGuid, 'logs');
    expect(c.failed_total).toBe(0);
    expect(c.retried_total).toBeGreaterThan(0);
    // Told, all the same: the third failure in a row is an alert.
    expect(alerts.find((a) => a.organizationGuid === ws.organizationGuid)).toMatchObject({ code: 'collector_export_failed' });
  });

  it('counts and alerts an OTLP partial success', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { tracesCollectorUrl: r.url('/v1/traces') });
    r.answerNext({ kind: 'partial', rejected: 3, message: 'spans too old' });
    await writeCallLogs(t.runtime.services, rows(ws.organizationGuid, 20));
    forwarder();
    await until('the batch', async () => (await cursor(ws.organizationGuid, 'traces')).rejected_total > 0);
    const c = await cursor(ws.organizationGuid, 'traces');
    expect(c).toMatchObject({ rejected_total: 3, sent_total: 17 });
    expect(alerts.find((a) => a.organizationGuid === ws.organizationGuid)).toMatchObject({ code: 'collector_export_failed', messageType: 'warning' });
    const metrics = await rest(t, null, 'GET', '/metrics');
    expect(metrics.body).toMatch(new RegExp(`mcpgw_forwarder_records_rejected_total\\{organization="${ws.organizationGuid}",signal="traces"\\} 3`));
  });

  it('applies a configuration change from the next batch on', async () => {
    const ws = await newWorkspace(t);
    const a = await otlp();
    const b = await hec();
    await configure(ws.token, { logsCollectorUrl: a.url('/v1/logs') });
    const f = forwarder();
    const first = rows(ws.organizationGuid, 10);
    await writeCallLogs(t.runtime.services, first);
    await until('first rows at a', () => a.logs.length >= 10);
    await configure(ws.token, { logsCollectorUrl: b.url('/hec'), logsFormat: 'collector_hec', headers: { Authorization: `Splunk ${HEC_TOKEN}` } });
    const second = rows(ws.organizationGuid, 10);
    await writeCallLogs(t.runtime.services, second);
    await until('second rows at b', () => b.events.length >= 10);
    expect(new Set(b.events.map((e) => e.fields['log.record.uid']))).toEqual(new Set(second.map((s) => s.guid)));
    expect(new Set(uids(a.logs))).toEqual(new Set(first.map((s) => s.guid)));
    expect(a.invalid.concat(b.invalid)).toEqual([]);
    await f.stop();
  });

  it('a restart mid-backlog delivers every row; two forwarders never send the same batch', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    const written = rows(ws.organizationGuid, 400);
    await writeCallLogs(t.runtime.services, written);
    const first = forwarder({ batchSize: 20 });
    await until('some progress', () => r.logs.length >= 60);
    await first.stop(); // the service restarts mid-backlog
    expect(r.logs.length).toBeLessThan(400);
    // Two processes now share the store.
    forwarder({ batchSize: 20 });
    forwarder({ batchSize: 20 });
    await until('every row', () => new Set(uids(r.logs)).size >= 400);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    // The leases kept the two apart: nothing was sent twice.
    expect(uids(r.logs).length).toBe(400);
    expect(r.invalid).toEqual([]);
  });

  it('forwards nothing for a workspace without a collector, and only rows ingested after configuration', async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const r = await otlp();
    await writeCallLogs(t.runtime.services, rows(ws.organizationGuid, 5));
    await new Promise((res) => setTimeout(res, 20));
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    const later = rows(ws.organizationGuid, 5);
    await writeCallLogs(t.runtime.services, [...later, ...rows(other.organizationGuid, 5)]);
    forwarder();
    await until('the later rows', () => r.logs.length >= 5);
    await until(
      'caught up',
      async () =>
        (await cursor(ws.organizationGuid, 'logs')).checkpoint_guid ===
          later
            .map((l) => l.guid)
            .sort()
            .at(-1) || r.logs.length > 5,
    );
    expect(new Set(uids(r.logs))).toEqual(new Set(later.map((l) => l.guid)));
  });

  it('sleeps while no workspace forwards, and a collector configured wakes it at once', async () => {
    // No cursor at all: every earlier test's collectors gone.
    await t.runtime.services.db.deleteFrom('forwarder_cursors').execute();
    const ws = await newWorkspace(t);
    const r = await otlp();
    // Idle, it would not poll again within the test's time: only the change can wake it.
    const f = forwarder({ idlePollIntervalMs: 600_000 });
    await until('the forwarder idle', () => f.idle);
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    const written = rows(ws.organizationGuid, 5);
    await writeCallLogs(t.runtime.services, written);
    await until('the rows written after the collector was configured', () => r.logs.length >= 5, 20_000);
    expect(f.idle).toBe(false);
    expect(new Set(uids(r.logs))).toEqual(new Set(written.map((w) => w.guid)));
    // The collector removed: nothing left to forward, idle again.
    await configure(ws.token, { logsCollectorUrl: null });
    await until('the forwarder idle again', () => f.idle);
  });

  it('pipelined batches arrive in checkpoint order; a read-ahead behind a refused batch is dropped, not skipped', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
    const written = rows(ws.organizationGuid, 400);
    await writeCallLogs(t.runtime.services, written);
    // Batch 1 accepted, batch 2 answered 503 while batch 3 is already read ahead, then everything accepted.
    r.answerNext({ kind: 'partial', rejected: 0 }, { kind: 'status', status: 503, retryAfter: '0' });
    forwarder();
    await until('every row', () => r.logs.length >= 400);
    // One insert, one ingested_at: the checkpoint order is the guid order. Nothing lost, nothing twice.
    expect(uids(r.logs)).toEqual(written.map((w) => w.guid).sort());
    expect(r.invalid).toEqual([]);
    await until('the last checkpoint', async () => (await cursor(ws.organizationGuid, 'logs')).sent_total === 400);
    const c = await cursor(ws.organizationGuid, 'logs');
    expect(c.checkpoint_guid).toBe(
      written
        .map((w) => w.guid)
        .sort()
        .at(-1),
    );
    expect(c.sent_total).toBe(400);
    expect(c.retried_total).toBe(50);
  });

  it("reads each batch as exactly the next rows in checkpoint order, whatever the INSERTs' sizes; the counts per INSERT come from the projection", async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const source = new CallLogSource(t.runtime.services.clickhouse);
    // INSERTs of many sizes, another workspace's rows in each (they must never count).
    for (const n of [1, 7, 3, 12, 2, 5, 1]) await writeCallLogs(t.runtime.services, [...rows(ws.organizationGuid, n), ...rows(other.organizationGuid, 4)]);
    const { client } = t.runtime.services.clickhouse;
    const ordered = await (
      await client.query({
        query: 'SELECT toString(guid) AS guid FROM call_logs WHERE organization_guid = {org:String} ORDER BY ingested_at, toString(guid)',
        query_params: { org: ws.organizationGuid },
        format: 'JSONEachRow',
      })
    ).json<{ guid: string }>();
    expect(ordered).toHaveLength(31);
    const horizon = await source.deliveryHorizon(0);
    for (const limit of [1, 3, 4, 10, 31, 100]) {
      const pages: string[][] = [];
      let after = { at: new Date(0), guid: '' };
      for (;;) {
        const batch = await source.nextBatch(ws.organizationGuid, after, limit, horizon);
        if (batch.length === 0) break;
        pages.push(batch.map((r) => r.guid));
        const last = batch.at(-1)!;
        after = { at: new Date(epochMs(last.ingested_at)), guid: last.guid };
      }
      // Full batches until the last, which holds the rest: a checkpoint inside an INSERT, batches across several.
      expect(pages.flat(), `limit ${limit}`).toEqual(ordered.map((r) => r.guid));
      expect(pages.map((p) => p.length)).toEqual(Array.from({ length: Math.ceil(31 / limit) }, (_, i) => Math.min(limit, 31 - i * limit)));
    }
    const plan = await client.query({
      query: `EXPLAIN ${INSERT_COUNTS_SQL}`,
      query_params: { org: ws.organizationGuid, at: clickhouseTime(new Date(0)), before: clickhouseTime(horizon) },
      format: 'TabSeparatedRaw',
    });
    expect(await plan.text()).toContain('ReadFromMergeTree (forwarder_counts)');
  });

  it('knows when the oldest row still inside the settle window was ingested, and nothing once past it', async () => {
    const ws = await newWorkspace(t);
    const source = new CallLogSource(t.runtime.services.clickhouse);
    const start = { at: new Date(0), guid: '' };
    expect(await source.oldestPending(ws.organizationGuid, start)).toBeNull();
    await writeCallLogs(t.runtime.services, rows(ws.organizationGuid, 3));
    const batch = await source.nextBatch(ws.organizationGuid, start, 10, await source.deliveryHorizon(0));
    expect(batch).toHaveLength(3);
    expect((await source.oldestPending(ws.organizationGuid, start))?.getTime()).toBe(epochMs(batch[0]!.ingested_at));
    const last = batch.at(-1)!;
    expect(await source.oldestPending(ws.organizationGuid, { at: new Date(epochMs(last.ingested_at)), guid: last.guid })).toBeNull();
  });

  it('reads every character back as stored: control characters, backslashes, quotes, tabs, newlines, unicode', async () => {
    const ws = await newWorkspace(t);
    const source = new CallLogSource(t.runtime.services.clickhouse);
    const controls = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('');
    const text = `${controls}\x7f \\ \\N \\t \\x41 \\\\ "q" 'a' \t\n\r é 🚀 \u2028 end\\`;
    await t.runtime.services.clickhouse.client.insert({
      table: 'call_logs',
      values: [
        {
          organization_guid: ws.organizationGuid,
          guid: crypto.randomUUID(),
          created_at: Date.now(),
          type: 'tool_call',
          method: 'tools/call',
          tool_name: text,
          status: 'error',
          error_message: text,
          session_id: '\\',
        },
      ],
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplicate: 0, date_time_input_format: 'best_effort' },
    });
    const [row] = await source.nextBatch(ws.organizationGuid, { at: new Date(0), guid: '' }, 10, await source.deliveryHorizon(0));
    expect(row).toMatchObject({ tool_name: text, error_message: text, session_id: '\\', status: 'error' });
  });

  it('tells caught-up checkpoints from ones with rows after them, one answer per checkpoint', async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const source = new CallLogSource(t.runtime.services.clickhouse);
    await writeCallLogs(t.runtime.services, [...rows(ws.organizationGuid, 3), ...rows(other.organizationGuid, 2)]);
    const horizon = await source.deliveryHorizon(0);
    const batch = await source.nextBatch(ws.organizationGuid, { at: new Date(0), guid: '' }, 10, horizon);
    const [first, last] = [batch[0]!, batch.at(-1)!];
    const checkpointAt = (row: typeof first) => ({ organizationGuid: ws.organizationGuid, at: new Date(epochMs(row.ingested_at)), guid: row.guid });
    expect(
      await source.haveRowsAfter([checkpointAt(last), checkpointAt(first), { organizationGuid: other.organizationGuid, at: new Date(0), guid: '' }], horizon),
    ).toEqual([false, true, true]);
    // Nothing counts at or past the horizon.
    expect(await source.haveRowsAfter([checkpointAt(first)], new Date(epochMs(first.ingested_at)))).toEqual([false]);
    expect(await source.haveRowsAfter([], horizon)).toEqual([]);
  });

  describe('the delivery horizon (settle window 0)', () => {
    /**
     * A slow INSERT into call_logs, as an overloaded writer would run one, on the
     * connection the writer's inserts use (chDB's second connection when embedded): it
     * sleeps 1.5 s before its 30 rows are written, ingested_at left to the server, so the
     * horizon and the first read below surely run while it does. Its rows are found
     * afterwards by their tool name. Its values are literals, as the writer's inserts
     * carry no parameters: chDB runs parameterized statements one at a time in the
     * process, whatever their connection, which would hold the horizon's query back.
     */
    const insertSlowly = (org: string, tool: string) =>
      t.runtime.services.clickhouse.insertClient.command({
        query: `INSERT INTO call_logs (organization_guid, guid, created_at, type, method, tool_name, status)
          SELECT ${sqlString(org)}, generateUUIDv4(), now64(3), 'tool_call', 'tools/call', ${sqlString(tool)}, 'ok'
          FROM numbers(30) WHERE sleepEachRow(0.05) = 0`,
        // chDB keeps SET settings for its session: never inherit the writer's deduplication token.
        clickhouse_settings: { insert_deduplicate: 0 },
      });
    /** A ClickHouse string literal of a test's own id or name (guids and words, checked). */
    const sqlString = (value: string) => {
      expect(value).toMatch(/^[\w-]+$/);
      return `'${value}'`;
    };
    const guidsOf = async (org: string, tool: string) => {
      const res = await t.runtime.services.clickhouse.client.query({
        query: 'SELECT toString(guid) AS g FROM call_logs WHERE organization_guid = {org:String} AND tool_name = {tool:String}',
        query_params: { org, tool },
        format: 'JSONEachRow',
      });
      return (await res.json<{ g: string }>()).map((r) => r.g);
    };
    const insertRunning = async () => {
      const res = await t.runtime.services.clickhouse.client.query({
        query: "SELECT count() AS n FROM system.processes WHERE query_kind = 'Insert'",
        format: 'JSONEachRow',
      });
      return Number((await res.json<{ n: string | number }>())[0]!.n) > 0;
    };

    it('nothing ever appears below the horizon once it is taken, even while an INSERT runs', async () => {
      const ws = await newWorkspace(t);
      const source = new CallLogSource(t.runtime.services.clickhouse);
      await writeCallLogs(t.runtime.services, rows(ws.organizationGuid, 5));
      const slow = insertSlowly(ws.organizationGuid, 'slow_tool');
      await until('the slow insert runs', insertRunning);
      const start = { at: new Date(0), guid: '' };
      const horizon = await source.deliveryHorizon(0);
      const seen = await source.nextBatch(ws.organizationGuid, start, 1000, horizon);
      await slow;
      expect(await guidsOf(ws.organizationGuid, 'slow_tool')).not.toHaveLength(0);
      // The same read after the INSERT committed: not one more row before the horizon.
      expect((await source.nextBatch(ws.organizationGuid, start, 1000, horizon)).map((r) => r.guid)).toEqual(seen.map((r) => r.guid));
    });

    it('does not skip the rows of a slow INSERT that commits after a later one', async () => {
      const ws = await newWorkspace(t);
      const r = await otlp();
      await configure(ws.token, { logsCollectorUrl: r.url('/v1/logs') });
      const slow = insertSlowly(ws.organizationGuid, 'slow_tool');
      await until('the slow insert runs', insertRunning);
      // A later INSERT commits first (on a server) and the forwarder reads while the slow one runs.
      const fast = rows(ws.organizationGuid, 30);
      await writeCallLogs(t.runtime.services, fast);
      forwarder({ settleMs: 0, batchSize: 20 });
      await slow;
      const expected = new Set([...(await guidsOf(ws.organizationGuid, 'slow_tool')), ...fast.map((f) => f.guid)]);
      await until('every row', () => r.logs.length >= expected.size);
      expect(new Set(uids(r.logs))).toEqual(expected);
      expect(r.invalid).toEqual([]);
    });

    it('stamps ingested_at on the server, at or after the INSERT started', async () => {
      const ws = await newWorkspace(t);
      const source = new CallLogSource(t.runtime.services.clickhouse);
      const before = await source.deliveryHorizon(0);
      await writeCallLogs(t.runtime.services, rows(ws.organizationGuid, 3));
      const batch = await source.nextBatch(ws.organizationGuid, { at: new Date(0), guid: '' }, 10, await source.deliveryHorizon(0));
      expect(batch).toHaveLength(3);
      for (const row of batch) expect(epochMs(row.ingested_at)).toBeGreaterThanOrEqual(before.getTime());
    });
  });
});
