import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { clientInsert, WRITE_NICE, type EncodedInsert, type InsertBody, type InsertEncoded } from '../src/stores/clickhouse.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import { CATCH_UP_WAIT_MS, CallLogWriter } from '../src/core/logs/call-log-writer.js';
import { LineEncoder } from '../src/core/logs/encoded-lines.js';
import {
  CALL_LOG_INSERT_FORMAT,
  callLogRowEncoder,
  chEpochMs,
  encodeCallLog,
  THIN_INSERT_COLUMNS,
  truncateUtf8,
  type CallLogInput,
} from '../src/core/logs/call-log-row.js';
import { isSensitiveHeaderName, redactDeep, redactHeaders } from '../src/core/redaction.js';
import { listSegments, newSegmentName } from '../src/core/logs/spool.js';
import { CapturedLog, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { NODE } from './helpers/service-process.js';
import { countRows, logRow } from './helpers/call-logs.js';
import { threadsAtNice } from './helpers/threads.js';

/**
 * The ingest path: batching, back-pressure and the write-ahead spool, against the
 * real embedded ClickHouse. "ClickHouse unreachable" is a client whose inserts fail
 * (or a real HTTP client pointed at a closed loopback port).
 */
let t: TestApp;
let real: ClickHouseClient;
/** The runtime's own insert path (chDB's raw insert, or a server's HTTP insert). */
let realInsert: InsertEncoded;
const spoolDirs: string[] = [];

beforeAll(async () => {
  t = await startTestApp();
  real = t.runtime.services.clickhouse.client;
  realInsert = t.runtime.services.clickhouse.insertEncoded;
});
afterAll(async () => {
  await t?.close();
  for (const d of spoolDirs) fs.rmSync(d, { recursive: true, force: true });
});

const newSpoolDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-test-'));
  spoolDirs.push(dir);
  return dir;
};

/** The error an insert meets while ClickHouse is unreachable. */
const unreachable = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });

/** An insert path that fails while `down` is true, as if ClickHouse were unreachable. */
function switchableInsert() {
  const state = { down: true, attempts: 0 };
  const insert = async (request: EncodedInsert) => {
    state.attempts++;
    if (state.down) throw unreachable();
    return realInsert(request);
  };
  return { insert, state };
}

/**
 * The real insert path, watched lane by lane: the inserts into call_logs in flight at once
 * (each waits up to a second for a second one to overlap it, so a writer with two lanes
 * shows both), and, while `down`, failures after 20 ms as if ClickHouse were unreachable,
 * counting attempts that overlapped another once the first had failed.
 */
function laneWatchingInsert() {
  const state = { down: false, inFlight: 0, maxInFlight: 0, failedOnce: false, overlapsWhileFailing: 0, failingInFlight: 0 };
  const insert = async (request: EncodedInsert) => {
    if (request.table !== 'call_logs') return realInsert(request);
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    try {
      if (state.down) {
        if (state.failedOnce && state.inFlight > 1) state.overlapsWhileFailing++;
        state.failingInFlight++;
        await sleep(20);
        state.failedOnce = true;
        state.failingInFlight--;
        throw unreachable();
      }
      for (const until = Date.now() + 1000; state.inFlight < 2 && Date.now() < until;) await sleep(5);
      return await realInsert(request);
    } finally {
      state.inFlight--;
    }
  };
  return { insert, state };
}

/** An insert's rows as text, wherever they are. */
const bodyText = (body: InsertBody): string => ('file' in body ? fs.readFileSync(body.file, 'utf8') : Buffer.concat(body.chunks).toString());

/** A writer started on `dir` with the real insert path: it replays what the spool holds, then stops. */
async function replaySpool(dir: string): Promise<void> {
  const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: dir, logger: new CapturedLog() });
  await writer.flush();
  await writer.close();
}

const guidsIn = async (org: string): Promise<string[]> => {
  const res = await real.query({
    query: 'SELECT toString(guid) AS g FROM call_logs WHERE organization_guid = {org:String}',
    query_params: { org },
    format: 'JSONEachRow',
  });
  return (await res.json<{ g: string }>()).map((r) => r.g);
};

