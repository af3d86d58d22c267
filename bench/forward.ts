/**
 * bench:forward — records per second the forwarder delivers to the loopback test
 * receivers (strict validation on) for OTLP logs, HEC logs and OTLP traces, and the
 * lag from ingest to delivery (p50/p99) while rows keep arriving at a steady rate.
 * The rows are shaped like one workspace's traffic (workspaceCallLogs: its few
 * gateways, servers, users, teams and connections; fresh ids per call).
 * The receivers run in a worker thread (bench/forward-receivers.ts), as a collector
 * runs apart from the service. Each throughput case runs `--runs` times on a fresh
 * backlog, the cases taking turns run by run; the median is reported with the ratio
 * to the issue's target. After each run the floor (bench/forward-floor.ts) drains
 * the same backlog again reading only the rows' columns, and replays one batch's body
 * to the same receiver: the cost of reading and delivering, without building a
 * single record. "forwarder / floor" stays comparable across noisy runs. Figures
 * only, never assertions.
 *
 *   npm run bench:forward [-- --rows 20000 --batch 5000 --runs 3 --rate 5000 --seconds 10 --settle MS]
 *
 * --settle sets the forwarder's settle window for the lag phase; without it the
 * forwarder's default applies (0 on a single ClickHouse: the delivery horizon alone).
 */
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { saveCollectorConfiguration, syncForwarderCursors } from '../src/core/collector/config-repository.js';
import type { Services } from '../src/core/services.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { CallLogSource } from '../src/forwarder/call-log-source.js';
import { Forwarder } from '../src/forwarder/forwarder.js';
import type { BodyKind } from '../src/forwarder/record-sql.js';
import { floorRate } from './forward-floor.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, silentLogger } from './bench-config.js';
import type { LogsFormat } from '../src/stores/schema.js';
import { workspaceCallLogs, writeCallLogs } from '../test/helpers/forwarder-rows.js';
import { waitForMergesToSettle } from './clickhouse-idle.js';
import { median, percentile as pct } from './stats.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '20000' },
    runs: { type: 'string', default: '3' },
    batch: { type: 'string', default: '5000' },
    rate: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '10' },
    settle: { type: 'string' },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const BATCH = Number(values.batch);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const SETTLE = values.settle === undefined ? undefined : Number(values.settle);
const HEC_TOKEN = 'bench-hec-token';
const TARGET_RECORDS_PER_SECOND = 50_000;
const TARGET_P99_LAG_MS = 2000;
/** Slots of the counters shared with the receivers' worker. */
const COUNTER = { otlpLogs: 0, otlpSpans: 1, hecEvents: 2 } as const;

async function configure(services: Services, org: string, c: { logs?: string; format?: LogsFormat; traces?: string; headers?: Record<string, string> }) {
  const secret = c.headers ? await services.secrets.put(services.db, org, c.headers) : null;
  await saveCollectorConfiguration(services.db, org, {
    logs_url: c.logs ?? null,
    logs_format: c.format ?? 'otlp',
    traces_url: c.traces ?? null,
    header_names: Object.keys(c.headers ?? {}),
    headers_secret_guid: secret,
  });
  await syncForwarderCursors(services.db, org, { logs: !!c.logs, traces: !!c.traces });
}

async function writeRows(services: Services, org: string, n: number) {
  const row = workspaceCallLogs(org);
  for (let done = 0; done < n; done += 10_000) {
    await writeCallLogs(services, Array.from({ length: Math.min(10_000, n - done) }, row));
  }
}

const until = async (check: () => boolean, timeoutMs: number) => {
  const end = Date.now() + timeoutMs;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
};

