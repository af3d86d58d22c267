import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { AuditSource } from '../src/forwarder/audit-source.js';
import type { BodyKind } from '../src/forwarder/record-sql.js';
import { referenceAuditHec, referenceAuditLogs, type AuditRow } from './helpers/audit-reference.js';
import { forwarderKit, until } from './helpers/forwarder-kit.js';
import { callLog, writeCallLogs } from './helpers/forwarder-rows.js';
import { assertNeverLeaked, invoke, newWorkspace, type TestApp } from './helpers/harness.js';
import { HecReceiver, type HecEvent } from './helpers/hec-receiver.js';
import { newMember } from './helpers/members.js';
import { OtlpReceiver, type ReceivedItem } from './helpers/otlp-receiver.js';

/**
 * Admin audit records forwarded with the call logs (contract 8.4): produced by real
 * admin operations through both surfaces, delivered by the real forwarder to strict
 * OTLP and HEC receivers on loopback, through outages and a restart; and the records
 * ClickHouse writes held byte for byte to the OpenTelemetry serializer and
 * JSON.stringify (test/helpers/audit-reference.ts).
 */
let t: TestApp;
const COLLECTOR_SECRET = 'collector-bearer-7c1e9a42f0';
const API_KEY_SECRET = 'collector-api-key-5d2b8e11';
const HEC_TOKEN = 'hec-audit-token-93f0c6d1a8';
const kit = forwarderKit({ options: { batchSize: 5 }, onStart: (app) => (t = app) });
const { alerts, forwarder, otlp } = kit;
const hec = () => kit.hec(HEC_TOKEN);
/** A successful answer's body (REST: 200 or 201; MCP: 200). */
async function ok(res: Promise<{ status: number; body: any }>) {
  const answer = await res;
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
  return answer.body;
}

/** Every audit record of the workspace in ClickHouse (the spool flushed first): what must be delivered. */
async function storedAuditGuids(org: string): Promise<string[]> {
  await t.runtime.services.audit.flush();
  const res = await t.runtime.services.clickhouse.client.query({
    query: 'SELECT toString(guid) AS g FROM audit_log WHERE organization_guid = {org:String}',
    query_params: { org },
    format: 'JSONEachRow',
  });
  return (await res.json<{ g: string }>()).map((r) => r.g);
}

const isAudit = (item: ReceivedItem) => item.attributes['event.name'] === 'svc.admin.audit';
const auditLogs = (r: OtlpReceiver) => r.logs.filter(isAudit);
const auditEvents = (h: HecReceiver) => h.events.filter((e) => e.sourcetype === 'svc:admin:audit');
const uid = (item: ReceivedItem) => String(item.attributes['log.record.uid']);
const byOperation = (items: ReceivedItem[], operation: string) => items.filter((i) => i.attributes['mcp_gateway.audit.operation'] === operation);
const cursor = (org: string, signal: 'logs' | 'traces' | 'audit') =>
  t.runtime.services.db.selectFrom('forwarder_cursors').selectAll().where('organization_guid', '=', org).where('signal', '=', signal).executeTakeFirst();
/** Every body a receiver accepted or refused, as one text to search for secrets. */
const everythingSent = (r: { requests: { body: string; headers: unknown }[]; invalid: { body: string }[] }) =>
  JSON.stringify([r.requests.map((q) => q.body), r.invalid.map((q) => q.body)]);

