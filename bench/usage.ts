/**
 * bench:usage — seeds call logs through the ingest path (one workspace plus a tenth as
 * many rows of noise in three others), then times the six report shapes of issue 16
 * through the REST route (get_usage_report: auth, validation, both ClickHouse queries,
 * serialisation) and the same reports as SQL on Postgres holding the same rows with
 * the indexes a deployment would create (bench/postgres-comparison.ts), p50/p99 of
 * `--runs` runs each, in the same run. Before them, the run's per-query floor
 * (bench/query-floor.ts), what any read costs this hour. Prints the ratio Postgres / ClickHouse per shape
 * and the bytes per row on disk of both, and, at the store level in the same run, each shape read through the
 * hourly rollup alone against every rollup (`--no-postgres` stops there). Figures, never assertions.
 *
 * `--keep` leaves the data directory in place and prints it; `--data-dir` measures
 * again the rows such a run left there, without seeding (the windows then end at the
 * newest row instead of "now").
 *
 * Postgres is the server at DATABASE_URL when it is set (a database bench_usage is
 * created there and dropped at the end), otherwise PGlite in this process.
 *
 *   npm run bench:usage -- [--rows 10000000] [--runs 20] [--days 30] [--users 300] [--no-postgres] [--keep] [--data-dir /tmp/bench-usage-x]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, loadAverage, silentLogger } from './bench-config.js';
import { queryFloor } from './query-floor.js';
import { copyCallLogsToPostgres, openComparisonPostgres, postgresCallLogsBytes } from './postgres-comparison.js';
import { insertPathFigure, reopenBenchWorkspace, seedBenchWorkspaces } from './seeded-workspaces.js';
import { median, timeRuns } from './stats.js';
import { usageReport, type UsageGroupKey } from '../src/core/logs/usage-report.js';
import { USAGE_ROLLUPS } from '../src/core/logs/usage-rollups.js';
import { movingWindows, postAdmin, usageBody, usageShapes, type UsageShape } from './report-shapes.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    runs: { type: 'string', default: '20' },
    days: { type: 'string', default: '30' },
    users: { type: 'string', default: '300' },
    'no-postgres': { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const DAYS = Number(values.days);
const out = (line: string) => process.stdout.write(line + '\n');

const reused = values['data-dir'];
const { config, dataDir } = benchConfig('usage', { ADMIN_RATE_LIMIT_PER_MINUTE: '100000000', ...(reused ? { DATA_DIR: reused } : {}) });
const runtime = await openRuntime(config, { logger: silentLogger });
const { services } = runtime;
const app = await buildApp({ services, logger: false as never });
await app.ready();

// 1. Ingest through the one writer (or reopen the workspace a kept run left, with a new token).
const seeded = reused ? { ...(await reopenBenchWorkspace(services, 'bench-usage')), noiseRows: NaN } : await seed();
const org = seeded.organizationGuid;

async function seed() {
  const made = await seedBenchWorkspaces(services, {
    rows: ROWS,
    days: DAYS,
    users: Number(values.users),
    onProgress: (d) => d % 1_000_000 === 0 && out(`  ingested ${d}`),
  });
  out(
    `ingest: ${ROWS} rows in ${made.ingestSeconds.toFixed(1)} s = ${Math.round(ROWS / made.ingestSeconds)} rows/s, ${made.cpuMicrosPerRow.toFixed(1)} µs of CPU a row ` +
      `(seed-logs through CallLogWriter, generation included; ${loadAverage()}); plus ${made.noiseRows} rows in three other workspaces`,
  );
  out(await insertPathFigure(services, made.organizationGuid));
  return made;
}

/** Closes the service and removes the data directory unless `--keep` (a `--data-dir` one is left as it was). */
async function finish(): Promise<never> {
  await app.close();
  await runtime.close();
  if (values.keep) out(`data directory kept: --data-dir ${reused ?? dataDir}`);
  // With --data-dir, dataDir is the empty one benchConfig made and the service never used.
  if (reused || !values.keep) fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
}