describe('the call-log writer', () => {
  it('spools rows while ClickHouse is unreachable and inserts each exactly once when it returns', async () => {
    const org = newGuid();
    const { insert, state } = switchableInsert();
    const dir = newSpoolDir();
    const writer = await CallLogWriter.open({ insert, spoolDir: dir, logger: new CapturedLog(), batchRows: 100, retryMinMs: 5, retryMaxMs: 20 });
    const rows = Array.from({ length: 350 }, () => logRow(org, { requestBody: 'b' }));
    for (let i = 0; i < rows.length; i += 50) await writer.write(rows.slice(i, i + 50));
    await expect(writer.flush()).rejects.toThrow(/spool/);
    expect(listSegments(dir).length).toBeGreaterThan(0);
    expect(await countRows(t, org)).toBe(0);
    const restoredAt = Date.now();
    state.down = false;
    await writer.flush();
    const guids = await guidsIn(org);
    expect(guids.sort()).toEqual(rows.map((r) => r.guid).sort());
    expect(await countRows(t, org, 'call_log_details')).toBe(350);
    expect(listSegments(dir)).toEqual([]);
    // ingested_at is stamped at the INSERT, after ClickHouse came back, not when the rows were accepted.
    const res = await real.query({
      query: 'SELECT min(toUnixTimestamp64Milli(ingested_at)) AS m FROM call_logs WHERE organization_guid = {org:String}',
      query_params: { org },
      format: 'JSONEachRow',
    });
    expect(Number((await res.json<{ m: number }>())[0]!.m)).toBeGreaterThanOrEqual(restoredAt);
    await writer.close();
  });

  it('keeps accepted rows across a restart and replays them exactly once', async () => {
    const org = newGuid();
    const dir = newSpoolDir();
    const down = switchableInsert();
    const first = await CallLogWriter.open({ insert: down.insert, spoolDir: dir, logger: new CapturedLog(), batchRows: 64, retryMinMs: 5 });
    const rows = Array.from({ length: 200 }, () => logRow(org));
    await first.write(rows.slice(0, 150));
    await first.write(rows.slice(150));
    await first.close();
    expect(listSegments(dir).length).toBeGreaterThan(0);
    await expect(first.write([logRow(org)])).rejects.toThrow(/closed/);

    await replaySpool(dir);
    // A third start finds nothing left to replay.
    await replaySpool(dir);
    expect((await guidsIn(org)).sort()).toEqual(rows.map((r) => r.guid).sort());
  });

  it('replays what a crash left: every whole line, not the one cut short', async () => {
    const org = newGuid();
    const dir = newSpoolDir();
    const down = switchableInsert();
    const first = await CallLogWriter.open({ insert: down.insert, spoolDir: dir, logger: new CapturedLog(), retryMinMs: 5 });
    const rows = Array.from({ length: 3 }, () => logRow(org, { requestBody: 'req', responseBody: 'res' }));
    await first.write(rows.slice(0, 2));
    await first.write(rows.slice(2));
    await first.close();
    const [name] = listSegments(dir);
    // A segment is its two INSERT bodies: the call-log lines, and beside them the detail lines.
    const linesOf = (file: string) => fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    const guids = rows.map((r) => r.guid);
    expect(linesOf(path.join(dir, name!)).map((line) => keysOf(line).guid)).toEqual(guids);
    expect(linesOf(path.join(dir, `${name!}.detail`)).map((line) => keysOf(line).guid)).toEqual(guids);
    // A crash mid-append: a row whose detail line is whole and whose call-log line was cut short.
    const cut = encodeCallLog(logRow(org, { requestBody: 'lost' }));
    fs.appendFileSync(path.join(dir, `${name!}.detail`), cut.detail!);
    fs.appendFileSync(path.join(dir, name!), cut.thin.slice(0, 40));

    await replaySpool(dir);
    expect((await guidsIn(org)).sort()).toEqual([...guids].sort());
    // Its detail row went in too, shown with no call (query_logs reads details through their call-log rows).
    expect(await countRows(t, org, 'call_log_details')).toBe(4);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('replays a batch whose acknowledgement was lost without duplicating it (deduplication token)', async () => {
    const org = newGuid();
    let lostAcks = 1;
    const insert = async (request: EncodedInsert) => {
      await realInsert(request);
      if (lostAcks-- > 0) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    };
    const writer = await CallLogWriter.open({ insert, spoolDir: newSpoolDir(), logger: new CapturedLog(), retryMinMs: 5 });
    const rows = Array.from({ length: 40 }, () => logRow(org));
    await writer.write(rows);
    await expect(writer.flush()).rejects.toThrow();
    await writer.flush();
    await writer.close();
    expect(await countRows(t, org)).toBe(40);
  });

  it('spools when pointed at a closed loopback port with a real HTTP client, and delivers after a restart', async () => {
    const org = newGuid();
    const dir = newSpoolDir();
    const unreachable = createClient({ url: 'http://127.0.0.1:1', request_timeout: 2000, log: { level: ClickHouseLogLevel.OFF } });
    const log = new CapturedLog();
    const writer = await CallLogWriter.open({ insert: clientInsert(unreachable), spoolDir: dir, logger: log, retryMinMs: 5 });
    const rows = Array.from({ length: 25 }, () => logRow(org));
    await writer.write(rows);
    await expect(writer.flush()).rejects.toThrow();
    await writer.close();
    await unreachable.close();
    expect(log.text()).toMatch(/retried/);
    await replaySpool(dir);
    expect((await guidsIn(org)).sort()).toEqual(rows.map((r) => r.guid).sort());
  });

  it("streams a segment's files as the insert bodies through the client (a server's path)", async () => {
    const org = newGuid();
    const writer = await CallLogWriter.open({ insert: clientInsert(real), spoolDir: newSpoolDir(), logger: new CapturedLog() });
    const rows = Array.from({ length: 30 }, (_, i) => logRow(org, i % 3 ? {} : { requestBody: 'req', responseBody: 'res' }));
    await writer.write(rows);
    await writer.flush();
    await writer.close();
    expect((await guidsIn(org)).sort()).toEqual(rows.map((r) => r.guid).sort());
    expect(await countRows(t, org, 'call_log_details')).toBe(10);
  });

  it('applies back-pressure: write() waits while too many rows are buffered', async () => {
    const org = newGuid();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const insert = async (request: EncodedInsert) => {
      calls++;
      await gate;
      return realInsert(request);
    };
    const writer = await CallLogWriter.open({ insert, spoolDir: newSpoolDir(), logger: new CapturedLog(), batchRows: 10, maxBufferedRows: 20 });
    await writer.write(Array.from({ length: 10 }, () => logRow(org)));
    await writer.write(Array.from({ length: 10 }, () => logRow(org)));
    let accepted = false;
    const third = writer.write(Array.from({ length: 10 }, () => logRow(org))).then(() => (accepted = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(calls).toBe(1);
    expect(accepted).toBe(false);
    expect(writer.stats().bufferedRows).toBe(20);
    release();
    await third;
    await writer.flush();
    await writer.close();
    expect(await countRows(t, org)).toBe(30);
  });

  it('takes lines encoded elsewhere with its encoding (writeEncoded) as it takes rows, sealing by their count', async () => {
    const org = newGuid();
    const writer = await CallLogWriter.open({
      insert: realInsert,
      spoolDir: newSpoolDir(),
      logger: new CapturedLog(),
      batchRows: 10,
      sensitiveHeaderNames: ['x-tenant-key'],
    });
    // What a producer on another thread does: the writer's own encoding, as plain data.
    const encoder = new LineEncoder(callLogRowEncoder(structuredClone(writer.encoding)));
    const headers = { 'x-tenant-key': 'tenantsecret', authorization: 'Bearer topsecret' };
    const lines = encoder.encode(Array.from({ length: 12 }, () => logRow(org, { requestHeaders: headers })));
    expect(lines.rows).toBe(12);
    // Copied out of the encoder's scratch, as the seed's worker copies them into shared memory.
    await writer.writeEncoded({ rows: lines.rows, thin: Buffer.from(lines.thin), detail: Buffer.from(lines.detail!) });
    // Sealed at 12 rows (batchRows 10): inserted without a flush.
    await vi.waitFor(async () => expect(await countRows(t, org)).toBe(12), { timeout: 10_000 });
    await writer.write([logRow(org)]);
    await writer.flush();
    expect(await countRows(t, org)).toBe(13);
    expect(await countRows(t, org, 'call_log_details')).toBe(12);
    const stored = await (
      await real.query({
        query: 'SELECT request_headers FROM call_log_details WHERE organization_guid = {org:String}',
        query_params: { org },
        format: 'JSONEachRow',
      })
    ).text();
    expect(stored).toContain('x-tenant-key');
    expect(stored).not.toContain('tenantsecret');
    expect(stored).not.toContain('topsecret');
    await writer.close();
    await expect(writer.writeEncoded(lines)).rejects.toThrow(/closed/);
  });

  it('inserts rows that arrive slowly within flushIntervalMs, and a busy segment only after busyFlushIntervalMs', async () => {
    const org = newGuid();
    const inserts: { at: number; rows: number }[] = [];
    const insert = async (request: EncodedInsert) => {
      if (request.table === 'call_logs') inserts.push({ at: Date.now(), rows: bodyText(request.body).split('\n').filter(Boolean).length });
      return realInsert(request);
    };
    const writer = await CallLogWriter.open({
      insert,
      spoolDir: newSpoolDir(),
      logger: new CapturedLog(),
      flushIntervalMs: 100,
      busyRows: 50,
      busyFlushIntervalMs: 3000,
    });
    await writer.write(Array.from({ length: 10 }, () => logRow(org)));
    await vi.waitFor(() => expect(inserts).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(inserts.map((i) => i.rows)).toEqual([10]);
    const busyAt = Date.now();
    await writer.write(Array.from({ length: 60 }, () => logRow(org)));
    // Ten times the short interval later the busy segment still waits.
    await new Promise((r) => setTimeout(r, 1000));
    expect(inserts).toHaveLength(1);
    await vi.waitFor(() => expect(inserts).toHaveLength(2), { timeout: 10_000, interval: 20 });
    expect(inserts[1]!.rows).toBe(60);
    expect(inserts[1]!.at - busyAt).toBeGreaterThanOrEqual(3000);
    await writer.close();
    expect(await countRows(t, org)).toBe(70);
  });

  it('catchUp inserts quiet rows before a read, once for reads that come together, and never waits for busy rows', async () => {
    const org = newGuid();
    const inserts: number[] = [];
    let holdInserts: Promise<void> | null = null;
    const insert = async (request: EncodedInsert) => {
      if (request.table === 'call_logs') inserts.push(bodyText(request.body).split('\n').filter(Boolean).length);
      await holdInserts;
      return realInsert(request);
    };
    const writer = await CallLogWriter.open({
      insert,
      spoolDir: newSpoolDir(),
      logger: new CapturedLog(),
      flushIntervalMs: 60_000,
      busyRows: 50,
      busyFlushIntervalMs: 60_000,
    });
    await writer.write(Array.from({ length: 3 }, () => logRow(org)));
    // Three reads at once: one insert, and each read finds the rows in.
    await Promise.all([writer.catchUp(), writer.catchUp(), writer.catchUp()]);
    expect(inserts).toEqual([3]);
    expect(await countRows(t, org)).toBe(3);
    // Nothing waiting: no insert.
    await writer.catchUp();
    expect(inserts).toEqual([3]);

    // A read that comes while another read's insert runs waits for it, then has its own rows inserted.
    let release!: () => void;
    holdInserts = new Promise((r) => (release = r));
    await writer.write([logRow(org)]);
    const first = writer.catchUp();
    await vi.waitFor(() => expect(inserts).toEqual([3, 1]));
    await writer.write([logRow(org), logRow(org)]);
    const second = writer.catchUp();
    release();
    holdInserts = null;
    await Promise.all([first, second]);
    expect(inserts).toEqual([3, 1, 2]);
    expect(await countRows(t, org)).toBe(6);

    // Busy rows (busyRows or more waiting) are left to their interval: the read does not wait for a large insert.
    await writer.write(Array.from({ length: 50 }, () => logRow(org)));
    await writer.catchUp();
    expect(inserts).toEqual([3, 1, 2]);
    await writer.flush();
    // ... and the pace stays busy until a segment is sealed quiet: a few rows after a busy segment are not inserted for a read.
    await writer.write([logRow(org)]);
    await writer.catchUp();
    expect(inserts).toEqual([3, 1, 2, 50]);
    await writer.flush();
    await writer.write([logRow(org)]);
    await writer.catchUp();
    expect(inserts).toEqual([3, 1, 2, 50, 1, 1]);
    await writer.close();
    expect(await countRows(t, org)).toBe(58);
  });

  it('catchUp gives up after CATCH_UP_WAIT_MS, and never rejects while ClickHouse fails', async () => {
    const org = newGuid();
    let mode: 'hang' | 'fail' | 'ok' = 'hang';
    let release!: () => void;
    const hung = new Promise<void>((r) => (release = r));
    const insert = async (request: EncodedInsert) => {
      if (mode === 'hang') await hung;
      if (mode === 'fail') throw new Error('ECONNREFUSED: ClickHouse is away');
      return realInsert(request);
    };
    const log = new CapturedLog();
    const writer = await CallLogWriter.open({ insert, spoolDir: newSpoolDir(), logger: log, flushIntervalMs: 60_000, retryMinMs: 60_000 });
    await writer.write([logRow(org)]);
    // An insert that does not end: the read goes on after the bound.
    const started = Date.now();
    await writer.catchUp();
    expect(Date.now() - started).toBeGreaterThanOrEqual(CATCH_UP_WAIT_MS - 50);
    mode = 'fail';
    release();
    // A refused insert: the read goes on without the rows, no error.
    await vi.waitFor(() => expect(log.text()).toMatch(/insert failed/));
    await writer.write([logRow(org)]);
    await expect(writer.catchUp()).resolves.toBeUndefined();
    expect(await countRows(t, org)).toBe(0);
    mode = 'ok';
    await writer.close();
  });

  it('moves a segment ClickHouse refuses as data to spool/rejected and goes on with the next', async () => {
    const org = newGuid();
    const dir = newSpoolDir();
    // A segment from an earlier run whose thin row ClickHouse cannot parse (a broken guid), then a good one.
    const good = encodeCallLog(logRow(org));
    fs.writeFileSync(path.join(dir, `${newSegmentName()}`), `"${org}","not-a-uuid",${good.thin.split(',').slice(2).join(',')}`);
    fs.writeFileSync(path.join(dir, `${newSegmentName()}`), good.thin);
    const log = new CapturedLog();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: dir, logger: log, retryMinMs: 1, retryMaxMs: 2 });
    await vi.waitFor(async () => expect(await countRows(t, org)).toBe(1), { timeout: 20_000, interval: 50 });
    await writer.close();
    expect(fs.readdirSync(path.join(dir, 'rejected'))).toHaveLength(1);
    expect(listSegments(dir)).toEqual([]);
    expect(log.text()).toMatch(/rejects a spool segment/);
  });

  it('refuses a malformed row before accepting any of the batch', async () => {
    const org = newGuid();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: newSpoolDir(), logger: new CapturedLog() });
    await expect(writer.write([logRow(org), logRow(org, { userGuid: 'not-a-guid' })])).rejects.toThrow(/userGuid/);
    await expect(writer.write([logRow(org, { traceId: 'xyz' })])).rejects.toThrow(/traceId/);
    await expect(writer.write([logRow('nope')])).rejects.toThrow(/organizationGuid/);
    // Outside DateTime64's range ClickHouse would refuse the whole batch: refused here instead.
    await expect(writer.write([logRow(org, { createdAt: -1 })])).rejects.toThrow(/createdAt/);
    await expect(writer.write([logRow(org, { createdAt: Date.UTC(2300, 0, 1) })])).rejects.toThrow(/createdAt/);
    await expect(writer.write([logRow(org, { createdAt: Number.NaN })])).rejects.toThrow(/createdAt/);
    await writer.flush();
    expect(await countRows(t, org)).toBe(0);
    // The well-formed rows before a malformed one are not carried into the next batch either.
    await writer.write([logRow(org)]);
    await writer.flush();
    await writer.close();
    expect(await countRows(t, org)).toBe(1);
  });

  it('appends the writes of one turn of the event loop together, a malformed row refusing its own write alone', async () => {
    const org = newGuid();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: newSpoolDir(), logger: new CapturedLog() });
    const appends = vi.spyOn(fs, 'writeSync');
    try {
      const good = [[logRow(org)], [logRow(org), logRow(org)], [logRow(org)]];
      const outcomes = await Promise.allSettled([
        writer.write(good[0]!),
        writer.write(good[1]!),
        writer.write([logRow(org), logRow(org, { userGuid: 'not-a-guid' })]),
        writer.write(good[2]!),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/userGuid/);
      // One append to the segment's file (no row has detail) for the four writes.
      expect(appends).toHaveBeenCalledTimes(1);
      // A write in a later turn is appended on its own.
      await writer.write([logRow(org)]);
      expect(appends).toHaveBeenCalledTimes(2);
      await writer.flush();
      await writer.close();
      expect(await countRows(t, org)).toBe(5);
    } finally {
      appends.mockRestore();
    }
  });

  it('keeps the rows written in the turn close is called in', async () => {
    const org = newGuid();
    const dir = newSpoolDir();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: dir, logger: new CapturedLog() });
    const written = writer.write([logRow(org), logRow(org)]);
    await writer.close();
    await written;
    await expect(writer.write([logRow(org)])).rejects.toThrow(/closed/);
    expect(await countRows(t, org)).toBe(2);
  });

  it('cuts off what a failed append left and goes on in a new segment (a full disk)', async () => {
    const org = newGuid();
    const dir = newSpoolDir();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: dir, logger: new CapturedLog() });
    const before = [logRow(org), logRow(org)];
    await writer.write(before);
    // The next append writes 40 bytes of its line, then the disk is full.
    const realWriteSync = fs.writeSync;
    const full = vi.spyOn(fs, 'writeSync').mockImplementationOnce(((fd: number, buffer: Buffer) => {
      realWriteSync(fd, buffer.subarray(0, 40));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    }) as unknown as typeof fs.writeSync);
    try {
      await expect(writer.write([logRow(org)])).rejects.toThrow(/ENOSPC/);
    } finally {
      full.mockRestore();
    }
    const after = [logRow(org)];
    await writer.write(after);
    await writer.flush();
    await writer.close();
    expect((await guidsIn(org)).sort()).toEqual([...before, ...after].map((r) => r.guid).sort());
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('stores created_at to the millisecond and guids lowercase', async () => {
    const org = newGuid();
    const user = newGuid();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: newSpoolDir(), logger: new CapturedLog() });
    // The same guid upper then lower case.
    const times = [Date.UTC(2026, 10, 20, 12, 0, 0, 7), Date.UTC(2026, 10, 20, 12, 0, 0, 90), Date.UTC(2026, 10, 20, 12, 0, 1, 0)];
    await writer.write(times.map((createdAt, i) => logRow(org, { createdAt, userGuid: i % 2 ? user : user.toUpperCase() })));
    await writer.flush();
    await writer.close();
    const res = await real.query({
      query: 'SELECT toUnixTimestamp64Milli(created_at) AS ms, user_guid FROM call_logs WHERE organization_guid = {org:String} ORDER BY created_at',
      query_params: { org },
      format: 'JSONEachRow',
    });
    const rows = await res.json<{ ms: number | string; user_guid: string }>();
    expect(rows.map((r) => Number(r.ms))).toEqual(times);
    expect(new Set(rows.map((r) => r.user_guid))).toEqual(new Set([user]));
  });

  it('encodes created_at so that ClickHouse parses it to the millisecond, in both of its forms', async () => {
    // Epoch-seconds text for real call times, the ISO text before 2001. Parsed by ClickHouse's own
    // reader of the writer's format (a row in call_logs from 1999 would be dropped by the retention TTL).
    const times = [
      Date.UTC(2026, 10, 20, 12, 0, 0, 7),
      Date.UTC(2026, 10, 20, 12, 0, 0, 90),
      Date.UTC(1999, 0, 1, 0, 0, 0, 123),
      Date.UTC(2001, 8, 9, 1, 46, 40, 0),
    ];
    const data = times.map((ms) => `["${chEpochMs(ms)}"]`).join('\n');
    const res = await real.query({
      query: `SELECT toUnixTimestamp64Milli(c) AS ms FROM format(${CALL_LOG_INSERT_FORMAT}, 'c DateTime64(3, \\'UTC\\')', {data:String})`,
      query_params: { data },
      format: 'JSONEachRow',
    });
    expect((await res.json<{ ms: number | string }>()).map((r) => Number(r.ms))).toEqual(times);
  });

  it("keeps its deduplication token to its own INSERT (chDB turns a client query's settings into session SETs)", async () => {
    const org = newGuid();
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: newSpoolDir(), logger: new CapturedLog() });
    await writer.write([logRow(org)]);
    await writer.flush();
    await writer.close();
    // An INSERT after the writer's, with no token of its own: had the writer's token stuck to the
    // session, ClickHouse would take this one for a replay of the segment and drop it.
    const later = encodeCallLog(logRow(org));
    await realInsert({
      table: 'call_logs',
      columns: THIN_INSERT_COLUMNS,
      format: CALL_LOG_INSERT_FORMAT,
      body: { chunks: [Buffer.from(later.thin)] },
      settings: {},
    });
    expect(await countRows(t, org)).toBe(2);
  });

  it('inserts as many segments at once as it has lanes, each exactly once, and flush() waits for them all', async () => {
    const org = newGuid();
    const { insert, state } = laneWatchingInsert();
    const writer = await CallLogWriter.open({ insert, lanes: 2, spoolDir: newSpoolDir(), logger: new CapturedLog(), batchRows: 100 });
    const rows = Array.from({ length: 600 }, () => logRow(org, { requestBody: 'b' }));
    for (let i = 0; i < rows.length; i += 100) await writer.write(rows.slice(i, i + 100));
    await writer.flush();
    expect(state.maxInFlight).toBe(2);
    expect((await guidsIn(org)).sort()).toEqual(rows.map((r) => r.guid).sort());
    expect(await countRows(t, org, 'call_log_details')).toBe(600);
    await writer.close();
  });

  it('retries on one lane while ClickHouse fails, and uses every lane again once it accepts', async () => {
    const org = newGuid();
    const { insert, state } = laneWatchingInsert();
    state.down = true;
    const dir = newSpoolDir();
    const writer = await CallLogWriter.open({ insert, lanes: 2, spoolDir: dir, logger: new CapturedLog(), batchRows: 100, retryMinMs: 5, retryMaxMs: 20 });
    const rows = Array.from({ length: 600 }, () => logRow(org));
    for (let i = 0; i < rows.length; i += 100) await writer.write(rows.slice(i, i + 100));
    await expect(writer.flush()).rejects.toThrow(/spool/);
    await sleep(200);
    expect(state.overlapsWhileFailing).toBe(0);
    state.maxInFlight = 0;
    state.down = false;
    // An attempt begun while down still fails as it ends: flush after it, or flush() reports it.
    await vi.waitFor(() => expect(state.failingInFlight).toBe(0));
    await writer.flush();
    expect(state.maxInFlight).toBe(2);
    expect((await guidsIn(org)).sort()).toEqual(rows.map((r) => r.guid).sort());
    expect(listSegments(dir)).toEqual([]);
    await writer.close();
  });

  it('is the writer the runtime uses (services.callLogs)', async () => {
    const org = newGuid();
    await t.runtime.services.callLogs.write([logRow(org)]);
    await t.runtime.services.callLogs.flush();
    expect(await countRows(t, org)).toBe(1);
  });
});

