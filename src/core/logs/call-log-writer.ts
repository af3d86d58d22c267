import fs from 'node:fs';
import { ClickHouseError } from '@clickhouse/client';
import type { InsertEncoded, InsertFormat } from '../../stores/clickhouse.js';
import type { Logger } from '../logger.js';
import {
  CALL_LOG_INSERT_FORMAT,
  callLogRowEncoder,
  DETAIL_INSERT_COLUMNS,
  THIN_INSERT_COLUMNS,
  type CallLogEncoding,
  type CallLogInput,
} from './call-log-row.js';
import { LineEncoder, type EncodedLines, type EncodedRow } from './encoded-lines.js';
import { appendLines, detailPath, listSegments, newSegmentName, quarantineSegment, removeSegment, repairSegment, segmentFiles, segmentPath } from './spool.js';

/** The tables a spool's segments are inserted into (the main rows, and the optional detail rows) and the format of their lines. */
export interface SpoolTables {
  format: InsertFormat;
  thin: { table: string; columns: readonly string[] };
  detail?: { table: string; columns: readonly string[] };
}

const CALL_LOG_TABLES: SpoolTables = {
  format: CALL_LOG_INSERT_FORMAT,
  thin: { table: 'call_logs', columns: THIN_INSERT_COLUMNS },
  detail: { table: 'call_log_details', columns: DETAIL_INSERT_COLUMNS },
};

/** The one way rows reach a spooled log table: every producer of call logs (gateway, seed-logs) and of audit records writes through one. */
export interface SpoolSink<R> {
  /**
   * Accepts rows: they are validated, redacted, appended to the on-disk spool and
   * then acknowledged. Waits (back-pressure) while too much is buffered.
   * Throws TypeError on a malformed row, before accepting any of `rows`.
   */
  write(rows: readonly R[]): Promise<void>;
  /** Resolves once every row accepted before the call is in ClickHouse; rejects when ClickHouse refuses now (the rows stay spooled). */
  flush(): Promise<void>;
  /**
   * Before a read: inserts the rows waiting for their segment's interval now, when that
   * is cheap, so the read sees them (see SpoolWriter.catchUp). Never rejects.
   */
  catchUp(): Promise<void>;
  /** Stops accepting, inserts what it can and leaves the rest in the spool for the next start. */
  close(): Promise<void>;
}

/** The call logs' sink, which also takes rows encoded on another thread (seed-logs' worker) with its own encoding. */
export interface CallLogSink extends SpoolSink<CallLogInput> {
  /** How this sink encodes a row (callLogRowEncoder), as plain data a producer on another thread can take. */
  readonly encoding: CallLogEncoding;
  /** As write(), for lines encoded with callLogRowEncoder(this.encoding): rows validated and redacted where they were made. */
  writeEncoded(lines: EncodedLines): Promise<void>;
}

