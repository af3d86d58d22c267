/**
 * bench:forward — records per second the forwarder delivers to the loopback test
 * receivers (strict validation on) for OTLP logs, HEC logs and OTLP traces, and the
 * lag from ingest to delivery (p50/p99) while rows keep arriving at a steady rate.
 * Figures only, never assertions.
 *
 *   npm run bench:forward [-- --rows 100000 --batch 5000 --rate 5000 --seconds 10 --settle 1000]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { saveCollectorConfiguration, syncForwarderCursors } from '../src/core/collector/config-repository.js';
import type { Services } from '../src/core/services.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { Forwarder } from '../src/forwarder/forwarder.js';
import { openRuntime } from '../src/runtime/open.js';
import type { LogsFormat } from '../src/stores/schema.js';
import { callLog, writeCallLogs } from '../test/helpers/forwarder-rows.js';
import { HecReceiver } from '../test/helpers/hec-receiver.js';
import { OtlpReceiver } from '../test/helpers/otlp-receiver.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '5000' },
    rate: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '10' },
    settle: { type: 'string', default: '1000' },
  },
});
const ROWS = Number(values.rows);
const BATCH = Number(values.batch);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const SETTLE = Number(values.settle);
const HEC_TOKEN = 'bench-hec-token';
const silent = { info() {}, warn() {}, debug() {}, error: (o: unknown) => console.error(o) };

async function configure(services: Services, org: string, c: { logs?: string; format?: LogsFormat; traces?: string; headers?: Record<string, string> }) {
  const secret = c.headers ? await services.secrets.put(services.db, org, c.headers) : null;
  await saveCollectorConfiguration(services.db, org, { logs_url: c.logs ?? null, logs_format: c.format ?? 'otlp', traces_url: c.traces ?? null, header_names: Object.keys(c.headers ?? {}), headers_secret_guid: secret });
  await syncForwarderCursors(services.db, org, { logs: !!c.logs, traces: !!c.traces });
}

async function writeRows(services: Services, org: string, n: number) {
  for (let done = 0; done < n; done += 10_000) {
    await writeCallLogs(services, Array.from({ length: Math.min(10_000, n - done) }, () => callLog(org)));
  }
}

const until = async (check: () => boolean, timeoutMs: number) => {
  const end = Date.now() + timeoutMs;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
};

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-forward-'));
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'warn', SECRET_KEY: Buffer.alloc(32, 3).toString('base64'), EGRESS_ALLOWED_CIDRS: '127.0.0.0/8' });
  const runtime = await openRuntime(config, { logger: silent, forwarder: { start: false } });
  const { services } = runtime;
  const otlp = await new OtlpReceiver().start();
  const hec = await new HecReceiver(HEC_TOKEN).start();
  const results: Record<string, unknown>[] = [];
  try {
    // Throughput: a backlog of ROWS per signal, drained by one forwarder.
    const cases: { signal: string; count: () => number; setup: (org: string) => Promise<void> }[] = [
      { signal: 'otlp logs', count: () => otlp.logs.length, setup: (org) => configure(services, org, { logs: otlp.url('/v1/logs') }) },
      { signal: 'hec logs', count: () => hec.events.length, setup: (org) => configure(services, org, { logs: hec.url('/services/collector/event'), format: 'collector_hec', headers: { Authorization: `Splunk ${HEC_TOKEN}` } }) },
      { signal: 'otlp traces', count: () => otlp.spans.length, setup: (org) => configure(services, org, { traces: otlp.url('/v1/traces') }) },
    ];
    for (const c of cases) {
      const ws = await createWorkspace(services.db, { name: `bench-${c.signal}`, adminEmail: `${c.signal.replace(' ', '-')}@bench.test` });
      await c.setup(ws.organizationGuid);
      await writeRows(services, ws.organizationGuid, ROWS);
      const before = c.count();
      const forwarder = new Forwarder(services, services.metricsRegistry!, { batchSize: BATCH, settleMs: 0, passBudgetMs: 60_000 });
      const started = performance.now();
      forwarder.start();
      await until(() => c.count() - before >= ROWS, 600_000);
      const seconds = (performance.now() - started) / 1000;
      await forwarder.stop();
      results.push({ measure: 'throughput', signal: c.signal, records: c.count() - before, seconds: +seconds.toFixed(2), recordsPerSecond: Math.round((c.count() - before) / seconds) });
    }

    // Lag: rows arrive at RATE/s for SECONDS while the forwarder runs with its default settle window.
    const ws = await createWorkspace(services.db, { name: 'bench-lag', adminEmail: 'lag@bench.test' });
    await configure(services, ws.organizationGuid, { logs: otlp.url('/lag/v1/logs') });
    const forwarder = new Forwarder(services, services.metricsRegistry!, { batchSize: BATCH, settleMs: SETTLE });
    forwarder.start();
    const startCount = otlp.logs.length;
    const tickMs = 100;
    const perTick = Math.max(1, Math.round((RATE * tickMs) / 1000));
    const end = Date.now() + SECONDS * 1000;
    let written = 0;
    while (Date.now() < end) {
      const t0 = Date.now();
      await writeCallLogs(services, Array.from({ length: perTick }, () => callLog(ws.organizationGuid)));
      written += perTick;
      await new Promise((r) => setTimeout(r, Math.max(0, tickMs - (Date.now() - t0))));
    }
    await until(() => otlp.logs.length - startCount >= written, 120_000);
    await forwarder.stop();
    const lags = otlp.logs
      .slice(startCount)
      .filter((l) => l.path.startsWith('/lag/'))
      .map((l) => l.receivedAt - Number(BigInt(l.record.observedTimeUnixNano) / 1_000_000n))
      .sort((a, b) => a - b);
    results.push({ measure: 'lag', signal: 'otlp logs', records: lags.length, ratePerSecond: RATE, settleMs: SETTLE, p50Ms: pct(lags, 50), p99Ms: pct(lags, 99), maxMs: lags.at(-1) });
    results.push({ measure: 'validation', invalidRequests: otlp.invalid.length + hec.invalid.length });
  } finally {
    await otlp.stop();
    await hec.stop();
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  console.table(results);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