describe('forwarding admin audit records', () => {
  it('OTLP: records of real operations on both surfaces arrive with event.name, severity by outcome, their fields and no secret', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await ok(
      invoke(t, 'rest', ws.token, 'set_otel_configuration', {
        logsCollectorUrl: r.url('/v1/logs'),
        headers: { Authorization: `Bearer ${COLLECTOR_SECRET}`, 'X-Api-Key': API_KEY_SECRET },
      }),
    );
    const team = await ok(invoke(t, 'mcp', ws.token, 'create_team', { name: 'Audited' }));
    const issued = await ok(invoke(t, 'rest', ws.token, 'create_access_token', { label: 'ci' }));
    const member = await newMember(t, ws, []);
    expect((await invoke(t, 'mcp', member.token, 'create_team', { name: 'not allowed' })).status).toBe(403);
    const calls = Array.from({ length: 3 }, () => callLog(ws.organizationGuid));
    await writeCallLogs(t.runtime.services, calls);
    const expected = await storedAuditGuids(ws.organizationGuid);
    expect(expected).toHaveLength(4);

    forwarder();
    await until('every audit record and call log', () => new Set(auditLogs(r).map(uid)).size >= 4 && r.logs.length - auditLogs(r).length >= 3);
    expect(r.invalid).toEqual([]);
    expect(new Set(auditLogs(r).map(uid))).toEqual(new Set(expected));
    // The call logs travel to the same collector, as call logs.
    expect(new Set(r.logs.filter((l) => !isAudit(l)).map(uid))).toEqual(new Set(calls.map((c) => c.guid)));
    expect(r.requests.every((q) => q.path === '/v1/logs' && q.headers.authorization === `Bearer ${COLLECTOR_SECRET}`)).toBe(true);

    const [configured] = byOperation(auditLogs(r), 'set_otel_configuration');
    expect(configured!.record).toMatchObject({
      eventName: 'svc.admin.audit',
      severityNumber: 9,
      severityText: 'INFO',
      body: { stringValue: 'set_otel_configuration ok via rest' },
    });
    expect(configured!.resource['mcp_gateway.organization.guid']).toBe(ws.organizationGuid);
    expect(configured!.attributes).toMatchObject({
      'mcp_gateway.audit.surface': 'rest',
      'mcp_gateway.audit.outcome': 'ok',
      'mcp_gateway.audit.status': 200,
      'mcp_gateway.audit.actor_user_guid': ws.userGuid,
      'mcp_gateway.audit.actor_token_prefix': ws.token.split('_')[1],
      'client.address': '127.0.0.1',
    });
    expect(configured!.attributes['error.type']).toBeUndefined();
    // The collector's header values are write-only: the recorded request names them, nothing more.
    expect(JSON.parse(String(configured!.attributes['mcp_gateway.audit.request']))).toMatchObject({
      headers: { Authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]' },
    });

    const created = byOperation(auditLogs(r), 'create_team').find((i) => i.attributes['mcp_gateway.audit.outcome'] === 'ok')!;
    expect(created.attributes).toMatchObject({
      'mcp_gateway.audit.surface': 'mcp',
      'mcp_gateway.audit.status': 201,
      'mcp_gateway.audit.target_guids': [team.guid],
    });
    expect(JSON.parse(String(created.attributes['mcp_gateway.audit.request']))).toEqual({ name: 'Audited' });

    const refused = byOperation(auditLogs(r), 'create_team').find((i) => i.attributes['mcp_gateway.audit.outcome'] !== 'ok')!;
    expect(refused.record).toMatchObject({
      severityNumber: 13,
      severityText: 'WARN',
      body: { stringValue: 'create_team refused via mcp: missing_capability (403)' },
    });
    expect(refused.attributes).toMatchObject({
      'error.type': 'missing_capability',
      'mcp_gateway.audit.status': 403,
      'mcp_gateway.audit.actor_user_guid': member.userGuid,
    });

    const [tokenRecord] = byOperation(auditLogs(r), 'create_access_token');
    expect(tokenRecord!.attributes['mcp_gateway.audit.target_guids']).toContain(issued.id);

    // No secret in anything the collector received: header values, the issued token, the callers' tokens.
    const secrets = [COLLECTOR_SECRET, API_KEY_SECRET, String(issued.token), ws.token, member.token];
    const sent = everythingSent(r);
    for (const secret of secrets) expect(sent).not.toContain(secret);
    assertNeverLeaked(t, secrets.slice(0, 3), [alerts]);
    await until('the audit checkpoint', async () => Number((await cursor(ws.organizationGuid, 'audit'))?.sent_total) === 4);
  });

  it('HEC: records arrive as svc:admin:audit events with flat fields, next to the mcp:call events, and no secret', async () => {
    const ws = await newWorkspace(t);
    const h = await hec();
    const splunk = { Authorization: `Splunk ${HEC_TOKEN}` };
    await ok(
      invoke(t, 'mcp', ws.token, 'set_otel_configuration', {
        logsCollectorUrl: h.url('/services/collector/event'),
        logsFormat: 'collector_hec',
        headers: splunk,
      }),
    );
    const team = await ok(invoke(t, 'rest', ws.token, 'create_team', { name: 'Splunked' }));
    await ok(invoke(t, 'rest', ws.token, 'rename_team', { teamGuid: team.guid, newName: 'Splunked 2' }));
    // A header set replaced: the new values are as secret as the old.
    await ok(
      invoke(t, 'rest', ws.token, 'set_otel_configuration', {
        logsCollectorUrl: h.url('/services/collector/event'),
        headers: { ...splunk, 'X-Api-Key': API_KEY_SECRET },
      }),
    );
    await writeCallLogs(t.runtime.services, [callLog(ws.organizationGuid)]);
    const expected = await storedAuditGuids(ws.organizationGuid);
    expect(expected).toHaveLength(4);

    forwarder();
    await until('every audit event and the call', () => auditEvents(h).length >= 4 && h.events.some((e) => e.sourcetype === 'mcp:call'));
    expect(h.invalid).toEqual([]);
    const events = auditEvents(h);
    expect(new Set(events.map((e) => e.fields['log.record.uid']))).toEqual(new Set(expected));
    const field = (e: HecEvent, name: string) => e.fields[`mcp_gateway.audit.${name}`];
    const renamed = events.find((e) => field(e, 'operation') === 'rename_team')!;
    expect(renamed).toMatchObject({ host: 'mcp-gateway-manager', source: 'mcp-gateway-manager', event: 'rename_team ok via rest' });
    expect(renamed.fields).toMatchObject({
      'event.name': 'svc.admin.audit',
      'mcp_gateway.audit.surface': 'rest',
      'mcp_gateway.audit.status': '200',
      'mcp_gateway.audit.actor_user_guid': ws.userGuid,
      'mcp_gateway.audit.target_guids': [team.guid],
    });
    expect(renamed.rawTime).toMatch(/^\d+\.\d{3}$/);
    for (const [name, value] of Object.entries(renamed.fields)) if (name !== 'mcp_gateway.audit.target_guids') expect(typeof value).toBe('string');
    const reconfigured = events.filter((e) => field(e, 'operation') === 'set_otel_configuration').map((e) => JSON.parse(String(field(e, 'request'))));
    expect(reconfigured).toContainEqual({
      logsCollectorUrl: h.url('/services/collector/event'),
      headers: { Authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]' },
    });
    const sent = everythingSent(h);
    for (const secret of [HEC_TOKEN, API_KEY_SECRET, ws.token]) expect(sent).not.toContain(secret);
    assertNeverLeaked(t, [HEC_TOKEN, API_KEY_SECRET], [alerts]);
  });

  it('through an outage and a restart: collector down, then 503, 500 and 429, then back: every record delivered, none skipped', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await ok(invoke(t, 'rest', ws.token, 'set_otel_configuration', { logsCollectorUrl: r.url('/v1/logs') }));
    await r.stop();
    for (let i = 0; i < 8; i++) await ok(invoke(t, i % 2 ? 'mcp' : 'rest', ws.token, 'create_team', { name: `outage ${i}` }));
    await storedAuditGuids(ws.organizationGuid);
    const first = forwarder();
    await until('retries recorded while down', async () => Number((await cursor(ws.organizationGuid, 'audit'))?.attempts) >= 2);
    // The service restarts while the collector is still down: the backlog and the backoff are in Postgres.
    await first.stop();
    forwarder();
    await until('another retry after the restart', async () => Number((await cursor(ws.organizationGuid, 'audit'))?.attempts) >= 3);
    r.answerNext({ kind: 'status', status: 503, retryAfter: '0' }, { kind: 'status', status: 500 }, { kind: 'status', status: 429 });
    await r.start();
    // Operations go on while the collector recovers.
    for (let i = 0; i < 3; i++) await ok(invoke(t, 'rest', ws.token, 'create_team', { name: `after ${i}` }));
    const expected = await storedAuditGuids(ws.organizationGuid);
    expect(expected).toHaveLength(12);
    await until('every record after the outage', () => new Set(auditLogs(r).map(uid)).size >= expected.length);
    // At least once: every record is there; a batch in flight at the restart may have come twice.
    expect(new Set(auditLogs(r).map(uid))).toEqual(new Set(expected));
    expect(r.invalid).toEqual([]);
    const c = (await cursor(ws.organizationGuid, 'audit'))!;
    expect(c.retried_total).toBeGreaterThan(0);
    expect(c.failed_total).toBe(0);
    // Whatever the workspace was told about the outage, no record was skipped.
    expect(alerts.filter((a) => a.organizationGuid === ws.organizationGuid && a.debugContext?.skippedRecords !== undefined)).toEqual([]);
  });

  it("keeps workspaces apart: each collector receives its own workspace's records only", async () => {
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const ra = await otlp();
    const rb = await otlp();
    await ok(invoke(t, 'rest', a.token, 'set_otel_configuration', { logsCollectorUrl: ra.url('/v1/logs') }));
    await ok(invoke(t, 'mcp', b.token, 'set_otel_configuration', { logsCollectorUrl: rb.url('/v1/logs') }));
    for (const ws of [a, b, a, b]) await ok(invoke(t, 'rest', ws.token, 'create_team', { name: `team ${randomUUID().slice(0, 6)}` }));
    const [expectedA, expectedB] = [await storedAuditGuids(a.organizationGuid), await storedAuditGuids(b.organizationGuid)];
    expect([expectedA.length, expectedB.length]).toEqual([3, 3]);
    forwarder();
    await until('both workspaces delivered', () => auditLogs(ra).length >= 3 && auditLogs(rb).length >= 3);
    expect(new Set(auditLogs(ra).map(uid))).toEqual(new Set(expectedA));
    expect(new Set(auditLogs(rb).map(uid))).toEqual(new Set(expectedB));
    expect(ra.logs.every((l) => l.resource['mcp_gateway.organization.guid'] === a.organizationGuid)).toBe(true);
    expect(rb.logs.every((l) => l.resource['mcp_gateway.organization.guid'] === b.organizationGuid)).toBe(true);
    expect(JSON.stringify(ra.logs.map((l) => l.attributes))).not.toContain(b.userGuid);
    expect(JSON.stringify(rb.logs.map((l) => l.attributes))).not.toContain(a.userGuid);
  });

  it('follows the logs URL: a traces-only collector has no audit cursor and receives no audit record', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    await ok(invoke(t, 'rest', ws.token, 'set_otel_configuration', { logsCollectorUrl: r.url('/v1/logs'), tracesCollectorUrl: r.url('/v1/traces') }));
    expect(await cursor(ws.organizationGuid, 'audit')).toBeDefined();
    await ok(invoke(t, 'rest', ws.token, 'set_otel_configuration', { logsCollectorUrl: null }));
    expect(await cursor(ws.organizationGuid, 'audit')).toBeUndefined();
    await ok(invoke(t, 'rest', ws.token, 'create_team', { name: 'unseen' }));
    await writeCallLogs(t.runtime.services, [callLog(ws.organizationGuid)]);
    await storedAuditGuids(ws.organizationGuid);
    forwarder();
    await until('the span', () => r.spans.length >= 1);
    expect(r.logs).toEqual([]);
    expect(r.invalid).toEqual([]);
  });
});