// 2. Storage, after the merges a table gets within minutes of an insert anyway.
const ch = services.clickhouse.client;
const rowsOf = async <T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> =>
  (await ch.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
const t0 = performance.now();
// The trace hours (clickhouse/0021) are what the trace_id index is on the Postgres side: counted with the table.
const STORED = ['call_logs', 'call_log_trace_hours', ...USAGE_ROLLUPS.map((r) => r.table)];
for (const table of STORED) await ch.command({ query: `OPTIMIZE TABLE ${table} FINAL` });
out(`optimize final (call_logs, its trace hours and the usage rollups): ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const parts = await rowsOf<{ table: string; rows: string; bytes: string }>(
  `SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes FROM system.parts WHERE active AND table IN {tables:Array(String)} GROUP BY table ORDER BY table`,
  { tables: STORED },
);
const part = (table: string) => parts.find((p) => p.table === table) ?? { rows: '0', bytes: '0' };
const rawRows = Number(part('call_logs').rows);
const chBytes = parts.reduce((sum, p) => sum + Number(p.bytes), 0);
for (const p of parts)
  out(
    `clickhouse disk: ${p.table.padEnd(28)} ${String(p.bytes).padStart(11)} bytes in ${String(p.rows).padStart(9)} rows (${(Number(p.bytes) / rawRows).toFixed(2)} bytes per call_logs row)`,
  );
out(`clickhouse disk, call_logs, its trace hours and every rollup: ${(chBytes / rawRows).toFixed(1)} bytes per call_logs row`);

// 3. The six shapes, over windows that end at "now" (bench/report-shapes.ts).
const busiestGateway = (
  await rowsOf<{ g: string }>(
    `SELECT outbound_gateway_guid AS g FROM call_logs WHERE organization_guid = {org:String} GROUP BY g ORDER BY count() DESC LIMIT 1`,
    { org },
  )
)[0]!.g;
const shapes = usageShapes(busiestGateway);
// Kept rows end when their seeding did: the windows end at the newest row, as they would at "now" right after seeding.
const newestMs = async () =>
  Number(
    (await rowsOf<{ ms: string }>(`SELECT toUnixTimestamp64Milli(max(created_at)) AS ms FROM call_logs WHERE organization_guid = {org:String}`, { org }))[0]!
      .ms,
  );
const windows = movingWindows(reused ? await newestMs() : undefined);

interface Result {
  p50: number;
  p99: number;
  items: number;
  calls: number;
  p50Ms: number;
}
const chResults: Record<string, Result> = {};
out(await queryFloor(services.clickhouse, org, await newestMs(), RUNS));
out(`measuring get_usage_report through REST (${loadAverage()})`);
for (const [name, shape] of Object.entries(shapes)) {
  let last = '';
  windows.reset();
  const r = await timeRuns(async () => {
    last = await postAdmin(app, seeded.token, '/api/v1/svc-admin/reports/usage', usageBody(shape, windows.of(shape)));
  }, RUNS);
  const body = JSON.parse(last) as { items: unknown[]; totals: { calls: number; p50Ms: number } };
  chResults[name] = { ...r, items: body.items.length, calls: body.totals.calls, p50Ms: body.totals.p50Ms };
}
out(`measured (${loadAverage()}); through REST, p50 / p99 ms:`);
for (const [name, r] of Object.entries(chResults))
  out(`  ${name.padEnd(20)} ${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)}  (${r.items} items)`);

// 3b. What the daily, people and minute rollups (clickhouse/0011) bring, in this run: each shape at the store
// level (usageReport), reading the hourly rollup alone (what reports read before them) and every rollup, alternating.
const HOURLY_ONLY = USAGE_ROLLUPS.filter((r) => r.table === 'call_log_usage_hourly');
out(`store level, hourly rollup alone vs every rollup, runs alternating (${loadAverage()}); p50 ms`);
for (const [name, shape] of Object.entries(shapes)) {
  const times: Record<'hourly' | 'all', number[]> = { hourly: [], all: [] };
  windows.reset();
  for (let i = 0; i < RUNS + 3; i++) {
    const window = windows.of(shape);
    const query = { ...window, filters: shape.filters ?? {}, groupBy: shape.groupBy as UsageGroupKey[], interval: shape.interval, skip: 0, take: shape.take };
    for (const [variant, rollups] of [
      ['hourly', HOURLY_ONLY],
      ['all', USAGE_ROLLUPS],
    ] as const) {
      const started = performance.now();
      await usageReport(services.clickhouse, org, query, {}, rollups);
      if (i >= 3) times[variant].push(performance.now() - started);
    }
  }
  const [hourly, all] = [median(times.hourly), median(times.all)];
  out(`  ${name.padEnd(20)} hourly alone ${hourly.toFixed(1).padStart(7)}   every rollup ${all.toFixed(1).padStart(7)}   ${(hourly / all).toFixed(1)}x`);
}
if (values['no-postgres']) await finish();

// 4. The same reports as SQL on Postgres: items and totals, side by side as the service runs them.
const db = await openComparisonPostgres({ url: process.env.DATABASE_URL, database: 'bench_usage', dataDir, connections: 2 });
const copy = await copyCallLogsToPostgres(db, services.clickhouse, { details: false });
out(`postgres (${db.label}): loaded ${copy.rows} rows in ${copy.loadSeconds.toFixed(0)} s, indexes in ${copy.indexSeconds.toFixed(0)} s`);
const pgBytes = await postgresCallLogsBytes(db);
const MEASURES = `count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
  percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ms) AS q, sum(request_bytes) AS request_bytes, sum(response_bytes) AS response_bytes`;
const GUID_KEYS = new Set(['outbound_gateway_guid', 'inbound_server_guid', 'user_guid', 'team_guid', 'host_guid', 'gateway_connection_guid']);
function pgReport(shape: UsageShape): { items: string; totals: string; params: () => unknown[] } {
  const filters = Object.entries(shape.filters ?? {});
  const where = [
    'organization_guid = $1',
    'created_at >= $2::timestamptz',
    'created_at <= $3::timestamptz',
    ...filters.map(([key], i) => `${key} = $${i + 4}${GUID_KEYS.has(key) ? '::uuid' : ''}`),
  ].join(' AND ');
  const groups = [...(shape.interval ? [`date_trunc('${shape.interval}', created_at, 'UTC')`] : []), ...shape.groupBy];
  const select = [...groups.map((g, i) => `${g} AS g${i}`), MEASURES].join(', ');
  const groupBy = groups.length ? `GROUP BY ${groups.map((_, i) => `g${i}`).join(', ')}` : '';
  const order = [...(shape.interval ? ['g0'] : []), 'calls DESC', ...shape.groupBy.map((_, i) => `g${i + (shape.interval ? 1 : 0)}`)].join(', ');
  return {
    items: `SELECT ${select} FROM call_logs WHERE ${where} ${groupBy} ORDER BY ${order} LIMIT ${shape.take + 1}`,
    totals: `SELECT ${MEASURES} FROM call_logs WHERE ${where}`,
    params: () => {
      const w = windows.of(shape);
      return [org, new Date(w.fromMs).toISOString(), new Date(w.toMs).toISOString(), ...filters.map(([, v]) => v)];
    },
  };
}
const pgResults: Record<string, Result> = {};
out(`postgres: measuring (${loadAverage()})`);
for (const [name, shape] of Object.entries(shapes)) {
  const q = pgReport(shape);
  let last: [unknown[], { calls: number | string; q: number[] }[]] = [[], []];
  windows.reset(); // the same windows as the REST runs
  const r = await timeRuns(async () => {
    const params = q.params();
    last = (await Promise.all([db.query(q.items, params), db.query(q.totals, params)])) as typeof last;
  }, RUNS);
  pgResults[name] = { ...r, items: Math.min(last[0].length, shape.take), calls: Number(last[1][0]!.calls), p50Ms: last[1][0]!.q?.[0] ?? 0 };
}
out(`postgres: measured (${loadAverage()})`);
await db.close();

// 5. The table.
out('');
out(
  `get_usage_report at ${ROWS} rows (${Number.isNaN(seeded.noiseRows) ? 'a kept directory' : `+${seeded.noiseRows} noise`}), ${RUNS} runs each, p50 / p99 ms. ClickHouse: through REST. Postgres: ${db.label}, SQL only.`,
);
out(`ratio = Postgres p50 / ClickHouse REST p50. check: both stores counted the same calls and items, and their p50 durations agree within 5 %.`);
out(`${'shape'.padEnd(20)} ${'CH REST'.padStart(15)}  items | ${'Postgres'.padStart(17)} | ratio | check`);
const pair = (r: Result) => `${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)}`;
for (const name of Object.keys(shapes)) {
  const c = chResults[name]!;
  const p = pgResults[name]!;
  const same = c.calls === p.calls && c.items === p.items && Math.abs(c.p50Ms - p.p50Ms) <= Math.max(1, 0.05 * p.p50Ms);
  out(
    `${name.padEnd(20)} ${pair(c)} ${String(c.items).padStart(6)} | ${pair(p).padStart(17)} | ${(p.p50 / c.p50).toFixed(1).padStart(4)}x | ${same ? 'ok' : `DIFFERS (calls ${c.calls}/${p.calls}, items ${c.items}/${p.items}, p50 ${c.p50Ms}/${p.p50Ms} ms)`}`,
  );
}
const pgRows = copy.rows;
out(
  `storage per row: ClickHouse ${(chBytes / rawRows).toFixed(1)} bytes (call_logs, its trace hours and every rollup), Postgres ${(pgBytes / pgRows).toFixed(1)} bytes (call_logs with indexes): ` +
    `${(pgBytes / pgRows / (chBytes / rawRows)).toFixed(1)}x smaller`,
);
await finish();
