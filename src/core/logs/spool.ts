import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The write-ahead spool of the call-log writer: accepted rows are appended to a
 * segment's files under DATA_DIR before the producer is told they are accepted,
 * and a segment's files are deleted only after ClickHouse took all of its rows.
 * Whatever is on disk at start (a ClickHouse outage, a crash, a restart) is replayed.
 *
 * A segment is two files holding exactly the INSERT bodies (JSONCompactEachRow
 * lines), so a segment is inserted without re-encoding a row:
 * - `<name>` (ending in `.spool`): the thin rows, for call_logs;
 * - `<name>.detail`: the detail rows, for call_log_details, when calls carried detail.
 * The writer appends a call's detail row before its thin row, so a crash between
 * the two leaves at most a detail row no page refers to, never a row missing its detail.
 *
 * Segments written before this layout (one file, a `T` line per thin row and a
 * `D` line per detail row) are still read.
 */
export const SEGMENT_SUFFIX = '.spool';
const DETAIL_SUFFIX = '.detail';
const NEWLINE = 0x0a;

/** A segment's rows as INSERT bodies: chunks of complete JSONCompactEachRow lines. */
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

export const thinPath = (dir: string, name: string): string => path.join(dir, name);
export const detailPath = (dir: string, name: string): string => path.join(dir, name + DETAIL_SUFFIX);

/** Segments left in `dir`, oldest first (also one whose thin file a crash kept from being written). */
export function listSegments(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const names = new Set<string>();
  for (const file of fs.readdirSync(dir)) {
    if (file.endsWith(SEGMENT_SUFFIX)) names.add(file);
    else if (file.endsWith(SEGMENT_SUFFIX + DETAIL_SUFFIX)) names.add(file.slice(0, -DETAIL_SUFFIX.length));
  }
  return [...names].sort();
}

/** The bytes of a file up to its last newline: a line a crash cut short is ignored. Missing file: empty. */
async function completeLines(file: string): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await fs.promises.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  }
  return bytes.subarray(0, bytes.lastIndexOf(NEWLINE) + 1);
}

/** Parses a segment in the earlier one-file layout (`T` + thin row, `D` + detail row, no brackets). */
function parseLegacySegment(text: string): SegmentContent {
  const thin: string[] = [];
  const detail: string[] = [];
  const end = text.lastIndexOf('\n');
  if (end >= 0) {
    for (const line of text.slice(0, end).split('\n')) {
      if (line.startsWith('T')) thin.push(`[${line.slice(1)}]\n`);
      else if (line.startsWith('D')) detail.push(`[${line.slice(1)}]\n`);
    }
  }
  return { thin: thin.length ? [Buffer.from(thin.join(''))] : [], detail: detail.length ? [Buffer.from(detail.join(''))] : [] };
}

export async function readSegment(dir: string, name: string): Promise<SegmentContent> {
  const thin = await completeLines(thinPath(dir, name));
  const first = thin[0];
  if (first === 0x54 /* T */ || first === 0x44 /* D */) return parseLegacySegment(thin.toString('utf8'));
  const detail = await completeLines(detailPath(dir, name));
  return { thin: thin.length ? [thin] : [], detail: detail.length ? [detail] : [] };
}

/** Deletes a segment's files (after ClickHouse took its rows). */
export async function removeSegment(dir: string, name: string): Promise<void> {
  await Promise.all([fs.promises.rm(thinPath(dir, name), { force: true }), fs.promises.rm(detailPath(dir, name), { force: true })]);
}

/** Moves a segment ClickHouse refuses for its content aside, so it cannot block the rows behind it. */
export async function quarantineSegment(dir: string, name: string): Promise<void> {
  const rejected = path.join(dir, 'rejected');
  await fs.promises.mkdir(rejected, { recursive: true });
  for (const file of [name, name + DETAIL_SUFFIX]) {
    await fs.promises.rename(path.join(dir, file), path.join(rejected, file)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
