import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import { connectionCallSummary } from '../src/core/logs/connection-summary.js';
import type { CallLogInput } from '../src/core/logs/call-log-row.js';
import { FILTER_COLUMNS, LOG_COLUMNS } from '../src/core/logs/query-logs.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { ingest, logRow } from './helpers/call-logs.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
let org: string;
let token: string;
let otherOrg: string;
let otherToken: string;
const BASE = Date.UTC(2026, 10, 20, 12, 0, 0);
let rows: CallLogInput[];
let target: CallLogInput;

const camel: Record<string, keyof CallLogInput> = {
  gateway_connection_guid: 'gatewayConnectionGuid',
  user_guid: 'userGuid',
  outbound_gateway_guid: 'outboundGatewayGuid',
  inbound_server_guid: 'inboundServerGuid',
  host_guid: 'hostGuid',
  server_container_guid: 'serverContainerGuid',
  team_guid: 'teamGuid',
  type: 'type',
  trace_id: 'traceId',
  span_id: 'spanId',
};

/** ClickHouse orders UUIDs by their low 64 bits first, then the high 64 bits. */
const uuidKey = (guid: string) => {
  const hex = guid.replaceAll('-', '');
  return hex.slice(16) + hex.slice(0, 16);
};
/** Expected order of the default page: created_at desc, then guid desc in ClickHouse's UUID order. */
const newestFirst = (a: CallLogInput, b: CallLogInput) =>
  Number(b.createdAt) - Number(a.createdAt) || (uuidKey(b.guid!) < uuidKey(a.guid!) ? -1 : uuidKey(b.guid!) > uuidKey(a.guid!) ? 1 : 0);

