import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USAGE_ROLLUPS } from '../src/core/logs/usage-rollups.js';
import { z } from 'zod';
import { AppError } from '../src/core/errors.js';
import { newGuid } from '../src/core/ids.js';
import type { CallLogInput } from '../src/core/logs/call-log-row.js';
import { queryScoped } from '../src/core/logs/clickhouse-query.js';
import { USAGE_GROUP_KEYS, usageReport, type UsageGroupKey, type UsageQuery } from '../src/core/logs/usage-report.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type Surface, type TestApp } from './helpers/harness.js';
import { ingest, logRow } from './helpers/call-logs.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
let token: string;
let orgGuid: string;
let otherToken: string;
let rows: CallLogInput[];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Rows span three days starting mid-hour, so windows cross hour and day boundaries. */
const START = Date.UTC(2026, 10, 17, 22, 17, 13, 250);
const SPAN = 3 * DAY;

const snake: Record<UsageGroupKey | 'server_container_guid' | 'trace_id', keyof CallLogInput> = {
  outbound_gateway_guid: 'outboundGatewayGuid',
  inbound_server_guid: 'inboundServerGuid',
  tool_name: 'toolName',
  user_guid: 'userGuid',
  team_guid: 'teamGuid',
  host_guid: 'hostGuid',
  gateway_connection_guid: 'gatewayConnectionGuid',
  type: 'type',
  status: 'status',
  server_container_guid: 'serverContainerGuid',
  trace_id: 'traceId',
};
const valueOf = (row: CallLogInput, key: keyof typeof snake): string | null => {
  const v = row[snake[key]];
  return v === undefined || v === null || v === '' ? null : String(v);
};

/** A deterministic pseudo-random sequence, so a failure can be replayed. */
function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

/** The exact percentile by linear interpolation between closest ranks. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const pos = (sorted.length - 1) * p;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** A report item's measures, in the order the API gives them (contract 8.3). */
const MEASURE_NAMES = ['calls', 'errors', 'p50Ms', 'p95Ms', 'p99Ms', 'requestBytes', 'responseBytes'];

interface Expected {
  calls: number;
  errors: number;
  durations: number[];
  requestBytes: number;
  responseBytes: number;
}

function measure(selected: CallLogInput[]): Expected {
  return {
    calls: selected.length,
    errors: selected.filter((r) => r.status === 'error').length,
    durations: selected.map((r) => r.durationMs).sort((a, b) => a - b),
    requestBytes: selected.reduce((n, r) => n + (r.requestBytes ?? 0), 0),
    responseBytes: selected.reduce((n, r) => n + (r.responseBytes ?? 0), 0),
  };
}

/** Counts and bytes exact; percentiles within 5 % or 1 ms of the exact value (contract 8.3). */
function expectMeasures(actual: any, expected: Expected, where: string): void {
  expect({ where, calls: actual.calls, errors: actual.errors, requestBytes: actual.requestBytes, responseBytes: actual.responseBytes }).toEqual({
    where,
    calls: expected.calls,
    errors: expected.errors,
    requestBytes: expected.requestBytes,
    responseBytes: expected.responseBytes,
  });
  for (const [field, p] of [
    ['p50Ms', 0.5],
    ['p95Ms', 0.95],
    ['p99Ms', 0.99],
  ] as const) {
    const exact = percentile(expected.durations, p);
    const tolerance = Math.max(1, exact * 0.05);
    if (Math.abs(actual[field] - exact) > tolerance) throw new Error(`${where}: ${field} ${actual[field]} is not within ${tolerance} of ${exact}`);
  }
}

const inWindow = (fromMs: number, toMs: number) => (r: CallLogInput) => Number(r.createdAt) >= fromMs && Number(r.createdAt) <= toMs;

/** The expected items of a report: grouped in JS from the same rows, ordered as the contract says. */
function expectedItems(selected: CallLogInput[], groupBy: UsageGroupKey[], interval?: 'minute' | 'hour' | 'day') {
  const size = interval ? { minute: 60_000, hour: HOUR, day: DAY }[interval] : 0;
  const groups = new Map<string, { bucket?: string; keys: (string | null)[]; rows: CallLogInput[] }>();
  for (const r of selected) {
    const bucket = interval ? new Date(Math.floor(Number(r.createdAt) / size) * size).toISOString() : undefined;
    const keys = groupBy.map((k) => valueOf(r, k));
    const id = JSON.stringify([bucket, keys]);
    const g = groups.get(id) ?? { bucket, keys, rows: [] };
    g.rows.push(r);
    groups.set(id, g);
  }
  return [...groups.values()].sort(
    (a, b) =>
      (a.bucket ?? '').localeCompare(b.bucket ?? '') ||
      b.rows.length - a.rows.length ||
      a.keys.reduce<number>((c, k, i) => c || (k ?? '').localeCompare(b.keys[i] ?? ''), 0),
  );
}