/** The strict receivers in their own thread; counts of accepted records come back through shared memory. */
async function startReceivers() {
  const counters = new Int32Array(new SharedArrayBuffer(4 * 3));
  const worker = new Worker(new URL('./forward-receivers.ts', import.meta.url), { workerData: { counters: counters.buffer, hecToken: HEC_TOKEN } });
  const ports = await new Promise<{ otlpPort: number; hecPort: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const report = () =>
    new Promise<{ lags: number[]; invalid: string[] }>((resolve) => {
      worker.once('message', resolve);
      worker.postMessage('report');
    });
  return {
    count: (slot: number) => Atomics.load(counters, slot),
    otlpUrl: (p: string) => `http://127.0.0.1:${ports.otlpPort}${p}`,
    hecUrl: (p: string) => `http://127.0.0.1:${ports.hecPort}${p}`,
    report,
    stop: async () => {
      worker.postMessage('stop');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

async function main() {
  const { config, dataDir } = benchConfig('forward', { LOG_LEVEL: 'warn', EGRESS_ALLOWED_CIDRS: '127.0.0.0/8' });
  const runtime = await openRuntime(config, { logger: silentLogger, forwarder: { start: false } });
  const { services } = runtime;
  const rx = await startReceivers();
  const throughput: Record<string, unknown>[] = [];
  const lag: Record<string, unknown>[] = [];
  const loadBefore = os.loadavg()[0]!;
  try {
    // Throughput: a backlog of ROWS per signal, drained by one forwarder; RUNS times each.
    const cases: { signal: string; slot: number; url: string; headers: Record<string, string>; kind: BodyKind }[] = [
      { signal: 'otlp logs', slot: COUNTER.otlpLogs, url: rx.otlpUrl('/v1/logs'), headers: {}, kind: 'otlp_logs' },
      {
        signal: 'hec logs',
        slot: COUNTER.hecEvents,
        url: rx.hecUrl('/services/collector/event'),
        headers: { Authorization: `Splunk ${HEC_TOKEN}` },
        kind: 'hec',
      },
      { signal: 'otlp traces', slot: COUNTER.otlpSpans, url: rx.otlpUrl('/v1/traces'), headers: {}, kind: 'otlp_traces' },
    ];
    /** The workspace's collector configuration for a case: its URL for its signal, HEC with its token header. */
    const setup = (org: string, c: (typeof cases)[number]) =>
      configure(
        services,
        org,
        c.kind === 'otlp_traces' ? { traces: c.url } : c.kind === 'hec' ? { logs: c.url, format: 'collector_hec', headers: c.headers } : { logs: c.url },
      );
    // Round-robin over the signals, run by run: a run's place in the process (the
    // table's size, the heaps' state) then weighs on every signal alike. Measured one
    // signal after the other, the last signal's runs came out up to a quarter slower.
    const results = cases.map(() => ({ rates: [] as number[], floors: [] as number[], cpuPerThousand: [] as number[] }));
    for (let run = 0; run < RUNS; run++) {
      for (const [i, c] of cases.entries()) {
        const ws = await createWorkspace(services.db, { name: `bench-${c.signal}-${run}`, adminEmail: `${c.signal.replace(' ', '-')}-${run}@bench.test` });
        await setup(ws.organizationGuid, c);
        await writeRows(services, ws.organizationGuid, ROWS);
        await waitForMergesToSettle(services.clickhouse.client);
        const before = rx.count(c.slot);
        const forwarder = new Forwarder(services, services.metricsRegistry!, { batchSize: BATCH, settleMs: 0, passBudgetMs: 60_000 });
        const cpu0 = process.cpuUsage();
        const started = performance.now();
        forwarder.start();
        await until(() => rx.count(c.slot) - before >= ROWS, 600_000);
        const seconds = (performance.now() - started) / 1000;
        const cpu = process.cpuUsage(cpu0);
        await forwarder.stop();
        results[i]!.rates.push((rx.count(c.slot) - before) / seconds);
        results[i]!.cpuPerThousand.push((cpu.user + cpu.system) / 1000 / (ROWS / 1000));
        // The floor over the same rows, right after: the same reads and receiver, no record built.
        const source = new CallLogSource(services.clickhouse);
        const firstBatch = await source.nextEncodedBatch(ws.organizationGuid, { at: new Date(0), guid: '' }, BATCH, await source.deliveryHorizon(0), c.kind);
        results[i]!.floors.push(
          await floorRate(services, {
            organizationGuid: ws.organizationGuid,
            records: ROWS,
            batchSize: BATCH,
            url: c.url,
            headers: c.headers,
            body: Buffer.concat(firstBatch.body),
          }),
        );
        // The run's workspace stops forwarding: each run starts a new forwarder (a cold
        // process), whose first pass would otherwise also read an empty batch for every
        // earlier run's cursor, a cost that grew with the run number.
        await syncForwarderCursors(services.db, ws.organizationGuid, { logs: false, traces: false });
      }
    }
    for (const [i, c] of cases.entries()) {
      const { rates, floors, cpuPerThousand } = results[i]!;
      const rate = median(rates);
      const floor = median(floors);
      throughput.push({
        signal: c.signal,
        'records/s (median)': Math.round(rate),
        runs: rates.map((r) => Math.round(r)).join(' '),
        'target ratio': `${(rate / TARGET_RECORDS_PER_SECOND).toFixed(2)}x of ${TARGET_RECORDS_PER_SECOND}`,
        'cpu ms / 1k records': +median(cpuPerThousand).toFixed(1),
        'floor records/s (median)': Math.round(floor),
        'floor runs': floors.map((r) => Math.round(r)).join(' '),
        'forwarder / floor': +(rate / floor).toFixed(2),
      });
    }

    // Lag: rows arrive at RATE/s for SECONDS while the forwarder runs with its settle window.
    const ws = await createWorkspace(services.db, { name: 'bench-lag', adminEmail: 'lag@bench.test' });
    await configure(services, ws.organizationGuid, { logs: rx.otlpUrl('/lag/v1/logs') });
    const forwarder = new Forwarder(services, services.metricsRegistry!, { batchSize: BATCH, settleMs: SETTLE });
    const lagRow = workspaceCallLogs(ws.organizationGuid);
    forwarder.start();
    const startCount = rx.count(COUNTER.otlpLogs);
    const tickMs = 100;
    const perTick = Math.max(1, Math.round((RATE * tickMs) / 1000));
    const end = Date.now() + SECONDS * 1000;
    let written = 0;
    while (Date.now() < end) {
      const t0 = Date.now();
      await writeCallLogs(services, Array.from({ length: perTick }, lagRow));
      written += perTick;
      await new Promise((r) => setTimeout(r, Math.max(0, tickMs - (Date.now() - t0))));
    }
    await until(() => rx.count(COUNTER.otlpLogs) - startCount >= written, 120_000);
    await forwarder.stop();
    const { lags, invalid } = await rx.report();
    lags.sort((a, b) => a - b);
    const p99 = pct(lags, 99);
    lag.push({
      signal: 'otlp logs',
      records: lags.length,
      'rate/s': RATE,
      'settle ms': SETTLE ?? 'default',
      'p50 ms': pct(lags, 50),
      'p99 ms': p99,
      'max ms': lags.at(-1),
      'p99 vs target': `${(p99 / TARGET_P99_LAG_MS).toFixed(2)}x of ${TARGET_P99_LAG_MS} ms (lower is better)`,
    });
    console.log(
      `\nbench:forward  rows/run=${ROWS} batch=${BATCH} runs=${RUNS}  load average ${loadBefore.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`,
    );
    console.log(
      '\nThroughput (records delivered per second, receivers validating in a worker thread; the floor reads the same rows without building records and replays one body, bench/forward-floor.ts):',
    );
    console.table(throughput);
    console.log("\nIngest-to-delivery lag (received at the collector minus the row's ingested_at):");
    console.table(lag);
    console.log(`\nRequests the strict receivers refused: ${invalid.length}${invalid.length ? ` (${invalid.slice(0, 3).join('; ')})` : ''}`);
  } finally {
    await rx.stop();
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
