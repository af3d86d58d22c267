import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_LOG_INSERT_FORMAT, encodeCallLog } from '../src/core/logs/call-log-row.js';
import { THIN_INSERT_COLUMNS } from '../src/core/logs/call-log-schema.js';
import { epochMs } from '../src/forwarder/call-log-row.js';
import { CallLogSource } from '../src/forwarder/call-log-source.js';
import { queryLogs, TRACE_HOURS, USER_SERVER_PAIR } from '../src/core/logs/query-logs.js';
import { listDdlFiles, migrateClickhouse, openClickhouse, renderDdlFile, type ClickhouseStore } from '../src/stores/clickhouse.js';
import { DERIVED_ROLLUPS } from './helpers/derived-rollups.js';

/**
 * The start (UTC) of the Monday on or before `ms`. call_logs is partitioned by week, so rows
 * laid out from it fall into the same weeks' parts, and granules, whatever day the suite runs.
 */
const mondayBefore = (ms: number): number => {
  const day = Math.floor(ms / 86_400_000);
  // Day 0, 1970-01-01, was a Thursday.
  return (day - ((day + 3) % 7)) * 86_400_000;
};

const ORG = '01a21a14-aaf4-72cd-9769-ad62f2cadb8f';

/**
 * Files that add a column the writer's encoder writes today: a store "before" a file
 * has them too, since these tests insert through today's encoder (the service migrates
 * before it writes, so a store never meets a writer newer than its columns).
 */
const ENCODER_COLUMNS = ['0017_call_log_parent_span.sql', '0018_call_log_error_type.sql'];

/**
 * For one describe: a store migrated with the DDL files before `file` (and
 * ENCODER_COLUMNS), as an older version left it; `upgrade(through)` then applies the
 * files after those, up to `through` (default: every one), as an upgrade does.
 */