export interface CallLogWriterOptions {
  /** The store's bulk insert (lines in the tables' format). */
  insert: InsertEncoded;
  /** Directory of the write-ahead spool (DATA_DIR/spool/call-logs). */
  spoolDir: string;
  logger: Logger;
  /** A segment is sealed and inserted at this many rows ... */
  batchRows?: number;
  /** ... or when its first row is this old ... */
  flushIntervalMs?: number;
  /** ... unless it already holds this many rows: then when its first row is busyFlushIntervalMs old. */
  busyRows?: number;
  busyFlushIntervalMs?: number;
  /** write() waits while this many accepted rows are not yet inserted. */
  maxBufferedRows?: number;
  /** write() waits while the spool holds this many bytes (a long outage). */
  maxSpoolBytes?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Sealed segments inserted at once, each on its own (the store's insertLanes); 1 keeps them in order. */
  lanes?: number;
  /** Header names redacted on every row, beyond the built-in list. */
  sensitiveHeaderNames?: readonly string[];
}

export interface SpoolWriterOptions<R> extends Omit<CallLogWriterOptions, 'sensitiveHeaderNames'> {
  /** Validates, redacts and encodes one row; throws TypeError on a malformed one. */
  encode: (row: R) => EncodedRow;
  tables: SpoolTables;
}

interface Segment {
  name: string;
  rows: number;
  bytes: number;
  startedAt: number;
  attempts: number;
  /** Whether its rows count against maxBufferedRows: this process's, until inserted or ClickHouse fails. */
  counted: boolean;
  /** The open segment's files, appended to synchronously (see write()); the detail file once a row has detail. */
  fd?: number;
  detailFd?: number;
}

/**
 * A segment's rows at most, so an insert's part: at a bulk load's pace every insert costs
 * chDB a fixed amount and every part is merged again, so fewer, larger parts save CPU a
 * row. The rows wait on disk, not in memory; what grows is the engine's block for the
 * insert (docs/call-logs.md, "Session 36: 200k-row segments").
 */
export const SEGMENT_ROWS = 200_000;

/**
 * A quiet segment's interval on the embedded store, for which an insert is most of a quiet
 * service's CPU: reads have the rows they follow inserted first (catchUp), so a longer wait
 * costs them nothing (docs/decisions.md, "How soon a call is in query_logs").
 */
export const EMBEDDED_FLUSH_INTERVAL_MS = 10_000;

/** How long a read waits for the rows it has a writer insert (catchUp) before it goes on without them. */
export const CATCH_UP_WAIT_MS = 2000;

/** A segment's INSERT settings: deduplicated by its token (a replay inserts nothing twice), tagged with its table. */
export const segmentInsertSettings = (table: string, token: string): Record<string, string | number> => ({
  insert_deduplicate: 1,
  insert_deduplication_token: token,
  log_comment: `spool-writer ${table}`,
});

interface PendingWrite<R> {
  rows: readonly R[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true } | { ok: false; error: unknown };

/** ClickHouse refused the data itself (not the connection): retrying the same segment forever would block the spool. */
const isRejectedContent = (err: unknown): boolean =>
  err instanceof ClickHouseError && /PARSE|INCORRECT_DATA|TYPE_MISMATCH|TOO_LARGE|CANNOT_READ|SYNTAX/.test(err.type ?? '');

/** The call-log writer: a spool writer of call logs into call_logs and call_log_details. */
export const CallLogWriter = {
  open: async (opts: CallLogWriterOptions): Promise<SpoolWriter<CallLogInput> & CallLogSink> => {
    const { sensitiveHeaderNames = [], ...rest } = opts;
    const encoding: CallLogEncoding = { sensitiveHeaderNames };
    const writer = await SpoolWriter.open<CallLogInput>({ ...rest, encode: callLogRowEncoder(encoding), tables: CALL_LOG_TABLES });
    return Object.assign(writer, { encoding });
  },
};

/**
 * Batches rows (call logs, audit records) into ClickHouse through a write-ahead spool on disk.
 *
 * Rows are appended to the open segment's files before write() resolves; a segment
 * is sealed at `batchRows` rows or after `flushIntervalMs` (`busyFlushIntervalMs` once it
 * holds `busyRows`), and sealed segments are inserted oldest first, `lanes` at a time
 * (one after another with one lane), each with its file name as
 * insert_deduplication_token, so a replay after a crash or an outage inserts every row
 * exactly once. With two lanes a segment can land before an older one still inserting:
 * readers order by time, and the forwarder's horizon waits for every INSERT still
 * running (docs/forwarding.md). ingested_at is stamped by ClickHouse as each INSERT
 * runs. While ClickHouse is unreachable rows keep being accepted into the spool (bounded by
 * `maxSpoolBytes`) and are inserted when it returns, also after a restart.
 */
export class SpoolWriter<R> implements SpoolSink<R> {
  private readonly opts: Required<SpoolWriterOptions<R>>;
  private openSegment: Segment | null = null;
  private readonly sealed: Segment[] = [];
  /** The rows of the segment sealed last in this process: whether rows come at a busy pace. */
  private lastSealedRows = 0;
  /** The insert a read's catchUp started, while it runs. */
  private catchingUp: Promise<void> | null = null;
  private bufferedRows = 0;
  private spoolBytes = 0;
  private serialChain: Promise<unknown> = Promise.resolve();
  /** The running drain loops, one per lane in use; each inserts one sealed segment at a time. */
  private readonly drains = new Set<Promise<void>>();
  private readonly inserting = new Set<Segment>();
  private roomWaiters: (() => void)[] = [];
  private outcomeWaiters: ((o: Outcome) => void)[] = [];
  private wakeSleeper: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closing = false;
  private failing = false;
  private readonly encoder: LineEncoder<R>;
  /** The writes of this turn of the event loop, appended together when it ends (see write()). */
  private turn: PendingWrite<R>[] | null = null;
  private turnEnd: NodeJS.Immediate | undefined;