beforeAll(async () => {
  t = await startTestApp();
  const ws = await newWorkspace(t);
  org = ws.organizationGuid;
  token = ws.token;
  const other = await newWorkspace(t);
  otherOrg = other.organizationGuid;
  otherToken = other.token;
  // 1200 rows, three per millisecond (ties on created_at exercise the guid tie-breaker).
  rows = Array.from({ length: 1200 }, (_, i) =>
    logRow(org, {
      createdAt: BASE + Math.floor(i / 3),
      durationMs: (i * 37) % 1000,
      type: i % 10 === 0 ? 'tool_list' : 'tool_call',
      status: i % 7 === 0 ? 'error' : 'ok',
      errorMessage: i % 7 === 0 ? `boom ${i}` : null,
    }),
  );
  target = rows[500]!;
  // The other workspace's rows share every filter value of `target`, and are newer.
  const noise = Array.from({ length: 50 }, () => ({ ...target, organizationGuid: otherOrg, guid: newGuid(), createdAt: BASE + 10_000 }));
  await ingest(t, [...rows, ...noise]);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

describe.each(SURFACES)('query_logs on %s', (surface) => {
  it('returns the newest 100 rows by default with the contract columns and a nextSkip', async () => {
    const res = await invoke(t, surface, token, 'query_logs', {});
    expect(res.status).toBe(200);
    expect(res.body.take).toBe(100);
    expect(res.body.skip).toBe(0);
    expect(res.body.nextSkip).toBe(100);
    expect(res.body.items.map((r: any) => r.guid)).toEqual(
      [...rows]
        .sort(newestFirst)
        .slice(0, 100)
        .map((r) => r.guid),
    );
    const row = res.body.items[0];
    expect(Object.keys(row).sort()).toEqual(
      [
        'guid',
        'created_at',
        'type',
        'method',
        'tool_name',
        'status',
        'error_message',
        'duration_ms',
        'request_bytes',
        'response_bytes',
        'gateway_connection_guid',
        'user_guid',
        'outbound_gateway_guid',
        'inbound_server_guid',
        'host_guid',
        'server_container_guid',
        'team_guid',
        'trace_id',
        'span_id',
        // An extension (contract section 8): the host's MCP protocol revision.
        'protocol_version',
      ].sort(),
    );
    // In response order: the declaration's (call-log-schema.ts), guid and created_at first.
    expect(Object.keys(row)).toEqual([...LOG_COLUMNS]);
    expect(row.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(row).not.toHaveProperty('request_body');
  });

  it.each(FILTER_COLUMNS.map((c) => [c]))('filters by equality on %s, within the workspace only', async (column) => {
    const value = String(target[camel[column]!]);
    const res = await invoke(t, surface, token, 'query_logs', { filters: { [column]: value }, take: 1000 });
    expect(res.status).toBe(200);
    const expected = rows.filter((r) => String(r[camel[column]!]) === value);
    expect(res.body.items.length).toBe(expected.length);
    expect(res.body.items.every((r: any) => r[column] === value)).toBe(true);
    if (column !== 'type') expect(res.body.items.map((r: any) => r.guid)).toEqual([target.guid]);
  });

  it('combines three filters and bounds created_at inclusively', async () => {
    const from = BASE + 100;
    const to = BASE + 199;
    const res = await invoke(t, surface, token, 'query_logs', { filters: { type: 'tool_call' }, fromMs: from, toMs: to, take: 1000 });
    const expected = rows.filter((r) => r.type === 'tool_call' && Number(r.createdAt) >= from && Number(r.createdAt) <= to);
    expect(res.body.items.length).toBe(expected.length);
    // Both bounds are inclusive: rows at exactly fromMs and toMs are in.
    const times = res.body.items.map((r: any) => Date.parse(r.created_at));
    expect(Math.min(...times)).toBe(from);
    expect(Math.max(...times)).toBe(to);
    const three = await invoke(t, surface, token, 'query_logs', {
      filters: { type: target.type, user_guid: target.userGuid, trace_id: target.traceId!.toUpperCase() },
    });
    expect(three.body.items.map((r: any) => r.guid)).toEqual([target.guid]);
    expect(three.body.nextSkip).toBeNull();
  });

  it('orders by any returned column, both directions, with created_at and guid as tie-breakers', async () => {
    const asc = await invoke(t, surface, token, 'query_logs', { orderByColumn: 'duration_ms', orderByDirection: 'asc', take: 50 });
    const durations = asc.body.items.map((r: any) => r.duration_ms);
    expect(durations).toEqual([...durations].sort((a, b) => a - b));
    expect(durations[0]).toBe(Math.min(...rows.map((r) => r.durationMs)));
    const oldest = await invoke(t, surface, token, 'query_logs', { orderByDirection: 'asc', take: 5 });
    expect(oldest.body.items.map((r: any) => r.guid)).toEqual(
      [...rows]
        .sort(newestFirst)
        .reverse()
        .slice(0, 5)
        .map((r) => r.guid),
    );
    const byStatus = await invoke(t, surface, token, 'query_logs', { orderByColumn: 'status', orderByDirection: 'desc', take: 10 });
    expect(byStatus.body.items.every((r: any) => r.status === 'error')).toBe(true);
  });

  it('orders by guid as the guids read, not in ClickHouse UUID order (low 64 bits first)', async () => {
    const byText = rows.map((r) => r.guid!).sort();
    for (const [orderByDirection, expected] of [
      ['asc', byText],
      ['desc', [...byText].reverse()],
    ] as const) {
      const page = await invoke(t, surface, token, 'query_logs', { orderByColumn: 'guid', orderByDirection, skip: 20, take: 30 });
      expect(page.body.items.map((r: any) => r.guid)).toEqual(expected.slice(20, 50));
    }
  });

  it('pages by skip exactly like the full ordering, however deep, both directions', async () => {
    const sorted = [...rows].sort(newestFirst).map((r) => r.guid);
    for (const skip of [1, 99, 100, 601, 1150]) {
      const page = await invoke(t, surface, token, 'query_logs', { skip, take: 100 });
      expect(page.body.items.map((r: any) => r.guid)).toEqual(sorted.slice(skip, skip + 100));
      expect(page.body.nextSkip).toBe(skip + 100 < sorted.length ? skip + 100 : null);
    }
    const ascPage = await invoke(t, surface, token, 'query_logs', { orderByDirection: 'asc', skip: 700, take: 30 });
    expect(ascPage.body.items.map((r: any) => r.guid)).toEqual([...sorted].reverse().slice(700, 730));
    const durationPage = await invoke(t, surface, token, 'query_logs', { orderByColumn: 'duration_ms', skip: 10, take: 5 });
    expect(durationPage.body.items).toHaveLength(5);
  });

  it('answers an empty page past the end, and nextSkip null on the last page', async () => {
    const past = await invoke(t, surface, token, 'query_logs', { skip: 5000 });
    expect(past.body).toEqual({ items: [], skip: 5000, take: 100, nextSkip: null });
    const last = await invoke(t, surface, token, 'query_logs', { skip: 1100, take: 100 });
    expect(last.body.items).toHaveLength(100);
    expect(last.body.nextSkip).toBeNull();
    const none = await invoke(t, surface, token, 'query_logs', { filters: { user_guid: newGuid() } });
    expect(none.body).toEqual({ items: [], skip: 0, take: 100, nextSkip: null });
  });

  it('caps take at 1000', async () => {
    const res = await invoke(t, surface, token, 'query_logs', { take: 5000 });
    expect(res.status).toBe(200);
    expect(res.body.take).toBe(1000);
    expect(res.body.items).toHaveLength(1000);
    expect(res.body.nextSkip).toBe(1000);
  });

  it.each([
    [{ filters: { bogus: 'x' } }, 'filters.bogus'],
    [{ filters: { user_guid: 5 } }, 'filters.user_guid'],
    [{ filters: { type: 'nonsense' } }, 'filters.type'],
    [{ take: 0 }, 'take'],
    [{ take: -1 }, 'take'],
    [{ take: 1.5 }, 'take'],
    [{ skip: -1 }, 'skip'],
    [{ fromMs: 10, toMs: 9 }, 'fromMs'],
    [{ fromMs: 'yesterday' }, 'fromMs'],
    [{ orderByColumn: 'request_body' }, 'orderByColumn'],
    [{ orderByColumn: 'organization_guid' }, 'orderByColumn'],
    [{ orderByColumn: 'created_at; DROP TABLE call_logs' }, 'orderByColumn'],
    [{ orderByDirection: 'sideways' }, 'orderByDirection'],
    [{ includeDetail: 'yes' }, 'includeDetail'],
  ])('refuses %j with 400 naming %s', async (input, path) => {
    const res = await invoke(t, surface, token, 'query_logs', input);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: any) => e.path)).toContain(path);
  });

  it('names a number past its bound once, by the bound the field declares', async () => {
    const res = await invoke(t, surface, token, 'query_logs', { fromMs: -1e20, skip: 1e20 });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      { path: 'fromMs', message: 'Too small: expected number to be >=0' },
      { path: 'skip', message: 'Too big: expected number to be <=1000000000' },
    ]);
  });

  it("never shows another workspace's rows, whatever the filters", async () => {
    const own = await invoke(t, surface, otherToken, 'query_logs', { take: 1000 });
    expect(own.body.items).toHaveLength(50);
    const probe = await invoke(t, surface, otherToken, 'query_logs', { filters: { trace_id: rows[3]!.traceId! }, fromMs: 0 });
    expect(probe.body.items).toEqual([]);
    const mine = await invoke(t, surface, token, 'query_logs', { fromMs: BASE + 5000 });
    expect(mine.body.items).toEqual([]);
  });
});

