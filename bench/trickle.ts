/**
 * bench:trickle — what call logging costs a quiet service: the CPU of the whole process
 * (chDB's threads included) while calls' rows arrive at a trickle, for each flush interval
 * of the call-log writer, with the store idle (no rows) as the floor, in the same run.
 * Each variant writes seeded rows (`seedCallLogs`, paced) through a writer of its own into
 * the embedded store for `--seconds`; variants alternate, and the store's merges are
 * waited for between them. Figures only, never assertions.
 *
 *   npm run bench:trickle [-- --seconds 30 --rounds 2 --rates 2,20 --intervals 1000,10000]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CallLogWriter } from '../src/core/logs/call-log-writer.js';
import { seedCallLogs } from '../src/core/logs/seed.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, loadAverage, silentLogger } from './bench-config.js';
import { waitForMergesToSettle } from './clickhouse-idle.js';
import { median } from './stats.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '2' },
    rates: { type: 'string', default: '2,20' },
    intervals: { type: 'string', default: '1000,10000' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const RATES = values.rates.split(',').map(Number);
const INTERVALS = values.intervals.split(',').map(Number);

const { config, dataDir } = benchConfig('trickle');
const runtime = await openRuntime(config, { logger: silentLogger, backgroundJobs: false });
const { services } = runtime;
const ws = await createWorkspace(services.db, { name: 'trickle', adminEmail: 'trickle@example.test' });

/** Percent of one core the process used over `seconds` while `work` ran (then stopped by its signal). */
async function cpuShare(work: (signal: AbortSignal) => Promise<unknown>): Promise<number> {
  await waitForMergesToSettle(services.clickhouse.client);
  const stop = new AbortController();
  const before = process.cpuUsage();
  const started = performance.now();
  const running = work(stop.signal);
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const used = process.cpuUsage(before);
  const elapsedUs = (performance.now() - started) * 1000;
  stop.abort();
  await running;
  return ((used.user + used.system) / elapsedUs) * 100;
}

let variant = 0;
/** One variant: `rate` rows a second through a writer sealing its segments after `intervalMs`. */
async function trickle(rate: number, intervalMs: number, signal: AbortSignal): Promise<void> {
  const callLogs = await CallLogWriter.open({
    insert: services.clickhouse.insertEncoded,
    lanes: services.clickhouse.insertLanes,
    spoolDir: path.join(config.dataDir, 'spool', `trickle-${variant++}`),
    logger: silentLogger,
    flushIntervalMs: intervalMs,
  });
  await seedCallLogs({ ...services, callLogs }, { organizationGuid: ws.organizationGuid, rows: rate * SECONDS * 10, days: 1, rowsPerSecond: rate, signal });
  await callLogs.close();
}

const idle = (signal: AbortSignal) => new Promise((r) => signal.addEventListener('abort', r, { once: true }));
const figures = new Map<string, number[]>();
const record = (name: string, share: number) => figures.set(name, [...(figures.get(name) ?? []), share]);
console.log(`bench:trickle — process CPU while call logs arrive at a trickle, ${SECONDS} s a variant, ${ROUNDS} round(s), ${loadAverage()}`);
for (let round = 0; round < ROUNDS; round++) {
  const order = RATES.flatMap((rate) => INTERVALS.map((interval) => [rate, interval] as const));
  if (round % 2) order.reverse();
  record('idle (no rows)', await cpuShare(idle));
  for (const [rate, interval] of order) record(`${rate} rows/s, flush after ${interval} ms`, await cpuShare((signal) => trickle(rate, interval, signal)));
}
console.log(`${'variant'.padEnd(34)} ${'% of a core (median)'.padStart(20)}   each round`);
for (const [name, shares] of figures)
  console.log(`${name.padEnd(34)} ${median(shares).toFixed(1).padStart(20)}   ${shares.map((s) => s.toFixed(1)).join(', ')}`);
console.log(loadAverage());
await runtime.close();
fs.rmSync(dataDir, { recursive: true, force: true });
