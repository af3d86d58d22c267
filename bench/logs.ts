/**
 * bench:logs — seeds call logs through the ingest path (default 10M rows in one
 * workspace plus other workspaces' noise), then measures p50/p99 of query_logs
 * for the common shapes twice: through the REST route (auth, validation,
 * serialisation included) and at the store level (queryLogs, what the handler
 * calls). It runs the same queries against a Postgres table with careful indexes
 * at the store level (pg, no HTTP) and prints the ratio per shape: Postgres store
 * vs ClickHouse store (like for like), and Postgres store vs ClickHouse REST (the
 * conservative one: ClickHouse pays the HTTP path, Postgres does not). Also
 * reports ingest rows/s and bytes on disk per thin row, and the load average next
 * to each phase (the machine is shared). Figures, never assertions.
 *
 *   npm run bench:logs -- [--rows 10000000] [--iterations 30] [--pg-url postgres://postgres@127.0.0.1:5432/postgres] [--no-pg]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { queryLogs, type LogQuery } from '../src/core/logs/query-logs.js';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, loadAverage, silentLogger } from './bench-config.js';
import { copyCallLogsToPostgres, openComparisonPostgres, postgresCallLogsBytes } from './postgres-comparison.js';
import { seedBenchWorkspaces } from './seeded-workspaces.js';
import { timeRuns } from './stats.js';
import { queryFloor } from './query-floor.js';
import { describeProbe, logShapes, postAdmin, probeLogs } from './report-shapes.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    iterations: { type: 'string', default: '30' },
    days: { type: 'string', default: '30' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    'no-pg': { type: 'boolean', default: false },
  },
});
const ROWS = Number(values.rows);
const ITER = Number(values.iterations);
const DAYS = Number(values.days);
const out = (line: string) => process.stdout.write(line + '\n');

const { config, dataDir } = benchConfig('logs', { ADMIN_RATE_LIMIT_PER_MINUTE: '100000000' });
const runtime = await openRuntime(config, { logger: silentLogger });
const { services } = runtime;
const app = await buildApp({ services, logger: false as never });
await app.ready();

// 1. Ingest through the one writer.
const seeded = await seedBenchWorkspaces(services, { rows: ROWS, days: DAYS, onProgress: (d) => d % 1_000_000 === 0 && out(`  ingested ${d}`) });
const org = seeded.organizationGuid;
out(
  `ingest: ${ROWS} rows in ${seeded.ingestSeconds.toFixed(1)} s = ${Math.round(ROWS / seeded.ingestSeconds)} rows/s, ${seeded.cpuMicrosPerRow.toFixed(1)} µs of CPU a row (through CallLogWriter, generation included; ${loadAverage()})`,
);

const ch = services.clickhouse.client;
const one = async <T>(query: string, params: Record<string, unknown> = {}): Promise<T> =>
  (await (await ch.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>())[0]!;
const t0 = performance.now();
await ch.command({ query: 'OPTIMIZE TABLE call_logs FINAL' });
out(`optimize final: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const disk = await one<{ rows: string; bytes: string; parts: string }>(
  `SELECT sum(rows) AS rows, sum(bytes_on_disk) AS bytes, count() AS parts FROM system.parts WHERE active AND table = 'call_logs'`,
);
out(
  `disk: call_logs ${disk.rows} rows, ${disk.bytes} bytes in ${disk.parts} parts = ${(Number(disk.bytes) / Number(disk.rows)).toFixed(1)} bytes/row (indexes included)`,
);
const cols = await (
  await ch
    .query({
      query: `SELECT column AS name, sum(column_data_compressed_bytes) AS c FROM system.parts_columns WHERE active AND table = 'call_logs' GROUP BY name ORDER BY c DESC`,
      format: 'JSONEachRow',
    })
    .catch(() => null)
)?.json<{ name: string; c: string }>();
if (cols) out(`  per column bytes/row: ${cols.map((c) => `${c.name}=${(Number(c.c) / Number(disk.rows)).toFixed(1)}`).join(' ')}`);

// 2. Probe values for the filters.
const probe = await probeLogs(services.clickhouse, org, ROWS, 3 * (ITER + 3));
out(`  ${describeProbe(probe, ROWS)}`);
const shapes = logShapes(probe);

const measure = (fn: () => Promise<void>) => timeRuns(fn, ITER);

const chResults: Record<string, { p50: number; p99: number; rows: number }> = {};
const storeResults: Record<string, { p50: number; p99: number }> = {};
out(await queryFloor(services.clickhouse, org, probe.windowTo, ITER));
out(`measuring query_logs (${loadAverage()})`);
for (const [name, shape] of Object.entries(shapes)) {
  const bodyOf = () => (typeof shape === 'function' ? shape() : shape);
  let lastBody = '';
  // Timed until the whole response is in hand; parsing it is the client's work, done after.
  const r = await measure(async () => {
    lastBody = await postAdmin(app, seeded.token, '/api/v1/svc-admin/logs/query', bodyOf());
  });
  chResults[name] = { ...r, rows: (JSON.parse(lastBody) as { items: unknown[] }).items.length };
  // The same query at the store level: what the handler runs, without HTTP, auth and JSON.
  const queryOf = (body: Record<string, unknown>): LogQuery => ({
    filters: (body.filters as LogQuery['filters'] | undefined) ?? {},
    fromMs: body.fromMs as number | undefined,
    toMs: body.toMs as number | undefined,
    orderByColumn: 'created_at',
    orderByDirection: 'desc',
    skip: (body.skip as number | undefined) ?? 0,
    take: (body.take as number | undefined) ?? 100,
    includeDetail: (body.includeDetail as boolean | undefined) ?? false,
  });
  storeResults[name] = await measure(async () => void (await queryLogs(services.clickhouse, org, queryOf(bodyOf()))));
}
out(`measured (${loadAverage()})`);

// 3. The same rows and queries on Postgres.
const pgResults: Record<string, { p50: number; p99: number }> = {};
if (!values['no-pg']) {
  const db = await openComparisonPostgres({ url: values['pg-url'], database: 'bench_logs', dataDir });
  const copy = await copyCallLogsToPostgres(db, services.clickhouse, { details: true });
  const copied = copy.rows;
  out(`postgres (${db.label}): loaded ${copied} rows in ${copy.loadSeconds.toFixed(0)} s, indexes in ${copy.indexSeconds.toFixed(0)} s`);
  const pgShapes: Record<string, { sql: string; params: unknown[] | (() => unknown[]) }> = {};
  const base = `SELECT * FROM call_logs WHERE organization_guid = $1`;
  const order = `ORDER BY created_at DESC, guid DESC`;
  pgShapes.newest_page = { sql: `${base} ${order} LIMIT 101`, params: [org] };
  pgShapes.one_filter = { sql: `${base} AND user_guid = $2 ${order} LIMIT 101`, params: [org, probe.userGuid] };
  pgShapes.three_filters = {
    sql: `${base} AND user_guid = $2 AND inbound_server_guid = $3 AND type = 'tool_call' ${order} LIMIT 101`,
    params: [org, probe.userGuid, probe.serverGuid],
  };
  pgShapes.trace_id = { sql: `${base} AND trace_id = $2 ${order} LIMIT 101`, params: () => [org, probe.nextTrace()] };
  pgShapes.time_window = {
    sql: `${base} AND created_at BETWEEN $2 AND $3 ${order} LIMIT 101`,
    params: [org, new Date(probe.windowTo - 3_600_000), new Date(probe.windowTo)],
  };
  pgShapes.deep_page_50k = { sql: `${base} ${order} LIMIT 101 OFFSET 50000`, params: [org] };
  pgShapes.detail_take_1000 = {
    sql: `SELECT l.*, left(d.request_body, 4096), left(d.response_body, 4096), left(d.request_headers, 4096), left(d.response_headers, 4096) FROM (${base} ${order} LIMIT 1001) l LEFT JOIN call_log_details d ON d.guid = l.guid ORDER BY l.created_at DESC, l.guid DESC`,
    params: [org],
  };
  out(`postgres: measuring (${loadAverage()})`);
  for (const [name, q] of Object.entries(pgShapes))
    pgResults[name] = await measure(async () => void (await db.query(q.sql, typeof q.params === 'function' ? q.params() : q.params)));
  out(`postgres: call_logs with indexes ${((await postgresCallLogsBytes(db)) / copied).toFixed(1)} bytes/row`);
  await db.close();
}

out('');
out(
  `query_logs at ${ROWS} rows, ${ITER} runs each, p50 / p99 ms. ClickHouse through REST and at the store level (queryLogs); Postgres at the store level (pg).`,
);
out(`ratio = Postgres store p50 / ClickHouse store p50 (like for like); conservative = Postgres store p50 / ClickHouse REST p50.`);
out(`${'shape'.padEnd(18)} ${'CH REST'.padStart(15)} ${'CH store'.padStart(15)}   rows | ${'PG store'.padStart(15)} | ratio  conservative`);
const pair = (r: { p50: number; p99: number }) => `${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)}`;
for (const name of Object.keys(shapes)) {
  const c = chResults[name]!;
  const st = storeResults[name]!;
  const p = pgResults[name];
  out(
    `${name.padEnd(18)} ${pair(c)} ${pair(st)} ${String(c.rows).padStart(6)} | ${p ? `${pair(p)} | ${(p.p50 / st.p50).toFixed(1).padStart(5)}x ${(p.p50 / c.p50).toFixed(1).padStart(6)}x` : 'skipped'}`,
  );
}
await app.close();
await runtime.close();
fs.rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
