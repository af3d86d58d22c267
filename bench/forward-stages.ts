/**
 * bench:forward-stages — where the forwarder's time goes, per batch: reading the
 * rows' columns (the floor's read), reading the batch as finished records for each
 * body kind (what the forwarder does: ClickHouse writes them, record-sql.ts), and the
 * strict receivers' validation of each body, measured one stage at a time on the
 * same rows, as CPU milliseconds of the process (every thread: chDB's included;
 * medians of several repetitions). Figures only.
 *
 *   npx tsx bench/forward-stages.ts [--rows 5000 --reps 7]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { createWorkspace } from '../src/core/workspaces.js';
import { CallLogSource } from '../src/forwarder/call-log-source.js';
import type { BodyKind } from '../src/forwarder/record-sql.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, silentLogger } from './bench-config.js';
import { workspaceCallLogs, writeCallLogs } from '../test/helpers/forwarder-rows.js';
import { HecReceiver } from '../test/helpers/hec-receiver.js';
import { OtlpReceiver } from '../test/helpers/otlp-receiver.js';
import { waitForMergesToSettle } from './clickhouse-idle.js';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '5000' }, reps: { type: 'string', default: '7' } } });
const ROWS = Number(values.rows);
const REPS = Number(values.reps);

/** Median CPU milliseconds of the process (user + system, every thread) over REPS runs: steadier than wall time on a shared machine. */
async function median(fn: () => unknown): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const before = process.cpuUsage();
    await fn();
    const used = process.cpuUsage(before);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  return +times[Math.floor(times.length / 2)]!.toFixed(1);
}

async function main() {
  const { config, dataDir } = benchConfig('stages', { LOG_LEVEL: 'warn' });
  const runtime = await openRuntime(config, { logger: silentLogger, forwarder: { start: false } });
  const { services } = runtime;
  try {
    const ws = await createWorkspace(services.db, { name: 'stages', adminEmail: 'stages@bench.test' });
    const org = ws.organizationGuid;
    await writeCallLogs(services, Array.from({ length: ROWS }, workspaceCallLogs(org)));
    await waitForMergesToSettle(services.clickhouse.client);
    const source = new CallLogSource(services.clickhouse);
    const start = { at: new Date(0), guid: '' };
    const horizon = await source.deliveryHorizon(0);
    const read = (kind: BodyKind) => source.nextEncodedBatch(org, start, ROWS, horizon, kind);
    // The receivers validate the text they decode from the request's bytes.
    const bodies = {
      otlpLogs: Buffer.concat((await read('otlp_logs')).body).toString(),
      otlpTraces: Buffer.concat((await read('otlp_traces')).body).toString(),
      hec: Buffer.concat((await read('hec')).body).toString(),
    };
    const otlp = new OtlpReceiver() as unknown as { validate(r: unknown): unknown };
    const hecRx = new HecReceiver('t') as unknown as { validate(r: unknown): unknown };
    const req = (body: string, headers: Record<string, string>) => ({ path: '/', headers: { 'content-type': 'application/json', ...headers }, body });
    const figures = {
      rows: ROWS,
      readColumnsMs: await median(() => source.nextBatchText(org, start, ROWS, horizon)),
      readOtlpLogsMs: await median(() => read('otlp_logs')),
      readHecMs: await median(() => read('hec')),
      readOtlpTracesMs: await median(() => read('otlp_traces')),
      validateOtlpLogsMs: await median(() => otlp.validate(req(bodies.otlpLogs, {}))),
      validateHecMs: await median(() => hecRx.validate(req(bodies.hec, { authorization: 'Splunk t' }))),
      validateOtlpTracesMs: await median(() => otlp.validate(req(bodies.otlpTraces, {}))),
      bytesPerRecord: {
        otlpLogs: Math.round(bodies.otlpLogs.length / ROWS),
        hec: Math.round(bodies.hec.length / ROWS),
        otlpTraces: Math.round(bodies.otlpTraces.length / ROWS),
      },
    };
    console.log(figures);
  } finally {
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