  private constructor(opts: SpoolWriterOptions<R>) {
    this.opts = {
      batchRows: SEGMENT_ROWS,
      // Every insert costs chDB a fixed amount of CPU whatever its rows (a part for call_logs and for each rollup
      // its views feed): slow rows land within a second, fast ones within 4 s, in a quarter of the inserts
      // (docs/call-logs.md, "Session 20: a longer flush when rows come fast").
      flushIntervalMs: 1000,
      busyRows: 1000,
      busyFlushIntervalMs: 4000,
      // Room for a segment filling while each lane inserts one, and one more sealed: producers never wait for an insert.
      maxBufferedRows: 4 * SEGMENT_ROWS,
      maxSpoolBytes: 1024 ** 3,
      retryMinMs: 250,
      retryMaxMs: 30_000,
      lanes: 1,
      ...opts,
    };
    this.encoder = new LineEncoder(opts.encode);
  }

  /** Creates the spool directory, picks up segments a previous run left and starts inserting them. */
  static async open<R>(opts: SpoolWriterOptions<R>): Promise<SpoolWriter<R>> {
    const writer = new SpoolWriter(opts);
    await fs.promises.mkdir(opts.spoolDir, { recursive: true });
    for (const name of listSegments(opts.spoolDir)) {
      const size = repairSegment(opts.spoolDir, name);
      writer.sealed.push({ name, rows: 0, bytes: size, counted: false, startedAt: 0, attempts: 0 });
      writer.spoolBytes += size;
    }
    if (writer.sealed.length) opts.logger.info({ segments: writer.sealed.length }, `${opts.tables.thin.table}: replaying spooled segments`);
    writer.timer = setInterval(() => writer.onTick(), Math.max(10, Math.min(writer.opts.flushIntervalMs, 1000)));
    writer.timer.unref();
    writer.kick();
    return writer;
  }

  /**
   * Accepts rows at the end of this turn of the event loop, with every other write of the
   * turn: one append to each spool file for all of them (a gateway's calls end a few to a
   * turn under load, and each append is a system call; docs/call-logs.md, "Session 43").
   */
  async write(rows: readonly R[]): Promise<void> {
    this.refuseWhenClosed();
    if (rows.length === 0) return;
    if (!this.hasRoom()) await this.waitForRoom();
    this.refuseWhenClosed();
    return new Promise<void>((resolve, reject) => {
      if (!this.turn) {
        this.turn = [];
        this.turnEnd = setImmediate(() => void this.endTurn());
      }
      this.turn.push({ rows, resolve, reject });
    });
  }

  /** As write(), for lines another thread encoded with this writer's row encoder (seed-logs' worker). */
  async writeEncoded(lines: EncodedLines): Promise<void> {
    this.refuseWhenClosed();
    if (lines.rows === 0) return;
    await this.waitForRoom();
    await this.serial(async () => {
      this.refuseWhenClosed();
      await this.appendNow(lines);
    });
  }

  private refuseWhenClosed(): void {
    if (this.closing) throw new Error('The call-log writer is closed.');
  }

  /**
   * Appends the rows written this turn, each write's rows encoded on their own (a malformed
   * row refuses its write alone). Runs when the turn ends, or at once when a flush, a read's
   * catchUp or close comes first; resolves once they are appended.
   */
  private endTurn(): Promise<void> {
    const writes = this.turn;
    if (!writes) return Promise.resolve();
    this.turn = null;
    clearImmediate(this.turnEnd);
    return this.serial(async () => {
      // Encoded inside serial(): the encoder's lines are views that live until its next encode.
      const accepted = writes.filter((write) => {
        try {
          this.encoder.add(write.rows);
          return true;
        } catch (err) {
          write.reject(err);
          return false;
        }
      });
      try {
        await this.appendNow(this.encoder.take());
        for (const write of accepted) write.resolve();
      } catch (err) {
        for (const write of accepted) write.reject(err);
      }
    });
  }

  /** Appends lines to the open segment's files (starting one); seals the segment when full. Runs inside serial(). */
  private async appendNow({ rows, thin, detail }: EncodedLines): Promise<void> {
    if (rows === 0) return;
    const segment = this.openSegment ?? this.startSegment();
    try {
      if (detail) appendLines((segment.detailFd ??= fs.openSync(detailPath(this.opts.spoolDir, segment.name), 'a', 0o600)), detail);
      appendLines(segment.fd!, thin);
    } catch (err) {
      // A failed append (a full disk) can leave a line cut short: cut it off and seal the
      // segment, so that no later line follows it (the whole segment would be refused).
      const kept = repairSegment(this.opts.spoolDir, segment.name);
      this.spoolBytes += kept - segment.bytes;
      segment.bytes = kept;
      await this.seal();
      throw err;
    }
    const bytes = thin.length + (detail?.length ?? 0);
    segment.rows += rows;
    segment.bytes += bytes;
    this.bufferedRows += rows;
    this.spoolBytes += bytes;
    if (segment.rows >= this.opts.batchRows) await this.seal();
  }