function storeBefore(file: string): { store: ClickhouseStore; upgrade: (through?: string) => Promise<string[]> } {
  const dirs: string[] = [];
  /** A directory with the DDL files `keep` selects. */
  const ddlDir = (keep: (name: string) => boolean): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-ddl-'));
    dirs.push(dir);
    for (const ddl of listDdlFiles()) if (keep(ddl.name)) fs.writeFileSync(path.join(dir, ddl.name), ddl.sql);
    return dir;
  };
  const db = {
    store: undefined as unknown as ClickhouseStore,
    upgrade: (through?: string) =>
      migrateClickhouse(
        db.store,
        { retentionDays: 30 },
        ddlDir((name) => through === undefined || name <= through),
      ),
  };
  beforeAll(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-upgrade-'));
    dirs.push(dataDir);
    db.store = await openClickhouse({ dataDir });
    await migrateClickhouse(
      db.store,
      { retentionDays: 30 },
      ddlDir((name) => name < file || ENCODER_COLUMNS.includes(name)),
    );
  }, 120_000);
  afterAll(async () => {
    await db.store?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

/**
 * clickhouse/0014 changes call_logs in place (session_id's type, the guid codec, the
 * trace filter, the forwarder's projection): applied to a table that already holds
 * rows, as on an upgrade, nothing is lost and the forwarder and a trace lookup read
 * the rows written before and after it.
 */
/** Encoded call_logs lines as one INSERT through the writer's insert path. */
async function insertLines(store: ClickhouseStore, lines: readonly string[]): Promise<void> {
  await store.insertEncoded({
    table: 'call_logs',
    columns: THIN_INSERT_COLUMNS,
    format: CALL_LOG_INSERT_FORMAT,
    body: { chunks: [Buffer.from(lines.join(''))] },
    settings: { insert_deduplicate: 0 },
  });
}

const UPGRADE = '0014_call_log_storage.sql';

interface Row {
  guid: string;
  trace_id: string;
  session_id: string;
}

/**
 * Rows of call_logs in `db`'s store: INSERTs through the writer's encoder and insert
 * path, the rows as stored, and every row as the forwarder reads them.
 */
function callLogRows(db: { store: ClickhouseStore }) {
  let n = 0;
  const started = Date.now();

  /** One INSERT through the writer's encoder and insert path of `count` rows, two by two sharing a trace, three session ids in turn. */
  async function insertBatch(count: number): Promise<Row[]> {
    const rows: Row[] = [];
    const lines: string[] = [];
    for (let i = 0; i < count; i++, n++) {
      const row = {
        guid: `01a21a14-${String(n).padStart(4, '0')}-7000-8000-000000000000`,
        trace_id: String(Math.floor(n / 2)).padStart(32, '0'),
        session_id: `session-${n % 3}`,
      };
      const encoded = encodeCallLog({
        organizationGuid: ORG,
        guid: row.guid,
        // Within the retention, 13 hours apart: the rows reach two weekly partitions.
        createdAt: started - 20 * 86_400_000 + n * 13 * 3_600_000,
        type: 'tool_call',
        method: 'tools/call',
        toolName: 'echo',
        status: 'ok',
        durationMs: 1,
        traceId: row.trace_id,
        spanId: String(n).padStart(16, '0'),
        sessionId: row.session_id,
      });
      lines.push(encoded.thin);
      rows.push(row);
    }
    await insertLines(db.store, lines);
    return rows;
  }

  async function stored(): Promise<Row[]> {
    const result = await db.store.client.query({
      query: 'SELECT toString(guid) AS guid, trace_id, session_id FROM call_logs ORDER BY guid',
      format: 'JSONEachRow',
    });
    return result.json<Row>();
  }

  /** Every row as the forwarder reads them, in batches of `limit`, from the start. */
  async function forwarded(limit: number): Promise<string[]> {
    const source = new CallLogSource(db.store);
    const horizon = await source.deliveryHorizon(0);
    const guids: string[] = [];
    let after = { at: new Date(0), guid: '' };
    for (;;) {
      const batch = await source.nextBatch(ORG, after, limit, horizon);
      guids.push(...batch.map((r) => r.guid));
      if (batch.length < limit) return guids;
      const last = batch[batch.length - 1]!;
      after = { at: new Date(epochMs(last.ingested_at)), guid: last.guid };
    }
  }

  return { insertBatch, stored, forwarded };
}

describe('clickhouse/0014 on call_logs that hold rows', () => {
  const db = storeBefore(UPGRADE);
  const { insertBatch, stored, forwarded } = callLogRows(db);

  it('keeps every row and session id; the forwarder and a trace lookup read the rows of before and after', async () => {
    const written = [...(await insertBatch(5)), ...(await insertBatch(4)), ...(await insertBatch(3))];
    const byGuid = (rows: Row[]) => [...rows].sort((a, b) => a.guid.localeCompare(b.guid));
    expect(await stored()).toEqual(byGuid(written));
    const orderBefore = await forwarded(4);
    expect(orderBefore).toHaveLength(written.length);

    expect(await db.upgrade(UPGRADE)).toEqual([UPGRADE]);

    const columns = await (
      await db.store.client.query({
        query: "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'call_logs' AND name IN ('guid', 'session_id')",
        format: 'JSONEachRow',
      })
    ).json<{ name: string; type: string }>();
    expect(columns).toEqual([
      { name: 'guid', type: 'UUID' },
      { name: 'session_id', type: 'LowCardinality(String)' },
    ]);
    expect(await stored()).toEqual(byGuid(written));
    // The same ingest order as before the projection was rebuilt, every row once.
    expect(await forwarded(4)).toEqual(orderBefore);

    const later = await insertBatch(2);
    const all = await forwarded(5);
    expect(all.slice(0, orderBefore.length)).toEqual(orderBefore);
    expect(all.slice(orderBefore.length).sort()).toEqual(later.map((r) => r.guid).sort());
    const trace = written[6]!.trace_id;
    const traced = await (
      await db.store.client.query({
        query: 'SELECT toString(guid) AS guid FROM call_logs WHERE organization_guid = {org:String} AND trace_id = {trace:String} ORDER BY guid',
        query_params: { org: ORG, trace },
        format: 'JSONEachRow',
      })
    ).json<{ guid: string }>();
    expect(traced.map((r) => r.guid)).toEqual(written.filter((r) => r.trace_id === trace).map((r) => r.guid));
  });
});

/**
 * clickhouse/0019 swaps the forwarder's projection on a table that holds rows, as on an
 * upgrade: every part gets the counts per INSERT, forwarder_order goes, and the
 * forwarder reads the rows of before and after in the order it read them before.
 */
describe('clickhouse/0019 on call_logs that hold rows', () => {
  const COUNTS = '0019_forwarder_counts.sql';
  const db = storeBefore(COUNTS);
  const { insertBatch, forwarded } = callLogRows(db);

  /** Each projection of call_logs with the number of active parts that hold it, once the table's mutations are done. */
  async function projectionsOfParts(): Promise<Record<string, number>> {
    const { client } = db.store;
    for (let waited = 0; ; waited += 50) {
      const [pending] = await (
        await client.query({ query: "SELECT count() AS n FROM system.mutations WHERE table = 'call_logs' AND NOT is_done", format: 'JSONEachRow' })
      ).json<{ n: string }>();
      if (Number(pending?.n) === 0) break;
      if (waited > 30_000) throw new Error('the mutations of call_logs did not end');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const rows = await (
      await client.query({
        query: `SELECT name, toUInt32(count()) AS parts FROM system.projection_parts
          WHERE database = currentDatabase() AND table = 'call_logs' AND active GROUP BY name ORDER BY name`,
        format: 'JSONEachRow',
      })
    ).json<{ name: string; parts: number }>();
    return Object.fromEntries(rows.map((r) => [r.name, r.parts]));
  }

  const activeParts = async (): Promise<number> => {
    const result = await db.store.client.query({
      query: "SELECT toUInt32(count()) AS n FROM system.parts WHERE database = currentDatabase() AND table = 'call_logs' AND active",
      format: 'JSONEachRow',
    });
    return (await result.json<{ n: number }>())[0]!.n;
  };

  it('builds the counts for the parts written before, drops forwarder_order, and the forwarder reads the same order', async () => {
    const written = [...(await insertBatch(5)), ...(await insertBatch(4)), ...(await insertBatch(3))];
    const orderBefore = await forwarded(4);
    expect([...orderBefore].sort()).toEqual(written.map((r) => r.guid).sort());
    const parts = await activeParts();
    expect(await projectionsOfParts()).toEqual({ forwarder_order: parts });

    expect(await db.upgrade(COUNTS)).toEqual([COUNTS]);

    expect(await projectionsOfParts()).toEqual({ forwarder_counts: await activeParts() });
    // The same order as before, in batches that end inside INSERTs and across them.
    expect(await forwarded(4)).toEqual(orderBefore);
    expect(await forwarded(5)).toEqual(orderBefore);
    const later = await insertBatch(2);
    const all = await forwarded(3);
    expect(all.slice(0, orderBefore.length)).toEqual(orderBefore);
    expect(all.slice(orderBefore.length).sort()).toEqual(later.map((r) => r.guid).sort());
    expect(await projectionsOfParts()).toEqual({ forwarder_counts: await activeParts() });
  });
});

/**
 * clickhouse/0015 and 0016 add summaries of the rollups (the traffic's totals, servers
 * and tools, the people by week), backfilled from them: on rollups that hold rows, as
 * on an upgrade, each summary holds exactly what the rollup it summarises holds for its
 * keys, and the rows inserted after it reach both alike.
 */
describe('clickhouse/0015 and 0016 on usage rollups that hold rows', () => {
  const SUMMARIES = '0015_call_log_usage_summaries.sql' as const;
  const WEEKLY_PEOPLE = '0016_call_log_usage_weekly_people.sql' as const;
  /** Each summary, the rollup it summarises, its time column and its keys. */
  const SUMMARISED = [...DERIVED_ROLLUPS[SUMMARIES], ...DERIVED_ROLLUPS[WEEKLY_PEOPLE]];
  const db = storeBefore(SUMMARIES);
  let n = 0;
  const started = Date.now();

  /** One INSERT of `count` rows 97 minutes apart over three tools of two servers and four users, every fifth an error, durations from 1 ms to about 9 s. */
  async function insertBatch(count: number): Promise<void> {
    const lines: string[] = [];
    for (let i = 0; i < count; i++, n++) {
      lines.push(
        encodeCallLog({
          organizationGuid: ORG,
          guid: `01a21a15-${String(n).padStart(4, '0')}-7000-8000-000000000000`,
          createdAt: started - 10 * 86_400_000 + n * 97 * 60_000,
          type: n % 7 === 0 ? 'tool_list' : 'tool_call',
          method: n % 7 === 0 ? 'tools/list' : 'tools/call',
          toolName: n % 7 === 0 ? undefined : ['echo', 'search', 'fetch'][n % 3],
          inboundServerGuid: n % 3 === 2 ? '01a21a15-0000-7000-8000-00000000000b' : '01a21a15-0000-7000-8000-00000000000a',
          userGuid: `01a21a15-0000-7000-8000-00000000001${n % 4}`,
          teamGuid: `01a21a15-0000-7000-8000-00000000002${n % 2}`,
          gatewayConnectionGuid: `01a21a15-0000-7000-8000-00000000003${n % 4}`,
          status: n % 5 === 0 ? 'error' : 'ok',
          durationMs: (n * 7919) % 9_000,
          requestBytes: 100 + n,
          responseBytes: 1000 + 3 * n,
        }).thin,
      );
    }
    await insertLines(db.store, lines);
  }

  /** A table's measures grouped by `time` and `keys`, the duration arrays merged, in one order. */
  async function measures(table: string, time: string, keys: readonly string[], timeExpr = time): Promise<unknown[]> {
    const by = [time, ...keys].join(', ');
    const result = await db.store.client.query({
      query: `SELECT ${[timeExpr, ...keys].join(', ')}, sum(calls) AS calls, sum(errors) AS errors, sumForEachMerge(durations) AS durations,
        sum(request_bytes_sum) AS request_bytes, sum(response_bytes_sum) AS response_bytes
        FROM ${table} WHERE organization_guid = {org:String} GROUP BY ${by} ORDER BY ${by}`,
      query_params: { org: ORG },
      format: 'JSONEachRow',
    });
    return result.json();
  }

  it('backfills each summary with what its rollup holds, and feeds both alike afterwards', async () => {
    await insertBatch(60);
    await insertBatch(45);
    expect(await db.upgrade(WEEKLY_PEOPLE)).toEqual([SUMMARIES, WEEKLY_PEOPLE]);
    await insertBatch(30);
    for (const { table, source, time, keys, timeFrom } of SUMMARISED) {
      const summary = await measures(table, time, keys);
      expect(summary.length, table).toBeGreaterThan(time === 'week' ? 4 : keys.length ? 10 : 5);
      // The source's rows counted into the summary's time units as its view does.
      expect(summary, table).toEqual(await measures(source, time, keys, timeFrom ? `${timeFrom} AS ${time}` : time));
    }
    // Every call counted once: the daily totals against the raw rows.
    const [calls] = await (
      await db.store.client.query({
        query: 'SELECT sum(calls) AS calls FROM call_log_usage_daily_totals WHERE organization_guid = {org:String}',
        query_params: { org: ORG },
        format: 'JSONEachRow',
      })
    ).json<{ calls: string | number }>();
    expect(Number(calls!.calls)).toBe(135);
  });
});

/**
 * clickhouse/0020 makes call_logs again with 2,048-row granules and a filter over each
 * row's (user, server) pair, taking the old table's parts: on a table that holds rows, as
 * on an upgrade, every row stays once (also when the file runs again, as after a failure
 * past the exchange), the rollups' views keep feeding from the new table, and a page of a
 * rare pair is read through the pair's filter.
 */
describe('clickhouse/0020 on call_logs that hold rows', () => {
  const GRANULES = '0020_call_log_granules.sql';
  const db = storeBefore(GRANULES);
  const user = (i: number) => `01a21a16-0000-7000-8000-0000000001${String(i).padStart(2, '0')}`;
  const server = (i: number) => `01a21a16-0000-7000-8000-0000000002${String(i).padStart(2, '0')}`;
  /** The rare pair: user 40 calls server 6 on one row in 5,000 only (three rows, each in a granule of its own). */
  const RARE = { user_guid: user(40), inbound_server_guid: server(6) };
  const rare: string[] = [];
  let n = 0;
  const firstRowAt = mondayBefore(Date.now() - 12 * 86_400_000);

  /** One INSERT of `count` rows a minute apart: users 0-39 over servers 0-5, and the rare pair. */
  async function insertBatch(count: number): Promise<void> {
    const lines: string[] = [];
    for (let i = 0; i < count; i++, n++) {
      const guid = `01a21a16-${String(Math.floor(n / 10_000)).padStart(4, '0')}-7000-8000-${String(n % 10_000).padStart(12, '0')}`;
      const isRare = n % 5_000 === 17;
      if (isRare) rare.push(guid);
      lines.push(
        encodeCallLog({
          organizationGuid: ORG,
          guid,
          createdAt: firstRowAt + n * 60_000,
          type: 'tool_call',
          method: 'tools/call',
          toolName: 'echo',
          userGuid: isRare ? RARE.user_guid : user(n % 40),
          inboundServerGuid: isRare ? RARE.inbound_server_guid : server(n % 6),
          status: 'ok',
          durationMs: n % 100,
        }).thin,
      );
    }
    await insertLines(db.store, lines);
  }

  const one = async <T>(query: string, params: Record<string, unknown> = {}): Promise<T> =>
    (await (await db.store.client.query({ query, query_params: { org: ORG, ...params }, format: 'JSONEachRow' })).json<T>())[0]!;
  /** The rows of call_logs: how many, and a sum over their guids that any row lost or doubled changes. */
  const contents = () => one<{ rows: string; guids: string }>('SELECT count() AS rows, toString(sum(cityHash64(guid))) AS guids FROM call_logs');
  const rolledUp = async () =>
    Number((await one<{ calls: string }>('SELECT sum(calls) AS calls FROM call_log_usage_daily_totals WHERE organization_guid = {org:String}')).calls);
  const createQuery = async () =>
    (await one<{ q: string }>("SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = 'call_logs'")).q;

  it('keeps every row once, feeds the rollups from the new table, and reads a rare pair through its filter', async () => {
    await insertBatch(6_000);
    await insertBatch(6_000);
    const before = await contents();
    expect(Number(before.rows)).toBe(12_000);
    expect(await createQuery()).not.toContain('index_granularity = 2048');

    expect(await db.upgrade(GRANULES)).toEqual([GRANULES]);
    expect(await contents()).toEqual(before);
    expect(await createQuery()).toMatch(
      /INDEX idx_trace_id trace_id TYPE bloom_filter\(0\.001\) GRANULARITY 4,\s+INDEX idx_span_id span_id TYPE bloom_filter\(0\.01\) GRANULARITY 4,.*INDEX idx_user_server cityHash64\(user_guid, inbound_server_guid\) TYPE bloom_filter.*index_granularity = 2048, min_compress_block_size = 16384/s,
    );
    // A trace lookup is answered through the trace filter built again for the parts written before.
    const { trace } = await one<{ trace: string }>('SELECT trace_id AS trace FROM call_logs ORDER BY created_at LIMIT 1');
    const traced = `SELECT count() AS n FROM call_logs WHERE trace_id = {trace:String} SETTINGS force_data_skipping_indices = 'idx_trace_id'`;
    expect(Number((await one<{ n: string }>(traced, { trace })).n)).toBeGreaterThan(0);

    // The rollups' views follow the name: rows inserted after reach them.
    await insertBatch(3_000);
    expect(await rolledUp()).toBe(15_000);
    const after = await contents();
    expect(Number(after.rows)).toBe(15_000);

    // Run again, as after a failure past the exchange: the same rows, once.
    for (const statement of renderDdlFile(listDdlFiles().find((f) => f.name === GRANULES)!.sql, { retentionDays: 30 })) {
      await db.store.client.command({ query: statement });
    }
    expect(await contents()).toEqual(after);
    expect(await rolledUp()).toBe(15_000);

    // Old parts rewritten in 2,048-row granules with the pair's filter; a rare pair's count skips granules by it.
    await db.store.client.command({ query: 'OPTIMIZE TABLE call_logs FINAL' });
    const pair = { f_user_guid: RARE.user_guid, f_inbound_server_guid: RARE.inbound_server_guid };
    const filtered = `FROM call_logs WHERE organization_guid = {org:String} AND ${USER_SERVER_PAIR}`;
    expect(Number((await one<{ n: string }>(`SELECT count() AS n ${filtered} SETTINGS force_data_skipping_indices = 'idx_user_server'`, pair)).n)).toBe(
      rare.length,
    );
    const plan = (
      await (
        await db.store.client.query({ query: `EXPLAIN indexes = 1 SELECT guid ${filtered}`, query_params: { org: ORG, ...pair }, format: 'TabSeparatedRaw' })
      ).text()
    )
      .split('\n')
      .map((line) => line.trim());
    const granules = plan[plan.indexOf('Name: idx_user_server') + 3]!.match(/^Granules: (\d+)\/(\d+)$/)!;
    expect(Number(granules[1])).toBeLessThan(Number(granules[2]) / 2);

    const page = await queryLogs(db.store, ORG, {
      filters: { ...RARE, type: 'tool_call' },
      orderByColumn: 'created_at',
      orderByDirection: 'desc',
      skip: 0,
      take: 50,
      includeDetail: false,
    });
    expect(page.items.map((r) => r.guid)).toEqual([...rare].reverse());
  });
});

/**
 * clickhouse/0021 keeps the hours each trace has calls in, and query_logs reads a trace's
 * calls within them: on a table that holds rows, as on an upgrade, the hours of the rows
 * written before are backfilled and those of later inserts fed by the view, the pages
 * equal the trace's rows (also after the file runs again, which repeats hours), and a
 * trace's page reads the granules of its hours only.
 */
describe('clickhouse/0021 on call_logs that hold rows', () => {
  const TRACE_HOURS_FILE = '0021_call_log_trace_hours.sql';
  const db = storeBefore(TRACE_HOURS_FILE);
  const started = mondayBefore(Date.now() - 12 * 86_400_000);
  let n = 0;
  /** Each trace's rows: its first two a minute apart, its third five hours later (so two hours). */
  const traceOf = (i: number) => (Math.floor(i / 3) * 7919).toString(16).padStart(32, '0');
  const written: { guid: string; trace: string; at: number }[] = [];

  async function insertBatch(count: number): Promise<void> {
    const lines: string[] = [];
    for (let i = 0; i < count; i++, n++) {
      const guid = `01a21a17-${String(Math.floor(n / 10_000)).padStart(4, '0')}-7000-8000-${String(n % 10_000).padStart(12, '0')}`;
      const at = started + Math.floor(n / 3) * 60_000 + (n % 3 === 2 ? 5 * 3_600_000 : (n % 3) * 60_000);
      written.push({ guid, trace: traceOf(n), at });
      lines.push(
        encodeCallLog({
          organizationGuid: ORG,
          guid,
          createdAt: at,
          type: 'tool_call',
          method: 'tools/call',
          toolName: 'echo',
          status: 'ok',
          durationMs: 5,
          traceId: traceOf(n),
        }).thin,
      );
    }
    await insertLines(db.store, lines);
  }

  /** query_logs' page of a trace against the trace's rows as written, newest first. */
  async function expectPagesOf(traces: readonly string[]): Promise<void> {
    for (const trace of traces) {
      const page = await queryLogs(db.store, ORG, {
        filters: { trace_id: trace.toUpperCase() },
        orderByColumn: 'created_at',
        orderByDirection: 'desc',
        skip: 0,
        take: 100,
        includeDetail: false,
      });
      const expected = written.filter((w) => w.trace === trace).sort((a, b) => b.at - a.at || (a.guid < b.guid ? 1 : -1));
      expect(expected.length).toBe(3);
      expect(page.items.map((r) => r.guid)).toEqual(expected.map((w) => w.guid));
    }
  }
  const sample = (from: number, to: number) => Array.from({ length: 12 }, (_, i) => traceOf(from + Math.floor(((to - from - 3) * i) / 11)));

  it('finds the rows of before and after through their hours, and reads the granules of those hours only', async () => {
    await insertBatch(9_000);
    expect(await db.upgrade(TRACE_HOURS_FILE)).toEqual([TRACE_HOURS_FILE]);
    await expectPagesOf(sample(0, 9_000));
    await insertBatch(6_000);
    await expectPagesOf(sample(9_000, 15_000));
    const create = (await (await db.store.client.query({ query: 'SHOW CREATE TABLE call_logs', format: 'TabSeparatedRaw' })).text()).replace(/\\n/g, ' ');
    expect(create).not.toContain('idx_trace_id');

    // Run again, as after a failure: the hours repeat, the pages do not.
    for (const statement of renderDdlFile(listDdlFiles().find((f) => f.name === TRACE_HOURS_FILE)!.sql, { retentionDays: 30 })) {
      await db.store.client.command({ query: statement });
    }
    await expectPagesOf(sample(0, 15_000));

    await db.store.client.command({ query: 'OPTIMIZE TABLE call_logs FINAL' });
    const trace = traceOf(7_500);
    const plan = (
      await (
        await db.store.client.query({
          query: `EXPLAIN indexes = 1 SELECT guid FROM call_logs WHERE organization_guid = {org:String} AND trace_id = {f_trace_id:String} AND ${TRACE_HOURS}`,
          query_params: { org: ORG, f_trace_id: trace },
          format: 'TabSeparatedRaw',
        })
      ).text()
    )
      .split('\n')
      .map((line) => line.trim());
    const granules = plan
      .slice(plan.indexOf('PrimaryKey'))
      .find((line) => line.startsWith('Granules:'))!
      .match(/^Granules: (\d+)\/(\d+)$/)!;
    expect(Number(granules[1])).toBeLessThanOrEqual(2);
    expect(Number(granules[2])).toBeGreaterThanOrEqual(6);
  });
});
