import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The write-ahead spool of the call-log writer: accepted rows are appended to a
 * segment's files under DATA_DIR before the producer is told they are accepted, and a
 * segment is deleted only after ClickHouse took all of its rows. Whatever is on disk at
 * start (a ClickHouse outage, a crash, a restart) is replayed.
 *
 * A segment is its two INSERT bodies themselves: `<name>` holds the main table's lines
 * and `<name>.detail` the detail table's (once a row had detail), each line in the
 * tables' format. Nothing is held in memory and nothing is copied: a sealed segment's
 * files are what its INSERTs read (docs/call-logs.md, "Session 35"). A write appends its
 * detail lines first, then its main lines, so a crash between the two leaves detail rows
 * no call-log row points to (never shown) rather than rows without their detail; a line
 * a crash cut short is cut off when the segment is replayed.
 */
export const SEGMENT_SUFFIX = '.spool';
const DETAIL_SUFFIX = '.detail';
const NEWLINE = 0x0a;

let sequence = 0;

/** A segment name that sorts by creation order and is unique across processes; it is also the insert deduplication token. */
export function newSegmentName(): string {
  sequence = (sequence + 1) % 1_000_000;
  return `${Date.now().toString().padStart(15, '0')}-${String(sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}${SEGMENT_SUFFIX}`;
}

/** The file of a segment's main lines. */
export const segmentPath = (dir: string, name: string): string => path.join(dir, name);
/** The file of a segment's detail lines. */
export const detailPath = (dir: string, name: string): string => path.join(dir, `${name}${DETAIL_SUFFIX}`);
/** Both of a segment's files. */
const filesOf = (dir: string, name: string): string[] => [segmentPath(dir, name), detailPath(dir, name)];

/**
 * Appends lines to an open segment file, synchronously: a small write lands in the page
 * cache in about 1 µs of the event loop, where an asynchronous one cost 20-100 µs of it
 * (a thread-pool round trip per row, measured in the gateway's profile). A disk that
 * stalls stalls the event loop with it.
 */
export function appendLines(fd: number, lines: Buffer): void {
  // A write to a regular file can in principle be short: finish it from where it stopped.
  for (let done = 0; done < lines.length;) done += fs.writeSync(fd, lines, done);
}

/** Segments left in `dir`, oldest first. */
export function listSegments(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith(SEGMENT_SUFFIX))
    .sort();
}

/** Bytes of a file, 0 when it does not exist. */
function fileBytes(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

const holdingLines = (file: string): string | null => (fileBytes(file) > 0 ? file : null);

/** A segment's files that hold lines, each an INSERT's body (null for an empty or missing one). */
export function segmentFiles(dir: string, name: string): { thin: string | null; detail: string | null } {
  return { thin: holdingLines(segmentPath(dir, name)), detail: holdingLines(detailPath(dir, name)) };
}

/** How many of a file's `size` bytes end with its last newline: what is left once a crash's unfinished line is cut off. */
function completeLineBytes(file: string, size: number): number {
  if (size === 0) return 0;
  const fd = fs.openSync(file, 'r');
  try {
    const tail = Buffer.allocUnsafe(64 * 1024);
    for (let end = size; end > 0;) {
      const start = Math.max(0, end - tail.length);
      const read = fs.readSync(fd, tail, 0, end - start, start);
      const newline = tail.subarray(0, read).lastIndexOf(NEWLINE);
      if (newline >= 0) return start + newline + 1;
      end = start;
    }
    return 0;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Cuts off a line a crash or a failed append left unfinished at the end of a segment's
 * files (ClickHouse would refuse the whole INSERT for it), so that every complete line
 * goes in. Returns the segment's bytes after.
 */
export function repairSegment(dir: string, name: string): number {
  let kept = 0;
  for (const file of filesOf(dir, name)) {
    const size = fileBytes(file);
    const complete = completeLineBytes(file, size);
    if (complete < size) fs.truncateSync(file, complete);
    kept += complete;
  }
  return kept;
}

/** Deletes a segment's files (after ClickHouse took its rows). */
export async function removeSegment(dir: string, name: string): Promise<void> {
  // The detail file first: a crash between the two leaves a segment that is listed (and replayed), never a detail file that is not.
  for (const file of filesOf(dir, name).reverse()) await fs.promises.rm(file, { force: true });
}

/** Moves a segment ClickHouse refuses for its content aside, so it cannot block the rows behind it. */
export async function quarantineSegment(dir: string, name: string): Promise<void> {
  const rejected = path.join(dir, 'rejected');
  await fs.promises.mkdir(rejected, { recursive: true });
  for (const file of filesOf(dir, name))
    await fs.promises.rename(file, path.join(rejected, path.basename(file))).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
}