  async flush(): Promise<void> {
    void this.endTurn();
    await this.serial(() => this.seal());
    const target = this.sealed.at(-1)?.name;
    if (target === undefined) return;
    for (;;) {
      if (!this.sealed.some((s) => s.name <= target)) return;
      this.kick();
      const outcome = await new Promise<Outcome>((resolve) => this.outcomeWaiters.push(resolve));
      if (!outcome.ok)
        throw new Error('Call logs could not be flushed: ClickHouse refused the insert. The rows stay in the spool and are retried.', { cause: outcome.error });
    }
  }

  /**
   * Inserts the rows waiting for their segment's interval now when that is cheap, so that
   * a read which follows sees every row accepted before it: they come at a quiet pace
   * (fewer than busyRows wait, and the segment sealed last held fewer) and ClickHouse takes
   * inserts. Otherwise they land on their own schedule and this resolves at once: a read
   * during busy ingest never waits for a large insert. Waits at most CATCH_UP_WAIT_MS, and
   * never rejects (a read goes on without the rows).
   */
  async catchUp(): Promise<void> {
    await this.endTurn();
    if (!this.catchingUp && !this.cheapToCatchUp()) return;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), CATCH_UP_WAIT_MS);
    });
    const inTime = (insert: Promise<void>) => Promise.race([insert.then(() => true), deadline]);
    try {
      // A read that comes while another read's rows are inserting waits for that insert, then has its own rows inserted.
      const running = this.catchingUp;
      if (running && !(await inTime(running))) return;
      if (!this.catchingUp && !this.cheapToCatchUp()) return;
      this.catchingUp ??= this.flush()
        .catch(() => undefined)
        .finally(() => {
          this.catchingUp = null;
        });
      await inTime(this.catchingUp);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether inserting every waiting row now is cheap (see catchUp). */
  private cheapToCatchUp(): boolean {
    if (this.closing || this.failing || this.lastSealedRows >= this.opts.busyRows) return false;
    // A segment a previous run left (not counted) has unknown rows: it may be large.
    if (!this.sealed.every((segment) => segment.counted)) return false;
    const waiting = (this.openSegment?.rows ?? 0) + this.sealed.reduce((sum, segment) => sum + segment.rows, 0);
    return waiting > 0 && waiting < this.opts.busyRows;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    // The rows written before close keep their place in the spool; nothing is accepted after.
    void this.endTurn();
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    await this.serial(() => this.seal());
    this.wakeSleeper?.();
    // Wait for the inserts in flight (never close ClickHouse under a running query), then one last pass.
    await this.idle();
    this.kick();
    await this.idle();
    for (const waiter of this.roomWaiters.splice(0)) waiter();
  }

  /** Rows accepted and not yet known to be in ClickHouse (in memory), and spool bytes on disk. */
  stats(): { bufferedRows: number; spoolBytes: number; spooledSegments: number } {
    return { bufferedRows: this.bufferedRows, spoolBytes: this.spoolBytes, spooledSegments: this.sealed.length + (this.openSegment ? 1 : 0) };
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.serialChain.then(fn);
    this.serialChain = next.catch(() => undefined);
    return next;
  }

  private startSegment(): Segment {
    const name = newSegmentName();
    const fd = fs.openSync(segmentPath(this.opts.spoolDir, name), 'a', 0o600);
    this.openSegment = { name, rows: 0, bytes: 0, counted: true, startedAt: Date.now(), attempts: 0, fd };
    return this.openSegment;
  }

  /** Closes the open segment's file and queues it for insertion. Runs inside serial(). */
  private async seal(): Promise<void> {
    const segment = this.openSegment;
    if (!segment) return;
    this.openSegment = null;
    for (const fd of [segment.fd, segment.detailFd]) if (fd !== undefined) fs.closeSync(fd);
    delete segment.fd;
    delete segment.detailFd;
    if (segment.rows === 0) {
      await removeSegment(this.opts.spoolDir, segment.name);
      return;
    }
    this.lastSealedRows = segment.rows;
    this.sealed.push(segment);
    this.kick();
  }

  private onTick(): void {
    const segment = this.openSegment;
    const interval = segment && segment.rows >= this.opts.busyRows ? this.opts.busyFlushIntervalMs : this.opts.flushIntervalMs;
    if (segment && segment.rows > 0 && Date.now() - segment.startedAt >= interval) {
      void this.serial(() => this.seal()).catch((err: unknown) =>
        this.opts.logger.error({ err: String(err) }, `${this.opts.tables.thin.table}: could not seal a spool segment`),
      );
    }
  }

  /** Starts a drain loop per idle lane while sealed segments wait; while ClickHouse fails, one loop probes it. */
  private kick(): void {
    const lanes = this.failing ? 1 : this.opts.lanes;
    while (this.drains.size < lanes && this.nextSegment()) {
      const loop: Promise<void> = this.drain().finally(() => {
        this.drains.delete(loop);
        if (!this.closing) this.kick();
      });
      this.drains.add(loop);
    }
  }

  private async idle(): Promise<void> {
    while (this.drains.size > 0) await Promise.all(this.drains);
  }

  /** The oldest sealed segment no lane is inserting. */
  private nextSegment(): Segment | undefined {
    return this.sealed.find((segment) => !this.inserting.has(segment));
  }

  private async drain(): Promise<void> {
    let delay = this.opts.retryMinMs;
    for (;;) {
      const segment = this.nextSegment();
      if (!segment) return;
      this.inserting.add(segment);
      segment.attempts++;
      try {
        await this.insertSegment(segment);
      } catch (error) {
        this.emitOutcome({ ok: false, error });
        if (isRejectedContent(error) && segment.attempts >= 3) {
          this.opts.logger.error(
            { segment: segment.name, err: (error as Error).message },
            `${this.opts.tables.thin.table}: ClickHouse rejects a spool segment; moved to spool/rejected`,
          );
          await quarantineSegment(this.opts.spoolDir, segment.name).catch(() => undefined);
          this.forget(segment);
          continue;
        }
        if (!this.failing)
          this.opts.logger.warn(
            { err: (error as Error).message },
            `${this.opts.tables.thin.table}: ClickHouse insert failed; rows stay in the spool and are retried`,
          );
        this.failing = true;
        this.inserting.delete(segment);
        this.releaseSealedRows();
        // One loop retries while ClickHouse fails: this one ends if another runs (a success there opens every lane again).
        if (this.closing || this.drains.size > 1) return;
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.opts.retryMaxMs);
        if (this.closing) return;
        continue;
      }
      await removeSegment(this.opts.spoolDir, segment.name);
      this.forget(segment);
      if (this.failing) this.opts.logger.info({}, `${this.opts.tables.thin.table}: ClickHouse accepts inserts again; draining the spool`);
      this.failing = false;
      delay = this.opts.retryMinMs;
      this.emitOutcome({ ok: true });
      this.kick();
    }
  }

  private async insertSegment(segment: Segment): Promise<void> {
    const files = segmentFiles(this.opts.spoolDir, segment.name);
    // ingested_at is stamped by the server as the INSERT runs (column default): a replayed segment gets a fresh one (the forwarder relies on it).
    const { thin, detail } = this.opts.tables;
    if (files.thin) await this.insert(thin.table, thin.columns, files.thin, segment.name);
    if (files.detail && detail) await this.insert(detail.table, detail.columns, files.detail, `${segment.name}:detail`);
  }

  /** Inserts a segment file's lines as one INSERT, deduplicated by `token`. */
  private async insert(table: string, columns: readonly string[], file: string, token: string): Promise<void> {
    await this.opts.insert({
      table,
      columns,
      format: this.opts.tables.format,
      body: { file },
      settings: segmentInsertSettings(table, token),
    });
  }

  private forget(segment: Segment): void {
    this.sealed.splice(this.sealed.indexOf(segment), 1);
    this.inserting.delete(segment);
    if (segment.counted) this.bufferedRows -= segment.rows;
    this.spoolBytes -= segment.bytes;
    this.notifyRoom();
  }

  /** While ClickHouse fails, waiting rows stop counting against maxBufferedRows: producers go on into the spool (bounded by maxSpoolBytes). */
  private releaseSealedRows(): void {
    for (const segment of this.sealed) {
      if (!segment.counted) continue;
      segment.counted = false;
      this.bufferedRows -= segment.rows;
    }
    this.notifyRoom();
  }

  private emitOutcome(outcome: Outcome): void {
    for (const waiter of this.outcomeWaiters.splice(0)) waiter(outcome);
  }

  private notifyRoom(): void {
    if (!this.hasRoom()) return;
    for (const waiter of this.roomWaiters.splice(0)) waiter();
  }

  private hasRoom(): boolean {
    return this.bufferedRows < this.opts.maxBufferedRows && this.spoolBytes < this.opts.maxSpoolBytes;
  }

  private async waitForRoom(): Promise<void> {
    while (!this.closing && !this.hasRoom()) {
      this.kick();
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleeper = done;
    });
  }
}