async function report(input: Record<string, unknown>, surface: Surface = 'rest', as = token) {
  const res = await invoke(t, surface, as, 'get_usage_report', input);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Checks one report's items and totals against the rows it selects. */
async function checkReport(
  input: {
    fromMs: number;
    toMs: number;
    groupBy?: UsageGroupKey[];
    interval?: 'minute' | 'hour' | 'day';
    filters?: Record<string, string>;
  },
  of: { rows: CallLogInput[]; token: string } = { rows, token },
) {
  const norm = (key: string, v: string | null) => (key.endsWith('_guid') || key === 'trace_id' ? v?.toLowerCase() : v);
  const selected = of.rows
    .filter(inWindow(input.fromMs, input.toMs))
    .filter((r) => Object.entries(input.filters ?? {}).every(([k, v]) => norm(k, valueOf(r, k as keyof typeof snake)) === norm(k, v)));
  expect(selected.length, 'a filter that selects nothing proves little').toBeGreaterThan(0);
  const body = await report({ ...input, take: 10_000 }, 'rest', of.token);
  const where = JSON.stringify(input);
  expectMeasures(body.totals, measure(selected), `${where} totals`);
  const expected = expectedItems(selected, input.groupBy ?? [], input.interval);
  expect(body.items.length, where).toBe(expected.length);
  expect(body.nextSkip).toBeNull();
  // Ties on calls may order either way only when the group values tie too, which they cannot.
  expected.forEach((g, i) => {
    const item = body.items[i];
    // The bucket, the keys in groupBy order, then the measures.
    expect(Object.keys(item), where).toEqual([...(input.interval ? ['bucket'] : []), ...(input.groupBy ?? []), ...MEASURE_NAMES]);
    if (input.interval) expect(item.bucket, where).toBe(g.bucket);
    (input.groupBy ?? []).forEach((k, j) => expect(item[k], `${where} item ${i} ${k}`).toBe(g.keys[j]));
    expectMeasures(item, measure(g.rows), `${where} item ${i}`);
  });
}

beforeAll(async () => {
  t = await startTestApp();
  const ws = await newWorkspace(t);
  token = ws.token;
  orgGuid = ws.organizationGuid;
  const other = await newWorkspace(t);
  otherToken = other.token;
  const random = lcg(42);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
  const gateways = [newGuid(), newGuid()];
  const servers = [newGuid(), newGuid(), newGuid()];
  const users = [newGuid(), newGuid(), newGuid(), newGuid()];
  const teams = [newGuid(), newGuid()];
  const tools = ['echo', 'search', 'fetch', 'add'];
  rows = Array.from({ length: 1500 }, (_, i) => {
    const user = i % 4;
    const status = random() < 0.15 ? 'error' : 'ok';
    return logRow(ws.organizationGuid, {
      createdAt: START + Math.floor(random() * SPAN),
      // Long-tailed durations: most calls fast, a few slow.
      durationMs: Math.floor(5 + 40 * random() + (random() < 0.05 ? 2000 * random() : 0)),
      requestBytes: Math.floor(random() * 5000),
      responseBytes: Math.floor(random() * 50_000),
      type: random() < 0.8 ? 'tool_call' : pick(['tool_list', 'resource_read', 'prompt_get'] as const),
      toolName: random() < 0.9 ? pick(tools) : null,
      status,
      errorMessage: status === 'error' ? 'boom' : null,
      outboundGatewayGuid: pick(gateways),
      inboundServerGuid: pick(servers),
      userGuid: users[user],
      teamGuid: teams[user % 2],
      hostGuid: random() < 0.7 ? gateways[0] : null,
      gatewayConnectionGuid: users[user],
    });
  });
  // The other workspace's rows share every value and window: none may count.
  const noise = rows.slice(0, 200).map((r) => ({ ...r, organizationGuid: other.organizationGuid, guid: newGuid() }));
  await ingest(t, [...rows, ...noise]);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

describe('get_usage_report exactness', () => {
  it('totals over the whole span and over a window cut mid-hour at both ends', async () => {
    await checkReport({ fromMs: START - DAY, toMs: START + SPAN + DAY });
    await checkReport({ fromMs: START + 5 * HOUR + 123_456, toMs: START + 2 * DAY + 17 * 60_000 + 999 });
  });

  it.each(USAGE_GROUP_KEYS.map((k) => [k]))('grouped by %s', async (key) => {
    await checkReport({ fromMs: START + 3 * HOUR + 1, toMs: START + 2 * DAY + 30 * 60_000, groupBy: [key] });
  });

  it('grouped by three keys with hour buckets, window on exact hour boundaries', async () => {
    const from = Math.ceil(START / HOUR) * HOUR;
    await checkReport({ fromMs: from, toMs: from + 30 * HOUR - 1, groupBy: ['inbound_server_guid', 'tool_name', 'status'], interval: 'hour' });
  });

  it('day buckets over the whole span, and minute buckets over two hours', async () => {
    await checkReport({ fromMs: START - DAY, toMs: START + SPAN + DAY, interval: 'day', groupBy: ['outbound_gateway_guid'] });
    await checkReport({ fromMs: START + DAY, toMs: START + DAY + 2 * HOUR, interval: 'minute' });
  });

  it('minute buckets of one gateway, and of every gateway, over a day and a half cut mid-minute at both ends (the minute rollup and raw rows)', async () => {
    const window = { fromMs: START + 2 * HOUR + 61_234, toMs: START + 38 * HOUR + 17_001, interval: 'minute' as const };
    await checkReport({ ...window, filters: { outbound_gateway_guid: rows[7]!.outboundGatewayGuid! } });
    await checkReport({ ...window, groupBy: ['outbound_gateway_guid'] });
  });

  it('the partial minutes at both ends of a window the minute rollup serves, with rows on either side of each cut, in a workspace of its own', async () => {
    const ws = await newWorkspace(t);
    const random = lcg(11);
    const gateways = [newGuid(), newGuid()];
    // A window from 20 s into a minute to 45 s into a minute three hours later: rows in the
    // minutes around each cut, before and after it, and a few in the whole minutes between.
    const from = Math.floor((START + 3 * DAY) / 60_000) * 60_000 + 20_000;
    const to = from + 3 * HOUR + 25_000;
    const near = (cut: number) => cut - 40_000 + Math.floor(random() * 80_000);
    const times = [
      ...Array.from({ length: 80 }, () => near(from)),
      ...Array.from({ length: 80 }, () => near(to)),
      ...Array.from({ length: 60 }, () => from + Math.floor(random() * (to - from))),
    ];
    const edges = times.map((createdAt, i) => {
      const status = random() < 0.2 ? 'error' : 'ok';
      return logRow(ws.organizationGuid, {
        createdAt,
        durationMs: Math.floor(1 + 50 * random() + (random() < 0.1 ? 4000 * random() : 0)),
        requestBytes: Math.floor(random() * 3000),
        responseBytes: Math.floor(random() * 30_000),
        status,
        errorMessage: status === 'error' ? 'boom' : null,
        outboundGatewayGuid: gateways[i % 2],
      });
    });
    await ingest(t, edges);
    const of = { rows: edges, token: ws.token };
    const window = { fromMs: from, toMs: to };
    await checkReport({ ...window, interval: 'minute', filters: { outbound_gateway_guid: gateways[0]! } }, of);
    await checkReport({ ...window, interval: 'minute', groupBy: ['outbound_gateway_guid'] }, of);
    await checkReport(window, of);
  });

  it('filters, including ones only the raw rows hold (trace_id, server_container_guid)', async () => {
    const row = rows[100]!;
    const win = { fromMs: START - DAY, toMs: START + SPAN + DAY };
    await checkReport({ ...win, filters: { status: 'error' }, groupBy: ['tool_name'] });
    await checkReport({ ...win, filters: { tool_name: 'search', outbound_gateway_guid: row.outboundGatewayGuid! }, groupBy: ['user_guid'], interval: 'day' });
    // Guids are matched case-insensitively: the upper-case filter selects the stored lower-case rows.
    await checkReport({ ...win, filters: { inbound_server_guid: row.inboundServerGuid!.toUpperCase() } });
    await checkReport({ ...win, filters: { trace_id: row.traceId! } });
    await checkReport({ ...win, filters: { server_container_guid: row.serverContainerGuid!, type: 'tool_call' }, interval: 'hour' });
  });

  it('an empty window and a window before any row: no items, zero totals', async () => {
    for (const w of [
      { fromMs: START + SPAN + DAY, toMs: START + SPAN + 2 * DAY },
      { fromMs: 0, toMs: START - 1 },
    ]) {
      // With keys and buckets, and without either (one group: it was an item of zeros).
      for (const shape of [{ groupBy: ['tool_name'], interval: 'hour' }, {}]) {
        const body = await report({ ...w, ...shape });
        expect(body.items, JSON.stringify(shape)).toEqual([]);
        expect(body.totals).toEqual({ calls: 0, errors: 0, p50Ms: 0, p95Ms: 0, p99Ms: 0, requestBytes: 0, responseBytes: 0 });
        expect(body.nextSkip).toBeNull();
      }
    }
  });

  it('by person over weeks (the people by week, by day, by hour and raw rows), in a workspace of its own', async () => {
    const ws = await newWorkspace(t);
    const random = lcg(7);
    const people = Array.from({ length: 5 }, () => newGuid());
    // 25 days from 13:00 UTC: at least two whole weeks from the epoch (Thursday to Wednesday) lie inside.
    const from = Math.floor((START - 40 * DAY) / DAY) * DAY + 13 * HOUR;
    const weeks = Array.from({ length: 600 }, (_, i) =>
      logRow(ws.organizationGuid, {
        createdAt: from + Math.floor(random() * 25 * DAY),
        durationMs: Math.floor(3 + 60 * random() + (random() < 0.05 ? 3000 * random() : 0)),
        requestBytes: Math.floor(random() * 4000),
        responseBytes: Math.floor(random() * 40_000),
        status: random() < 0.1 ? 'error' : 'ok',
        userGuid: people[i % 5],
        teamGuid: people[i % 2],
        gatewayConnectionGuid: people[i % 5],
      }),
    );
    await ingest(t, weeks);
    const of = { rows: weeks, token: ws.token };
    await checkReport({ fromMs: from + 12_345, toMs: from + 25 * DAY - 7 * HOUR - 1 }, of);
    await checkReport({ fromMs: from + 12_345, toMs: from + 25 * DAY - 7 * HOUR - 1, groupBy: ['user_guid'] }, of);
    await checkReport(
      { fromMs: from + 30 * HOUR + 999, toMs: from + 24 * DAY, groupBy: ['team_guid', 'user_guid'], filters: { gateway_connection_guid: people[3]! } },
      of,
    );
  });

  it('pages with skip/take and nextSkip', async () => {
    const input = { fromMs: START - DAY, toMs: START + SPAN + DAY, groupBy: ['user_guid', 'tool_name'] };
    const all = await report({ ...input, take: 10_000 });
    const first = await report({ ...input, take: 5 });
    const second = await report({ ...input, take: 5, skip: 5 });
    expect(first.nextSkip).toBe(5);
    expect([...first.items, ...second.items]).toEqual(all.items.slice(0, 10));
    expect(first.totals).toEqual(all.totals);
    // A page past the last group still has the totals.
    const past = await report({ ...input, take: 5, skip: 10_000 });
    expect(past.items).toEqual([]);
    expect(past.nextSkip).toBeNull();
    expect(past.totals).toEqual(all.totals);
  });
});

describe.each(SURFACES)('get_usage_report on %s', (surface) => {
  it('defaults to the last 24 hours, which hold none of these rows', async () => {
    const body = await report({}, surface);
    expect(body.totals.calls).toBe(0);
    expect(body).toMatchObject({ skip: 0, take: 100, nextSkip: null });
  });

  it("never counts another workspace's rows", async () => {
    const window = { fromMs: START - DAY, toMs: START + SPAN + DAY };
    const body = await report(window, surface, otherToken);
    expect(body.totals.calls).toBe(200);
  });

  it.each([
    [{ groupBy: ['session_id'] }, 'groupBy.0'],
    [{ groupBy: ['tool_name', 'type', 'status', 'user_guid'] }, 'groupBy'],
    [{ groupBy: ['tool_name', 'tool_name'] }, 'groupBy'],
    [{ interval: 'week' }, 'interval'],
    [{ fromMs: 10, toMs: 5 }, 'fromMs'],
    [{ take: 10_001 }, 'take'],
    [{ take: 0 }, 'take'],
    [{ filters: { session_id: 'x' } }, 'filters.session_id'],
    [{ filters: { status: 'maybe' } }, 'filters.status'],
  ])('refuses %j with a 400 naming %s', async (input, path) => {
    const res = await invoke(t, surface, token, 'get_usage_report', input);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: any) => e.path)).toContain(path);
  });

  it('needs viewUsageReports', async () => {
    const member = await newMember(t, { organizationGuid: orgGuid }, []);
    const res = await invoke(t, surface, member.token, 'get_usage_report', {});
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'missing_capability', capability: 'viewUsageReports' });
  });
});