describe('audit records written by ClickHouse', () => {
  let source: AuditSource;
  beforeAll(() => {
    source = new AuditSource(t.runtime.services.clickhouse);
  });

  const base = {
    actor_user_guid: 'a1a1a1a1-0000-4000-8000-000000000001',
    actor_token_prefix: 'Ab12Cd34',
    surface: 'rest',
    operation: 'create_team',
    target_guids: ['a1a1a1a1-0000-4000-8000-000000000002'],
    outcome: 'ok',
    status: 201,
    request: JSON.stringify({ name: 'Platform', headers: { Authorization: '[REDACTED]' } }),
    source_ip: '127.0.0.1',
    user_agent: 'curl/8.5.0',
  };
  /** Every branch: refused and failed outcomes, the CLI without an actor, several and no targets, odd text, a request cut short. */
  const variants: Partial<typeof base>[] = [
    {},
    { outcome: 'missing_capability', status: 403, surface: 'mcp', operation: 'delete_team' },
    { outcome: 'internal_error', status: 500, operation: 'set_user_role' },
    { surface: 'cli', actor_user_guid: '', actor_token_prefix: '', source_ip: '', user_agent: '', target_guids: [] },
    { target_guids: ['a1a1a1a1-0000-4000-8000-000000000003', 'a1a1a1a1-0000-4000-8000-000000000004', 'a1a1a1a1-0000-4000-8000-000000000005'] },
    { user_agent: 'Mozilla/5.0 "quoted" \\ back / slash é 🚀', source_ip: '::1', request: '{"name":"ünïcødé 🚀 \\"q\\" \\\\ /"}' },
    { request: '{"name":"cut sh', outcome: 'validation_failed', status: 400 },
  ];

  /** Stores the rows for a new workspace, ingested one millisecond apart in this order; returns them as the reference reads them. */
  async function store(list: Partial<typeof base>[]): Promise<AuditRow[]> {
    const org = randomUUID();
    const createdFrom = Date.parse('2026-11-21T10:00:00.007Z');
    const ingestedFrom = Date.parse('2026-11-21T10:00:01.000Z');
    const rows = list.map((over, i) => ({
      ...base,
      ...over,
      organization_guid: org,
      guid: randomUUID(),
      created_ms: createdFrom + i * 1000,
      ingested_ms: ingestedFrom + i,
    }));
    const time = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    await t.runtime.services.clickhouse.client.insert({
      table: 'audit_log',
      values: rows.map(({ created_ms, ingested_ms, ...row }) => ({ ...row, created_at: time(created_ms), ingested_at: time(ingested_ms) })),
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplicate: 0, date_time_input_format: 'best_effort' },
    });
    return rows.sort((x, y) => x.ingested_ms - y.ingested_ms);
  }

  const body = async (rows: AuditRow[], kind: BodyKind) => {
    const batch = await source.nextEncodedBatch(rows[0]!.organization_guid, { at: new Date(0), guid: '' }, 1000, new Date('2100-01-01T00:00:00Z'), kind);
    expect(batch.count).toBe(rows.length);
    expect(batch.end).toEqual({ at: new Date(rows.at(-1)!.ingested_ms), guid: rows.at(-1)!.guid });
    return Buffer.concat(batch.body).toString('utf8');
  };

  it('OTLP and HEC: byte for byte what the serializer and JSON.stringify write for the same rows', async () => {
    const rows = await store(variants);
    expect(await body(rows, 'otlp_logs')).toBe(referenceAuditLogs(rows));
    expect(await body(rows, 'hec')).toBe(referenceAuditHec(rows));
  });

  it('the strict receivers accept the bodies; audit records are never spans', async () => {
    const rows = await store(variants);
    const json = { 'content-type': 'application/json' };
    const otlpCheck = new OtlpReceiver() as unknown as { validate(r: unknown): unknown };
    const hecCheck = new HecReceiver('tok') as unknown as { validate(r: unknown): unknown };
    expect(otlpCheck.validate({ path: '/', headers: json, body: await body(rows, 'otlp_logs') })).toBeNull();
    expect(hecCheck.validate({ path: '/', headers: { ...json, authorization: 'Splunk tok' }, body: await body(rows, 'hec') })).toBeNull();
    await expect(source.nextEncodedBatch(rows[0]!.organization_guid, { at: new Date(0), guid: '' }, 10, new Date(), 'otlp_traces')).rejects.toThrow(
      /never as spans/,
    );
  });

  it('reads after the checkpoint and before the horizon only, and tells caught-up checkpoints apart', async () => {
    const rows = await store(variants.slice(0, 3));
    const org = rows[0]!.organization_guid;
    const at = (row: AuditRow) => ({ at: new Date(row.ingested_ms), guid: row.guid });
    const after = await source.nextEncodedBatch(org, at(rows[0]!), 10, new Date('2100-01-01T00:00:00Z'), 'hec');
    expect(after.count).toBe(2);
    const before = await source.nextEncodedBatch(org, { at: new Date(0), guid: '' }, 10, new Date(rows[2]!.ingested_ms), 'hec');
    expect(before.count).toBe(2);
    const horizon = new Date('2100-01-01T00:00:00Z');
    expect(
      await source.haveRowsAfter(
        [
          { organizationGuid: org, ...at(rows[2]!) },
          { organizationGuid: org, ...at(rows[1]!) },
          { organizationGuid: randomUUID(), at: new Date(0), guid: '' },
        ],
        horizon,
      ),
    ).toEqual([false, true, false]);
    expect((await source.oldestPending(org, at(rows[0]!)))?.getTime()).toBe(rows[1]!.ingested_ms);
    expect(await source.oldestPending(org, at(rows[2]!))).toBeNull();
  });
});