describe('query_logs time windows', () => {
  it('gives exactly the pages of the full ordering when rows span weeks (windows widen until they hold the page)', async () => {
    const ws = await newWorkspace(t);
    const now = Date.now();
    const user = newGuid();
    // 400 rows 2.5 h apart back from now (about 41 days, past the last window) and 3 in the future.
    const spread = Array.from({ length: 403 }, (_, i) =>
      logRow(ws.organizationGuid, { createdAt: now + 3 * 3_600_000 - i * 9_000_000, ...(i % 7 === 0 ? { userGuid: user } : {}) }),
    );
    await ingest(t, spread);
    const sorted = [...spread].sort(newestFirst);
    const guids = (list: CallLogInput[]) => list.map((r) => r.guid);
    const page = async (input: Record<string, unknown>) => (await invoke(t, 'rest', ws.token, 'query_logs', input)).body;
    for (const [skip, take] of [
      [0, 5],
      [100, 50],
      [380, 50],
      [403, 10],
    ] as const) {
      const res = await page({ skip, take });
      expect(res.items.map((r: any) => r.guid)).toEqual(guids(sorted.slice(skip, skip + take)));
      expect(res.nextSkip).toBe(skip + take < sorted.length ? skip + take : null);
    }
    const mine = sorted.filter((r) => r.userGuid === user);
    expect((await page({ filters: { user_guid: user }, skip: 2, take: 10 })).items.map((r: any) => r.guid)).toEqual(guids(mine.slice(2, 12)));
    expect((await page({ filters: { user_guid: user }, take: 1000 })).items).toHaveLength(mine.length);
    const fromMs = now - 35 * 86_400_000;
    const ascending = [...sorted].reverse().filter((r) => Number(r.createdAt) >= fromMs);
    expect((await page({ orderByDirection: 'asc', fromMs, skip: 3, take: 20 })).items.map((r: any) => r.guid)).toEqual(guids(ascending.slice(3, 23)));
    const toMs = now - 10 * 86_400_000;
    const bounded = sorted.filter((r) => Number(r.createdAt) >= toMs - 10 * 86_400_000 && Number(r.createdAt) <= toMs);
    const inRange = await page({ fromMs: toMs - 10 * 86_400_000, toMs, take: 1000 });
    expect(inRange.items.map((r: any) => r.guid)).toEqual(guids(bounded));
  });
});

