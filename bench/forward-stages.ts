/**
 * bench:forward-stages — where the forwarder's time goes, per batch: the ClickHouse
 * read, each encoder, and the strict receivers' validation, measured one stage at a
 * time on the same rows, as CPU milliseconds (medians of several repetitions).
 * Figures only.
 *
 *   npx tsx bench/forward-stages.ts [--rows 5000 --reps 7]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { createWorkspace } from '../src/core/workspaces.js';
import { CallLogSource } from '../src/forwarder/call-log-source.js';
import { encodeHecEvents } from '../src/forwarder/encode-hec.js';
import { encodeOtlpLogs, encodeOtlpTraces } from '../src/forwarder/encode-otlp.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, silentLogger } from './bench-config.js';
import { callLog, writeCallLogs } from '../test/helpers/forwarder-rows.js';
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
    await writeCallLogs(services, Array.from({ length: ROWS }, () => callLog(org)));
    await waitForMergesToSettle(services.clickhouse.client);
    const source = new CallLogSource(services.clickhouse);
    const start = { at: new Date(0), guid: '' };
    const horizon = await source.deliveryHorizon(0);
    const rows = await source.nextBatch(org, start, ROWS, horizon);
    // The receivers validate the text they decode from the request's bytes.
    const otlpLogs = encodeOtlpLogs(rows).toString();
    const otlpSpans = encodeOtlpTraces(rows).toString();
    const hec = encodeHecEvents(rows).toString();
    const otlp = new OtlpReceiver() as unknown as { validate(r: unknown): unknown };
    const hecRx = new HecReceiver('t') as unknown as { validate(r: unknown): unknown };
    const req = (body: string, headers: Record<string, string>) => ({ path: '/', headers: { 'content-type': 'application/json', ...headers }, body });
    const figures = {
      rows: rows.length,
      readMs: await median(() => source.nextBatch(org, start, ROWS, horizon)),
      encodeOtlpLogsMs: await median(() => encodeOtlpLogs(rows)),
      encodeHecMs: await median(() => encodeHecEvents(rows)),
      encodeOtlpTracesMs: await median(() => encodeOtlpTraces(rows)),
      validateOtlpLogsMs: await median(() => otlp.validate(req(otlpLogs, {}))),
      validateHecMs: await median(() => hecRx.validate(req(hec, { authorization: 'Splunk t' }))),
      validateOtlpTracesMs: await median(() => otlp.validate(req(otlpSpans, {}))),
      bytesPerRecord: { otlpLogs: Math.round(otlpLogs.length / rows.length), hec: Math.round(hec.length / rows.length), otlpTraces: Math.round(otlpSpans.length / rows.length) },
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
