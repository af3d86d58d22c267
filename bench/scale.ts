/**
 * bench:scale — issue 16 at scale: seeds `--rows` call-log rows (default 100M, plus a
 * tenth as many in three other workspaces) through the ingest path on the embedded
 * store, then times through REST the six get_usage_report shapes and the seven
 * query_logs shapes of bench:usage and bench:logs (bench/report-shapes.ts), p50/p99 of
 * `--runs` each; then the same again while the insert path alone runs at full speed
 * into another workspace (the floor of the next pass: segment bodies made beforehand),
 * while `--ingest-rows` more rows are ingested into another workspace, with the ratio of
 * each shape's p99 under ingest to its quiet p99,
 * and once more while rows go in at `--ingest-rate` a second (default 5,000: several
 * times what the gateway serves on this machine, bench:gateway), a steady producer as
 * the gateway is, where the first ingest runs as fast as the machine allows.
 * "Quiet" is a store at rest: the seed's merges are waited for first (at most
 * MERGE_WAIT_S; after a 100M-row seed they run for minutes and take the cores the
 * queries want, so "quiet" measured them as much as the queries).
 * Prints ingest rows/s, bytes per row on disk (call_logs and each rollup), and the
 * largest resident memory of the process seen (chDB runs in it). Figures, never
 * assertions. No Postgres here: bench:usage and bench:logs compare with it.
 *
 * `--keep` leaves the data directory in place and prints it; `--data-dir` measures
 * again the rows such a run (or one that stopped before it removed them) left there,
 * without seeding.
 *
 *   npm run bench:scale -- [--rows 100000000] [--runs 20] [--ingest-rows 5000000] [--ingest-rate 5000] [--days 30] [--users 300] [--keep] [--data-dir /tmp/bench-scale-x]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { seedCallLogs } from '../src/core/logs/seed.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, loadAverage, silentLogger } from './bench-config.js';
import { waitForMergesToSettle } from './clickhouse-idle.js';
import { queryFloor } from './query-floor.js';
import { describeProbe, logShapes, movingWindows, postAdmin, probeLogs, usageBody, usageShapes } from './report-shapes.js';
import { SEGMENT_ROWS } from '../src/core/logs/call-log-writer.js';
import { insertFloorBodies, insertPathFigure, reopenBenchWorkspace, seedBenchWorkspaces, writeFloorBodies } from './seeded-workspaces.js';
import { timeRuns } from './stats.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000000' },
    runs: { type: 'string', default: '20' },
    'ingest-rows': { type: 'string', default: '5000000' },
    'ingest-rate': { type: 'string', default: '5000' },
    days: { type: 'string', default: '30' },
    users: { type: 'string', default: '300' },
    'data-dir': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const INGEST_RATE = Number(values['ingest-rate']);
const out = (line: string) => process.stdout.write(line + '\n');
const MiB = 1024 * 1024;

/** The largest resident memory seen, and how it was made up then (V8's heap, buffers, the rest: chDB's native memory). */
let maxRss = 0;
let atMax = '';
const rssSoFar = () => `max rss so far ${(maxRss / MiB).toFixed(0)} MiB`;
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  if (m.rss <= maxRss) return;
  maxRss = m.rss;
  atMax = `V8 heap ${(m.heapTotal / MiB).toFixed(0)} MiB, buffers ${(m.external / MiB).toFixed(0)} MiB, native ${((m.rss - m.heapTotal - m.external) / MiB).toFixed(0)} MiB`;
}, 250);

const reused = values['data-dir'];
const { config, dataDir } = benchConfig('scale', { ADMIN_RATE_LIMIT_PER_MINUTE: '100000000', ...(reused ? { DATA_DIR: reused } : {}) });
const runtime = await openRuntime(config, { logger: silentLogger });
const { services } = runtime;
const app = await buildApp({ services, logger: false as never });
await app.ready();

// 1. Ingest through the one writer (or the workspace a stopped run left, with a new token).
const seeded = reused ? await reopenBenchWorkspace(services, 'bench-scale') : await seed();
const org = seeded.organizationGuid;