describe('query_logs includeDetail', () => {
  it('adds bodies and redacted headers cut to 4 KiB on a character boundary, flagging detail_truncated', async () => {
    const ws = await newWorkspace(t);
    const secret = 'sk-live-' + newGuid();
    const euro = '€'.repeat(2000); // 6000 bytes
    const big = logRow(ws.organizationGuid, {
      createdAt: BASE + 2,
      requestBody: euro,
      responseBody: '{"ok":true}',
      requestHeaders: { Authorization: `Bearer ${secret}`, 'X-Api-Key': secret, 'svc-internal': secret, 'X-Custom-Secret': secret, accept: 'application/json' },
      responseHeaders: { 'content-type': 'application/json' },
      sensitiveHeaderNames: ['x-custom-secret'],
    });
    const small = logRow(ws.organizationGuid, { createdAt: BASE + 1, requestBody: 'hi', responseBody: 'there' });
    const bare = logRow(ws.organizationGuid, { createdAt: BASE });
    await ingest(t, [big, small, bare]);
    for (const surface of SURFACES) {
      const res = await invoke(t, surface, ws.token, 'query_logs', { includeDetail: true });
      expect(res.status).toBe(200);
      const [b, s, n] = res.body.items;
      expect(Buffer.byteLength(b.request_body)).toBeLessThanOrEqual(4096);
      expect(b.request_body).toBe('€'.repeat(1365)); // 4095 bytes: the 1366th euro would straddle 4096
      expect(b.detail_truncated).toBe(true);
      expect(JSON.parse(b.request_headers)).toEqual({
        Authorization: '[REDACTED]',
        'X-Api-Key': '[REDACTED]',
        'svc-internal': '[REDACTED]',
        'X-Custom-Secret': '[REDACTED]',
        accept: 'application/json',
      });
      expect(JSON.stringify(res.body)).not.toContain(secret);
      expect(s).toMatchObject({ request_body: 'hi', response_body: 'there', request_headers: null, detail_truncated: false });
      expect(n).toMatchObject({ request_body: null, response_body: null, request_headers: null, response_headers: null, detail_truncated: false });
    }
    // The secret never reached ClickHouse at all.
    const raw = await t.runtime.services.clickhouse.client.query({
      query: 'SELECT request_headers FROM call_log_details WHERE organization_guid = {org:String}',
      query_params: { org: ws.organizationGuid },
      format: 'JSONEachRow',
    });
    expect(JSON.stringify(await raw.json())).not.toContain(secret);
  });

  it('gives each row its own detail in any order and under filters', async () => {
    const ws = await newWorkspace(t);
    const user = newGuid();
    const spread = Array.from({ length: 6 }, (_, i) =>
      logRow(ws.organizationGuid, { createdAt: BASE + i * 86_400_000, durationMs: 100 - i, requestBody: `req ${i}`, ...(i % 2 ? { userGuid: user } : {}) }),
    );
    await ingest(t, spread);
    const bodyOf = new Map(spread.map((r) => [r.guid, r.requestBody]));
    const byDuration = await invoke(t, 'rest', ws.token, 'query_logs', { includeDetail: true, orderByColumn: 'duration_ms', orderByDirection: 'asc', take: 3 });
    expect(byDuration.body.items.map((r: any) => r.request_body)).toEqual(['req 5', 'req 4', 'req 3']);
    const filtered = await invoke(t, 'rest', ws.token, 'query_logs', { includeDetail: true, filters: { user_guid: user } });
    expect(filtered.body.items).toHaveLength(3);
    expect(filtered.body.items.every((r: any) => r.request_body === bodyOf.get(r.guid))).toBe(true);
  });

  it('returns detail for a full page of 1000 rows', async () => {
    const ws = await newWorkspace(t);
    await ingest(
      t,
      Array.from({ length: 1001 }, (_, i) => logRow(ws.organizationGuid, { createdAt: BASE + i, requestBody: `req ${i}`, responseBody: 'x'.repeat(5000) })),
    );
    const res = await invoke(t, 'rest', ws.token, 'query_logs', { includeDetail: true, take: 1000 });
    expect(res.body.items).toHaveLength(1000);
    expect(res.body.items[0].request_body).toBe('req 1000');
    expect(res.body.items.every((r: any) => r.response_body.length === 4096 && r.detail_truncated)).toBe(true);
  });
});