/**
 * Text a host controls (a tool argument, an upstream's error) that, in a CSV field, put the SQL lexer of
 * ClickHouse's client (which chDB runs every insert through) outside the field after the backslash, where the
 * client reads comments as test hints: `echo` prints the statement with its rows to stdout, `retry` with no number
 * fails the insert, `serverError` swallows the insert's own failure.
 */
const HINTED_TEXTS = [
  '\\" -- { echo }',
  '\\" -- { retry abc }',
  '\\" -- { serverError 27 }',
  '\\" /* { clientError 62 } */',
  '\\" # { echoOn }',
  'a backslash ends this \\',
];

describe("call-log text that ClickHouse's client reads as test hints", () => {
  it('is stored exactly, in one insert', async () => {
    const org = newGuid();
    const rows = HINTED_TEXTS.map((text) => logRow(org, { toolName: text, errorMessage: text, requestBody: text, responseBody: text }));
    const writer = await CallLogWriter.open({ insert: realInsert, spoolDir: newSpoolDir(), logger: new CapturedLog() });
    await writer.write(rows);
    await writer.flush();
    await writer.close();
    const thin = await real.query({
      query: 'SELECT toString(guid) AS guid, tool_name, error_message FROM call_logs WHERE organization_guid = {org:String}',
      query_params: { org },
      format: 'JSONEachRow',
    });
    const details = await real.query({
      query: 'SELECT toString(guid) AS guid, request_body, response_body FROM call_log_details WHERE organization_guid = {org:String}',
      query_params: { org },
      format: 'JSONEachRow',
    });
    const stored = new Map<string, string[]>();
    for (const r of await thin.json<{ guid: string; tool_name: string; error_message: string }>()) stored.set(r.guid, [r.tool_name, r.error_message]);
    for (const r of await details.json<{ guid: string; request_body: string; response_body: string }>())
      stored.get(r.guid)?.push(r.request_body, r.response_body);
    expect(stored.size).toBe(rows.length);
    for (const [i, row] of rows.entries()) expect(stored.get(row.guid!)).toEqual(Array(4).fill(HINTED_TEXTS[i]));
    // An embedded store's inserts read their bodies from files, each removed once its insert ended.
    if (t.runtime.services.clickhouse.kind === 'chdb') expect(fs.readdirSync(path.join(t.runtime.services.config.dataDir, 'clickhouse-inserts'))).toEqual([]);
  });

  // chDB's client writes an echoed statement to the process's fd 1 (the service's JSON log stream), where only
  // another process can see it: a child inserts the rows into an embedded store of its own. Once: nothing here
  // depends on the configuration store.
  it.runIf(storeKind() === 'pglite')("prints nothing of the rows to the process's output", async () => {
    // A quote and a backslash in its name: the insert names its body's file in a string literal.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "call-logs-'quoted' \\ "));
    spoolDirs.push(dataDir);
    // The echoing ones alone: the others fail the insert, or print their own complaint, in CSV.
    const echoing = HINTED_TEXTS.filter((text) => text.includes('echo'));
    const script = `
      import { migrateClickhouse, openClickhouse } from './src/stores/clickhouse.ts';
      import { CALL_LOG_INSERT_FORMAT, DETAIL_INSERT_COLUMNS, encodeCallLog } from './src/core/logs/call-log-row.ts';
      import { logRow } from './test/helpers/call-logs.ts';
      const texts = JSON.parse(process.env.HINTED_TEXTS);
      const store = await openClickhouse({ dataDir: process.env.DATA_DIR });
      await migrateClickhouse(store, { retentionDays: 30 });
      const org = '${newGuid()}';
      const lines = texts.map((text) => encodeCallLog(logRow(org, { requestBody: text, responseBody: text })).detail);
      await store.insertEncoded({ table: 'call_log_details', columns: DETAIL_INSERT_COLUMNS, format: CALL_LOG_INSERT_FORMAT, body: { chunks: [Buffer.from(lines.join(''))] }, settings: {} });
      const counted = await store.client.query({ query: 'SELECT count() AS n FROM call_log_details', format: 'JSONEachRow' });
      process.stderr.write('stored ' + (await counted.json())[0].n + '\\n');
      await store.close();
    `;
    const child = spawn(NODE, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...process.env, DATA_DIR: dataDir, HINTED_TEXTS: JSON.stringify(echoing) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: `stored ${echoing.length}\n` });
    expect(stdout).toBe('');
  });
});