async function seed() {
  const made = await seedBenchWorkspaces(services, {
    rows: ROWS,
    days: Number(values.days),
    users: Number(values.users),
    onProgress: (d) => d % 10_000_000 === 0 && out(`  ingested ${d} (${loadAverage()}, max rss ${(maxRss / MiB).toFixed(0)} MiB)`),
  });
  out(
    `ingest: ${ROWS} rows in ${made.ingestSeconds.toFixed(0)} s = ${Math.round(ROWS / made.ingestSeconds)} rows/s, ${made.cpuMicrosPerRow.toFixed(1)} µs of CPU a row ` +
      `(generation included; ${loadAverage()}); plus ${made.noiseRows} rows in three other workspaces; ${rssSoFar()}`,
  );
  out(await insertPathFigure(services, made.organizationGuid));
  out(`  ${rssSoFar()}`);
  return made;
}

// 2. Storage as the parts stand (merges keep running in the background, as in service).
const ch = services.clickhouse.client;
const read = async <T>(query: string, params: Record<string, unknown> = {}) =>
  (await ch.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
const parts = await read<{ table: string; rows: string | number; bytes: string | number; parts: string | number }>(
  `SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes, count() AS parts FROM system.parts WHERE active AND database = currentDatabase() AND table LIKE 'call_log%' GROUP BY table ORDER BY table`,
);
const rawRows = Number(parts.find((p) => p.table === 'call_logs')?.rows ?? 0);
for (const p of parts)
  out(
    `  ${p.table.padEnd(28)} ${String(p.rows).padStart(11)} rows ${String(p.parts).padStart(4)} parts ${(Number(p.bytes) / rawRows).toFixed(2).padStart(7)} bytes per call_logs row`,
  );
const projection = await read<{ bytes: string }>(
  `SELECT sum(bytes_on_disk) AS bytes FROM system.projection_parts WHERE active AND database = currentDatabase() AND table = 'call_logs'`,
);
out(`  of call_logs: the forwarder_counts projection ${(Number(projection[0]?.bytes ?? 0) / rawRows).toFixed(2)} bytes per row`);

// 3. The shapes, quiet, then during ingest.
const busiestGateway = (
  await read<{ g: string }>(
    `SELECT outbound_gateway_guid AS g FROM call_log_usage_daily WHERE organization_guid = {org:String} GROUP BY g ORDER BY sum(calls) DESC LIMIT 1`,
    { org },
  )
)[0]!.g;
const reports = usageShapes(busiestGateway);
const probe = await probeLogs(services.clickhouse, org, ROWS, 6 * (RUNS + 3));
out(`  ${describeProbe(probe, ROWS)}`);
const logs = logShapes(probe);
type Figures = Record<string, { p50: number; p99: number }>;

async function measureAll(): Promise<Figures> {
  const figures: Figures = {};
  const windows = movingWindows();
  for (const [name, shape] of Object.entries(reports)) {
    windows.reset();
    figures[`report ${name}`] = await timeRuns(
      () => postAdmin(app, seeded.token, '/api/v1/svc-admin/reports/usage', usageBody(shape, windows.of(shape))),
      RUNS,
    );
  }
  for (const [name, shape] of Object.entries(logs))
    figures[`logs ${name}`] = await timeRuns(
      () => postAdmin(app, seeded.token, '/api/v1/svc-admin/logs/query', typeof shape === 'function' ? shape() : shape),
      RUNS,
    );
  return figures;
}

/**
 * The shapes again while `ingest` writes into another workspace until its signal aborts
 * (when the measurements end); `rowsSoFar` tells how many rows went in.
 */
async function measureDuring(what: string, ingest: (signal: AbortSignal) => Promise<unknown>, rowsSoFar: () => number): Promise<Figures> {
  out(`measuring during ${what} into another workspace (${loadAverage()})`);
  const stop = new AbortController();
  const started = performance.now();
  const ingesting = ingest(stop.signal);
  const figures = await measureAll();
  const seconds = (performance.now() - started) / 1000;
  stop.abort();
  // Once the writes in flight are in: a 200k-row insert can outlast a short measurement.
  await ingesting;
  const rows = rowsSoFar();
  out(`  ingest during the measurements: ${rows} rows in ${seconds.toFixed(0)} s = ${Math.round(rows / seconds)} rows/s (${loadAverage()}); ${rssSoFar()}`);
  return figures;
}

/** The shapes again while up to `--ingest-rows` rows are seeded, as fast as they can or at `rate` rows/s. */
async function measureDuringIngest(rate: number | undefined): Promise<Figures> {
  const other = await createWorkspace(services.db, { name: `ingesting ${rate ?? 'full'}`, adminEmail: 'ingest@example.test' });
  let done = 0;
  return measureDuring(
    `ingest ${rate ? `at ${rate} rows/s` : 'at full speed'}`,
    (signal) =>
      seedCallLogs(services, {
        organizationGuid: other.organizationGuid,
        rows: Number(values['ingest-rows']),
        days: 1,
        rowsPerSecond: rate,
        signal,
        onProgress: (d) => (done = d),
      }),
    () => done,
  );
}

/**
 * The floor of the full-speed pass: the shapes again while the insert path alone runs
 * at full speed (the seed's rows as segment bodies made beforehand, inserted over and
 * over on the writer's lanes): what the engine's inserts and merges do to the queries,
 * without a row made, encoded or spooled.
 */
async function measureDuringInserts(): Promise<Figures> {
  const bodies = await writeFloorBodies(services, org, 10 * SEGMENT_ROWS);
  let inserted = 0;
  try {
    return await measureDuring(
      'the insert path alone at full speed',
      (signal) => insertFloorBodies(services, bodies, signal, (rows) => (inserted += rows)),
      () => inserted,
    );
  } finally {
    bodies.remove();
  }
}

/** How long the quiet measurements wait for the seed's merges to end. */
const MERGE_WAIT_S = 300;
const { seconds: waited, settled } = await waitForMergesToSettle(services.clickhouse.client, MERGE_WAIT_S);
out(`  ${settled ? `merges settled after ${waited.toFixed(0)} s` : `merges still running after ${MERGE_WAIT_S} s`}`);
out(`  ${await queryFloor(services.clickhouse, org, probe.windowTo, RUNS)}`);
out(`measuring, quiet (${loadAverage()})`);
const quiet = await measureAll();
out(`  ${rssSoFar()}`);
const inserts = await measureDuringInserts();
const busy = await measureDuringIngest(undefined);
const paced = await measureDuringIngest(INGEST_RATE);

out('');
out(
  `at ${rawRows} rows in call_logs (all workspaces), ${RUNS} runs each, through REST, p50 / p99 ms; quiet, then during the insert path alone ` +
    `at full speed (the floor), during ingest at full speed, then during ingest at ${INGEST_RATE} rows/s; each p99 ratio = during / quiet.`,
);
out(
  `${'shape'.padEnd(26)} ${'quiet'.padStart(15)} | ${'inserts alone'.padStart(15)} | ratio | ${'full-speed ingest'.padStart(15)} | ratio | ${`${INGEST_RATE} rows/s`.padStart(15)} | ratio`,
);
const pair = (r: { p50: number; p99: number }) => `${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)}`;
const ratio = (during: { p99: number }, of: { p99: number }) => (during.p99 / of.p99).toFixed(2).padStart(5);
for (const name of Object.keys(quiet))
  out(
    `${name.padEnd(26)} ${pair(quiet[name]!)} | ${pair(inserts[name]!)} | ${ratio(inserts[name]!, quiet[name]!)} | ${pair(busy[name]!).padStart(17)} | ${ratio(busy[name]!, quiet[name]!)} | ${pair(paced[name]!)} | ${ratio(paced[name]!, quiet[name]!)}`,
  );
out(`largest resident memory of the process: ${(maxRss / MiB).toFixed(0)} MiB (${atMax})`);
clearInterval(sampler);
await app.close();
await runtime.close();
// With --data-dir, benchConfig's fresh directory went unused (empty): it goes too, as in bench:usage.
if (reused || !values.keep) fs.rmSync(dataDir, { recursive: true, force: true });
if (values.keep) out(`data directory kept: --data-dir ${reused ?? dataDir}`);
process.exit(0);
