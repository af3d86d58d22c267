import fs from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { callLogRowEncoder, type CallLogEncoding, type CallLogInput } from './call-log-row.js';
import { LineEncoder } from './encoded-lines.js';
import { rng } from './seed-distributions.js';
import type { SeedPopulation } from './seed-population.js';
import { rowMaker, seedRows, type Hour } from './seed-rows.js';

/** What seedCallLogs hands its worker: everything drawn from the service database, and how to make and pace the rows. */
export interface SeedPlan {
  organizationGuid: string;
  population: SeedPopulation;
  hours: Hour[];
  randomSeed: number;
  /** Rows a message carries. */
  chunkRows: number;
  rowsPerSecond: number | undefined;
  encoding: CallLogEncoding;
  /** The Linux nice value the worker's thread runs at. */
  nice: number;
  /** Memory shared with the service, a chunk's lines in each: the worker fills a free one, the service hands it back once written. */
  slots: SharedArrayBuffer[];
}

/**
 * A message of the worker: a chunk's lines in `slot` (the main table's bytes, then the
 * detail table's), with the slot's new memory when the chunk outgrew it; or the end.
 */
export type SeedMessage = { slot: number; rows: number; thinBytes: number; detailBytes: number; grown?: SharedArrayBuffer } | { end: true };

/**
 * seed-logs' rows are made and encoded here, on a thread of their own at a lower
 * priority than the service's: made on the event loop they took its turns from the
 * requests a seed runs beside, and a query's p99 during a full-speed seed doubled on
 * most shapes where inserts alone left it as it was (docs/call-logs.md, "Session 37").
 */
const plan = workerData as SeedPlan;
const port = parentPort!;
lowerPriority(plan.nice);

const slots = [...plan.slots];
const free = slots.map((_, i) => i);
let credit: (() => void) | null = null;
port.on('message', (slot: number) => {
  free.push(slot);
  credit?.();
});

const random = rng(plan.randomSeed);
const encoder = new LineEncoder(callLogRowEncoder(plan.encoding));
const rate = plan.rowsPerSecond;
const startedAt = performance.now();
let chunk: CallLogInput[] = [];
let made = 0;
for (const row of seedRows(plan.hours, rowMaker(plan.population, plan.organizationGuid, random), random)) {
  chunk.push(row);
  if (chunk.length === plan.chunkRows) {
    await post(chunk);
    chunk = [];
  }
}
if (chunk.length) await post(chunk);
port.postMessage({ end: true } satisfies SeedMessage);

/**
 * Encodes `rows` into a free slot and posts it, once (paced) its time has come. Shared
 * memory, not a transferred buffer a chunk: the service's heap counted each transferred
 * buffer as external memory and collected its old generation every second or so for
 * them, 15-25 ms of its event loop each (docs/call-logs.md, "Session 37").
 */
async function post(rows: CallLogInput[]): Promise<void> {
  let slot: number | undefined;
  while ((slot = free.shift()) === undefined) await new Promise<void>((resolve) => (credit = resolve));
  const due = rate ? startedAt + (made / rate) * 1000 - performance.now() : 0;
  if (due > 0) await sleep(due);
  const { thin, detail } = encoder.encode(rows);
  const bytes = thin.length + (detail?.length ?? 0);
  let grown: SharedArrayBuffer | undefined;
  if (bytes > slots[slot]!.byteLength) slots[slot] = grown = new SharedArrayBuffer(2 * bytes);
  const memory = Buffer.from(slots[slot]!);
  thin.copy(memory, 0);
  detail?.copy(memory, thin.length);
  port.postMessage({ slot, rows: rows.length, thinBytes: thin.length, detailBytes: detail?.length ?? 0, grown } satisfies SeedMessage);
  made += rows.length;
}

/** Raises this thread's nice value: on Linux a thread is a task of its own, and lowering one's priority needs no privilege. Elsewhere it runs as it is. */
function lowerPriority(nice: number): void {
  let tid: number;
  try {
    tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return;
  }
  os.setPriority(tid, nice);
}