describe('the usage rollups', () => {
  it.each(USAGE_ROLLUPS.map((r) => [r.table]))('%s is fed at ingest with every row of the workspace', async (table) => {
    const res = await t.runtime.services.clickhouse.client.query({
      query: `SELECT sum(calls) AS calls, sum(errors) AS errors FROM ${table} WHERE organization_guid = {org:String}`,
      query_params: { org: orgGuid },
      format: 'JSONEachRow',
    });
    const [row] = await res.json<{ calls: string | number; errors: string | number }>();
    expect(Number(row!.calls)).toBe(rows.length);
    expect(Number(row!.errors)).toBe(rows.filter((r) => r.status === 'error').length);
  });
});

/**
 * Every ClickHouse read is bounded (clickhouse-query.ts). A bound is made tiny here
 * (max_rows_to_read: 1, which any report over these rows exceeds): the answer is a
 * problem the caller can act on, never a 500, and the bound ends with its query.
 */
describe('bounds on the reads', () => {
  const report: UsageQuery = { fromMs: START, toMs: START + SPAN, filters: {}, groupBy: ['tool_name'], skip: 0, take: 100 };
  const store = () => t.runtime.services.clickhouse;

  it('answers a report over its bounds with a 400 naming the window to narrow', async () => {
    const err = await usageReport(store(), orgGuid, report, { max_rows_to_read: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    expect((err as AppError).toProblem()).toMatchObject({ code: 'validation_failed', errors: [{ path: 'fromMs' }] });
    // The bound was the query's own: the same report answers after it.
    const answered = await usageReport(store(), orgGuid, report);
    expect(answered.totals.calls).toBe(rows.filter(inWindow(report.fromMs, report.toMs)).length);
  });

  it('answers a read with nothing to narrow over its bounds with a 503', async () => {
    const err = await queryScoped(store(), orgGuid, {
      tag: 'test.bounds',
      sql: 'SELECT count() AS n FROM call_logs WHERE organization_guid = {org:String}',
      row: z.object({ n: z.coerce.number() }),
      settings: { max_rows_to_read: 1 },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).toProblem()).toMatchObject({ code: 'unavailable', status: 503 });
  });

  it("keeps a read's tag and bounds to the read: the next statement on the connection has neither", async () => {
    await usageReport(store(), orgGuid, report);
    const settings = z.object({ tag: z.string(), maxResultRows: z.coerce.number(), maxExecutionTime: z.coerce.number() });
    const probe = async () => {
      const res = await store().client.query({
        query: `SELECT getSetting('log_comment') AS tag, getSetting('max_result_rows') AS maxResultRows, getSetting('max_execution_time') AS maxExecutionTime`,
        format: 'JSONEachRow',
      });
      return settings.parse((await res.json())[0]);
    };
    const after = await probe();
    expect(after).toEqual({ tag: '', maxResultRows: 0, maxExecutionTime: 0 });
    // The same read tagged as it runs: the tag and the bounds are the statement's own.
    const [own] = await queryScoped(store(), orgGuid, {
      tag: 'test.own_settings',
      sql: `SELECT getSetting('log_comment') AS tag, getSetting('max_result_rows') AS maxResultRows, getSetting('max_execution_time') AS maxExecutionTime
        FROM call_logs WHERE organization_guid = {org:String} LIMIT 1`,
      row: settings,
      settings: { max_result_rows: 7 },
    });
    expect(own).toEqual({ tag: 'test.own_settings', maxResultRows: 7, maxExecutionTime: 20 });
    expect(await probe()).toEqual(after);
  });
});