describe('redaction', () => {
  it('redacts the values of sensitive header names, case-insensitively, and any explicitly listed name', () => {
    const headers = {
      Authorization: 'Bearer a',
      COOKIE: 'c',
      'x-api-key': 'k',
      'Proxy-Authorization': 'p',
      'SVC-Anything': 's',
      'X-Tenant-Key': 't',
      Accept: 'json',
    };
    expect(redactHeaders(headers, ['x-tenant-key'])).toEqual({
      Authorization: '[REDACTED]',
      COOKIE: '[REDACTED]',
      'x-api-key': '[REDACTED]',
      'Proxy-Authorization': '[REDACTED]',
      'SVC-Anything': '[REDACTED]',
      'X-Tenant-Key': '[REDACTED]',
      Accept: 'json',
    });
    expect(isSensitiveHeaderName('accept')).toBe(false);
  });

  it('redacts a debug context at any depth, and credentials spelled out in strings', () => {
    const out = JSON.stringify(
      redactDeep({
        response: {
          headers: { 'www-authenticate': 'x', authorization: 'Bearer abc.def' },
          body: 'token was Bearer abc.def here',
          nested: [{ cookie: 'id=1' }],
        },
        clientSecret: 'shh',
      }),
    );
    expect(out).not.toContain('abc.def');
    expect(out).not.toContain('id=1');
    expect(out).not.toContain('shh');
    expect(out).toContain('www-authenticate');
  });

  it('truncates on a UTF-8 character boundary', () => {
    expect(truncateUtf8('aé', 2)).toEqual({ text: 'a', truncated: true });
    expect(truncateUtf8('😀😀', 7)).toEqual({ text: '😀', truncated: true });
    expect(truncateUtf8('abc', 3)).toEqual({ text: 'abc', truncated: false });
  });

  it('encodes a thin row as a JSON line of its columns that ClickHouse reads back exactly', async () => {
    const org = newGuid();
    const text = { method: 'tools/"call"\\', toolName: 'line\nbreak\u2028 😀', errorMessage: '</script>\t"quoted"\u0000', sessionId: '\\s"1' };
    // A lone surrogate is stored as U+FFFD (as an escape, ClickHouse would refuse the whole insert).
    const lone = 'half of a pair \ud800';
    const row = logRow(org.toUpperCase(), {
      ...text,
      protocolVersion: '2025-11-25',
      parentSpanId: 'b7ad6b7169203331',
      status: 'error',
      errorType: '-32602',
      createdAt: Date.UTC(2026, 10, 20, 12, 0, 0, 5),
      durationMs: 7.6,
    });
    const columns = await lineFields(encodeCallLog(row).thin);
    expect(columns).toEqual([
      org,
      row.guid,
      `${Date.UTC(2026, 10, 20, 12) / 1000}.005`,
      'tool_call',
      text.method,
      text.toolName,
      'error',
      text.errorMessage,
      '-32602',
      '8',
      '100',
      '200',
      row.gatewayConnectionGuid,
      row.userGuid,
      row.outboundGatewayGuid,
      row.inboundServerGuid,
      row.hostGuid,
      row.serverContainerGuid,
      row.teamGuid,
      row.traceId,
      row.spanId,
      'b7ad6b7169203331',
      text.sessionId,
      '2025-11-25',
    ]);
    // Absent optional values are empty strings, as ClickHouse stores them.
    const bare = await lineFields(encodeCallLog({ organizationGuid: org, createdAt: 0, type: 'other', method: 'ping', status: 'ok', durationMs: 0 }).thin);
    expect(bare.slice(4, 9)).toEqual(['ping', '', 'ok', '', '']);
    expect(bare.slice(12, 19)).toEqual(['', '', '', '', '', '', '']);
    expect(bare.slice(21)).toEqual(['', '', '']);
    const [, , , , , toolName] = await lineFields(encodeCallLog(logRow(org, { toolName: lone })).thin);
    expect(toolName).toBe('half of a pair \ufffd');
  });

  it('writes a remembered text or trace id exactly as a new one, each column cut at its own limit', () => {
    const org = newGuid();
    const fields = (row: CallLogInput) => JSON.parse(encodeCallLog(row).thin) as string[];
    // The same 100 characters in a column cut at 500 and in one cut at 40, twice each (the second time remembered).
    const text = `${'é'.repeat(60)}${'x'.repeat(39)}\ud800`;
    for (let i = 0; i < 2; i++) {
      const [, , , , , toolName, , , errorType] = fields(logRow(org, { toolName: text, errorType: text }));
      expect(toolName).toBe(`${text.slice(0, 99)}\ufffd`);
      expect(errorType).toBe(text.slice(0, 40));
    }
    // Past the remembered count, and past the remembered length, every value is still its own.
    for (let i = 0; i < 5000; i++) expect(fields(logRow(org, { sessionId: `s-${i}` }))[22]).toBe(`s-${i}`);
    const long = 'y'.repeat(300);
    expect(fields(logRow(org, { sessionId: long }))[22]).toBe(long.slice(0, 200));
    // A trace id repeated is checked once and lowercased each time; another after it is checked again.
    const trace = 'ABCDEF0123456789ABCDEF0123456789';
    expect(fields(logRow(org, { traceId: trace }))[19]).toBe(trace.toLowerCase());
    expect(fields(logRow(org, { traceId: trace }))[19]).toBe(trace.toLowerCase());
    expect(() => encodeCallLog(logRow(org, { traceId: `${trace.slice(1)}g` }))).toThrow(/traceId must be 32 hex characters/);
    expect(fields(logRow(org, { traceId: trace }))[19]).toBe(trace.toLowerCase());
  });

  it('gives a row without a guid a unique UUIDv7 carrying the time it was written', () => {
    const before = Date.now();
    const guids = Array.from({ length: 5000 }, () => keysOf(encodeCallLog({ ...logRow(newGuid()), guid: undefined }).thin).guid);
    const after = Date.now();
    expect(new Set(guids).size).toBe(guids.length);
    for (const guid of guids) {
      expect(guid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = parseInt(guid.replace('-', '').slice(0, 12), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(after);
    }
  });

  it('never encodes a sensitive header value into a row', () => {
    const encoded = encodeCallLog(
      logRow(newGuid(), { requestHeaders: { authorization: 'Bearer topsecret', 'X-Id-Header': 'idsecret' }, sensitiveHeaderNames: ['x-id-header'] }),
    );
    expect(encoded.detail).not.toContain('topsecret');
    expect(encoded.detail).not.toContain('idsecret');
  });
});

/** The first fields of an encoded line: the workspace, the row guid, the time. */
function keysOf(line: string): { org: string; guid: string; createdAt: string } {
  const [org, guid, createdAt] = JSON.parse(line) as string[];
  return { org: org!, guid: guid!, createdAt: createdAt! };
}

/** An encoded thin line's fields as ClickHouse's own reader of its format takes them, each as text. */
async function lineFields(line: string): Promise<string[]> {
  const structure = THIN_INSERT_COLUMNS.map((c) => `${c} String`).join(', ');
  const res = await real.query({
    query: `SELECT * FROM format(${CALL_LOG_INSERT_FORMAT}, '${structure}', {line:String})`,
    query_params: { line },
    format: 'JSONCompactEachRow',
  });
  const rows = await res.json<string[]>();
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** ClickHouse renices its threads only with CAP_SYS_NICE (bit 23 of the effective set). */
const hasSysNice = (): boolean => {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  return (BigInt(`0x${/^CapEff:\s*([0-9a-f]+)/m.exec(status)![1]}`) >> 23n) % 2n === 1n;
};

describe('reads before writes (embedded store)', () => {
  it('runs the merges, the inserts and their rollup views at WRITE_NICE, above the queries', async (ctx) => {
    if (t.runtime.services.clickhouse.kind !== 'chdb') ctx.skip();
    const [merges] = await (
      await real.query({ query: "SELECT value FROM system.server_settings WHERE name = 'os_threads_nice_value_merge_mutate'", format: 'JSONEachRow' })
    ).json<{ value: string }>();
    expect(Number(merges!.value)).toBe(WRITE_NICE);

    if (process.platform !== 'linux' || !hasSysNice()) ctx.skip();
    expect(threadsAtNice(WRITE_NICE).filter((name) => name !== 'MergeMutate')).toEqual([]);
    const org = newGuid();
    const rows = 50_000;
    const line = encodeCallLog(logRow(org)).thin;
    const seen = new Set<string>();
    const sampler = setInterval(() => threadsAtNice(WRITE_NICE).forEach((name) => seen.add(name)), 2);
    try {
      await realInsert({
        table: 'call_logs',
        columns: THIN_INSERT_COLUMNS,
        format: CALL_LOG_INSERT_FORMAT,
        body: { chunks: [Buffer.from(line.repeat(rows))] },
        settings: {},
      });
    } finally {
      clearInterval(sampler);
    }
    seen.delete('MergeMutate');
    // The insert's own threads (the one that parses, the views' pipelines) were seen at WRITE_NICE ...
    expect(seen.size).toBeGreaterThan(0);
    expect(await countRows(t, org)).toBe(rows);
    // ... and went back to 0 when it ended: queries after it run at the usual priority.
    expect(threadsAtNice(WRITE_NICE).filter((name) => name !== 'MergeMutate')).toEqual([]);
  });
});

describe('insert lanes (embedded store)', () => {
  it('runs insertLanes inserts at once, each on a connection of its own, and queues the rest', async (ctx) => {
    const store = t.runtime.services.clickhouse;
    if (store.kind !== 'chdb') ctx.skip();
    expect(store.insertLanes).toBe(2);
    const org = newGuid();
    const line = encodeCallLog(logRow(org)).thin;
    const running: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        // Without parameters: chDB runs parameterized statements one at a time in the process.
        const res = await real.query({ query: "SELECT count() AS n FROM system.processes WHERE query LIKE 'INSERT INTO call_logs %'", format: 'JSONEachRow' });
        running.push(Number((await res.json<{ n: string }>())[0]!.n));
      }
    })();
    try {
      await Promise.all(
        [0, 1, 2, 3].map((i) =>
          store.insertEncoded({
            table: 'call_logs',
            columns: THIN_INSERT_COLUMNS,
            format: CALL_LOG_INSERT_FORMAT,
            body: { chunks: [Buffer.from(line.repeat(50_000))] },
            settings: { insert_deduplication_token: `lanes-${org}-${i}` },
          }),
        ),
      );
    } finally {
      sampling = false;
      await sampler;
    }
    expect(await countRows(t, org)).toBe(200_000);
    expect(Math.max(...running)).toBe(2);
  });
});