describe('query_logs capability', () => {
  it('is refused without exportLogs and allowed with it alone', async () => {
    const ws = await newWorkspace(t);
    const reader = await newMember(t, ws, ['exportLogs']);
    const other = await newMember(t, ws, ['seeAllAlerts']);
    expect((await invoke(t, 'rest', reader.token, 'query_logs', {})).status).toBe(200);
    expect((await invoke(t, 'mcp', other.token, 'query_logs', {})).body.code).toBe('missing_capability');
  });
});

describe('connectionCallSummary', () => {
  it("gives the connection's last successful call and its ten newest errors, scoped to the workspace", async () => {
    const ws = await newWorkspace(t);
    const connection = newGuid();
    const server = newGuid();
    const base = { gatewayConnectionGuid: connection, inboundServerGuid: server };
    const okRows = [logRow(ws.organizationGuid, { ...base, createdAt: BASE + 10 }), logRow(ws.organizationGuid, { ...base, createdAt: BASE + 20 })];
    const errors = Array.from({ length: 12 }, (_, i) =>
      logRow(ws.organizationGuid, { ...base, createdAt: BASE + 100 + i, status: 'error', errorMessage: `failure ${i}`, toolName: i % 2 ? 'echo' : null }),
    );
    const elsewhere = logRow(otherOrg, { ...base, createdAt: BASE + 9999 });
    await ingest(t, [...okRows, ...errors, elsewhere]);
    const summary = await connectionCallSummary(t.runtime.services.clickhouse, ws.organizationGuid, connection);
    expect(summary.lastSuccessfulCallAt).toBe(new Date(BASE + 20).toISOString());
    expect(summary.recentErrors).toHaveLength(10);
    expect(summary.recentErrors[0]).toEqual({
      createdAt: new Date(BASE + 111).toISOString(),
      inboundServerGuid: server,
      toolName: 'echo',
      message: 'failure 11',
      traceId: errors[11]!.traceId,
    });
    expect(summary.recentErrors[1]!.toolName).toBeNull();
    const empty = await connectionCallSummary(t.runtime.services.clickhouse, ws.organizationGuid, newGuid());
    expect(empty).toEqual({ lastSuccessfulCallAt: null, recentErrors: [] });
  });
});
