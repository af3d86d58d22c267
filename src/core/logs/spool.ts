import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The write-ahead spool of the call-log writer: accepted rows are appended to a
 * segment file under DATA_DIR before the producer is told they are accepted, and a
 * segment file is deleted only after ClickHouse took all of its rows. Whatever is on
 * disk at start (a ClickHouse outage, a crash, a restart) is replayed.
 *
 * A segment file is a sequence of frames, one per `write()`: a header line
 * `#<thin bytes> <detail bytes>\n`, then the thin rows and the detail rows exactly as
 * the two INSERT bodies take them (lines in the tables' format). Memory holds the same
 * Buffers, so a segment is inserted by concatenation, without re-encoding a row, and
 * a frame is written with one `writev`. A frame a crash cut short is ignored whole
 * (its `write()` never resolved).
 */
export const SEGMENT_SUFFIX = '.spool';
const NEWLINE = 0x0a;
const FRAME = 0x23; // '#'

/** A segment's rows as INSERT bodies: chunks of complete lines. */
export interface SegmentContent {
  thin: Buffer[];
  detail: Buffer[];
}

let sequence = 0;

/** A segment name that sorts by creation order and is unique across processes; it is also the insert deduplication token. */
export function newSegmentName(): string {
  sequence = (sequence + 1) % 1_000_000;
  return `${Date.now().toString().padStart(15, '0')}-${String(sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}${SEGMENT_SUFFIX}`;
}

export const segmentPath = (dir: string, name: string): string => path.join(dir, name);

/**
 * Appends one frame (a write()'s thin rows and detail rows) to an open segment file,
 * synchronously: a small write lands in the page cache in about 1 µs of the event
 * loop, where an asynchronous one cost 20-100 µs of it (a thread-pool round trip per
 * row, measured in the gateway's profile). A disk that stalls stalls the event loop with it.
 * Returns the bytes written.
 */
export function appendFrame(fd: number, thin: Buffer, detail: Buffer | null): number {
  const header = Buffer.from(`#${thin.length} ${detail?.length ?? 0}\n`, 'latin1');
  const parts = detail ? [header, thin, detail] : [header, thin];
  const total = header.length + thin.length + (detail?.length ?? 0);
  const written = fs.writevSync(fd, parts);
  // A write to a regular file can in principle be short: finish it from where it stopped.
  if (written < total) {
    const rest = Buffer.concat(parts).subarray(written);
    for (let done = 0; done < rest.length;) done += fs.writeSync(fd, rest, done);
  }
  return total;
}

/** Segments left in `dir`, oldest first. */
export function listSegments(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith(SEGMENT_SUFFIX))
    .sort();
}

/** Bytes on disk of a segment (0 when it is gone). */
export function segmentBytes(dir: string, name: string): number {
  try {
    return fs.statSync(segmentPath(dir, name)).size;
  } catch {
    return 0;
  }
}

/** A file's bytes, empty when it does not exist. */
async function readOrEmpty(file: string): Promise<Buffer> {
  try {
    return await fs.promises.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  }
}

/** The frames of a segment file, up to the first one a crash cut short. */
function parseFrames(bytes: Buffer): SegmentContent {
  const content: SegmentContent = { thin: [], detail: [] };
  for (let pos = 0; pos < bytes.length && bytes[pos] === FRAME;) {
    const eol = bytes.indexOf(NEWLINE, pos);
    if (eol < 0) break;
    const [thinBytes, detailBytes] = bytes
      .toString('latin1', pos + 1, eol)
      .split(' ')
      .map(Number);
    if (!Number.isSafeInteger(thinBytes) || !Number.isSafeInteger(detailBytes)) break;
    const end = eol + 1 + thinBytes! + detailBytes!;
    if (end > bytes.length) break;
    if (thinBytes) content.thin.push(bytes.subarray(eol + 1, eol + 1 + thinBytes));
    if (detailBytes) content.detail.push(bytes.subarray(eol + 1 + thinBytes!, end));
    pos = end;
  }
  return content;
}

/** A segment's rows (none when its file is gone or a crash left it without a complete frame). */
export async function readSegment(dir: string, name: string): Promise<SegmentContent> {
  return parseFrames(await readOrEmpty(segmentPath(dir, name)));
}

/** Deletes a segment's file (after ClickHouse took its rows). */
export async function removeSegment(dir: string, name: string): Promise<void> {
  await fs.promises.rm(segmentPath(dir, name), { force: true });
}

/** Moves a segment ClickHouse refuses for its content aside, so it cannot block the rows behind it. */
export async function quarantineSegment(dir: string, name: string): Promise<void> {
  const rejected = path.join(dir, 'rejected');
  await fs.promises.mkdir(rejected, { recursive: true });
  await fs.promises.rename(segmentPath(dir, name), path.join(rejected, name)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}
