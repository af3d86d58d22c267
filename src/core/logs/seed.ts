import { on } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { WRITE_NICE } from '../../stores/clickhouse.js';
import type { Services } from '../services.js';
import { rng } from './seed-distributions.js';
import { seedPopulation } from './seed-population.js';
import { timeline } from './seed-rows.js';
import type { SeedMessage, SeedPlan } from './seed-worker.js';

export interface SeedOptions {
  organizationGuid: string;
  rows: number;
  days: number;
  /** At least this many users: the workspace's real ones first, then synthetic ones. */
  users?: number;
  /** Called after each chunk is accepted, with the rows written so far. */
  onProgress?: (done: number, total: number) => void;
  /** At most this many rows a second, spread evenly, as a gateway's calls arrive; as fast as it can without. */
  rowsPerSecond?: number | undefined;
  /** Stops after the chunk in flight: the rows written so far stay. */
  signal?: AbortSignal | undefined;
}

/** Rows a chunk of a full-speed seed carries from its worker to the writer. */
const CHUNK = 2000;
/** A paced seed writes a fiftieth of its second's rows at a time (20 ms apart). */
const PACED_CHUNKS_PER_SECOND = 50;
/** Chunks in flight between the worker and the writer (the worker makes the next while the last is written), and each one's memory to start with. */
const SLOTS = 2;
const SLOT_BYTES = 1 << 20;

/**
 * Writes `rows` synthetic call-log rows over the last `days` days, in time order,
 * through the normal ingest path (services.callLogs), shaped like real traffic
 * (docs/call-logs.md, "Seeded data"): a few tools, servers and users carry most calls,
 * durations are long-tailed per tool, traffic follows weekday business hours (UTC),
 * and a few hours hold an error burst on one server. It uses the workspace's real
 * gateways, servers, users and connections where they exist, and raises a few alerts.
 * Returns the rows written and the seconds it took.
 */
export async function seedCallLogs(services: Pick<Services, 'db' | 'callLogs' | 'alerts'>, opts: SeedOptions): Promise<{ rows: number; seconds: number }> {
  const started = performance.now();
  const random = rng(Date.now());
  const population = await seedPopulation(services, opts.organizationGuid, random, opts.users);
  const end = Date.now();
  const hours = timeline(end - opts.days * 86_400_000, end, opts.rows, opts.days, population.servers, random);
  const rate = opts.rowsPerSecond;
  const slots = Array.from({ length: SLOTS }, () => new SharedArrayBuffer(SLOT_BYTES));
  const worker = startSeedWorker({
    organizationGuid: opts.organizationGuid,
    population,
    hours,
    randomSeed: Math.floor(random() * 2 ** 32),
    chunkRows: rate ? Math.max(1, Math.min(CHUNK, Math.round(rate / PACED_CHUNKS_PER_SECOND))) : CHUNK,
    rowsPerSecond: rate,
    encoding: services.callLogs.encoding,
    nice: WRITE_NICE,
    slots,
  });
  let done = 0;
  let ended = false;
  try {
    for await (const [message] of on(worker, 'message', { close: ['exit'] }) as AsyncIterableIterator<[SeedMessage]>) {
      if ('end' in message) {
        ended = true;
        break;
      }
      const { slot, rows, thinBytes, detailBytes, grown } = message;
      if (grown) slots[slot] = grown;
      const memory = slots[slot]!;
      await services.callLogs.writeEncoded({
        rows,
        thin: Buffer.from(memory, 0, thinBytes),
        detail: detailBytes ? Buffer.from(memory, thinBytes, detailBytes) : null,
      });
      done += rows;
      opts.onProgress?.(done, opts.rows);
      if (opts.signal?.aborted) break;
      worker.postMessage(slot);
    }
  } finally {
    await worker.terminate();
  }
  if (!ended && !opts.signal?.aborted) throw new Error(`seed-logs: its worker stopped after ${done} of ${opts.rows} rows`);
  await services.callLogs.flush();
  const burstServer = hours.find((h) => h.burst)?.burst?.serverGuid ?? population.servers[0]!;
  await services.alerts.raise({
    organizationGuid: opts.organizationGuid,
    code: 'upstream_call_failed',
    messageType: 'error',
    subject: 'Calls to an upstream server are failing',
    message: 'Several tool calls returned 502 Bad Gateway in the last hour.',
    dynamicContent: {
      subject: 'Calls to {server} are failing',
      message: 'Several tool calls returned {status}.',
      values: { server: burstServer, status: '502' },
    },
    debugContext: { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>502 Bad Gateway</h1>' },
    relatedResourceIds: [burstServer],
  });
  await services.alerts.raise({
    organizationGuid: opts.organizationGuid,
    code: 'server_validation_failed',
    messageType: 'warning',
    subject: 'A server could not be validated',
    message: 'The server did not answer initialize.',
    relatedResourceIds: [population.servers[population.servers.length - 1]!],
  });
  return { rows: done, seconds: Math.round((performance.now() - started) / 10) / 100 };
}

/**
 * The seed's worker (seed-worker.ts), a thread named for what it does. Run from the
 * TypeScript sources (npm start, the tests, the benches) it needs tsx's loader, which a
 * test runner's processes do not carry; the built service runs its JavaScript as it is.
 */
function startSeedWorker(plan: SeedPlan): Worker {
  const extension = path.extname(fileURLToPath(import.meta.url));
  return new Worker(new URL(`./seed-worker${extension}`, import.meta.url), {
    name: 'call-log-seed',
    workerData: plan,
    execArgv: extension === '.ts' ? [...process.execArgv, '--import', 'tsx'] : undefined,
  });
}
