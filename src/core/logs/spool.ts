import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The write-ahead spool of the call-log writer: accepted rows are appended to a
 * segment file under DATA_DIR before the producer is told they are accepted, and
 * a segment file is deleted only after ClickHouse took all of its rows. Whatever
 * is on disk at start (a ClickHouse outage, a crash, a restart) is replayed.
 *
 * A segment is text: one line per row, `T` + the thin row's JSON array body, and
 * `D` + the detail row's, when the call carried detail.
 */
export const SEGMENT_SUFFIX = '.spool';

export interface SegmentContent {
  thin: string[];
  detail: string[];
}

let sequence = 0;

/** A segment name that sorts by creation order and is unique across processes; it is also the insert deduplication token. */
export function newSegmentName(): string {
  sequence = (sequence + 1) % 1_000_000;
  return `${Date.now().toString().padStart(15, '0')}-${String(sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}${SEGMENT_SUFFIX}`;
}

/** Segment files left in `dir`, oldest first. */
export function listSegments(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(SEGMENT_SUFFIX))
    .sort();
}

/** Parses a segment's text; a last line without its newline (a crash mid-append) is ignored. */
export function parseSegment(text: string): SegmentContent {
  const content: SegmentContent = { thin: [], detail: [] };
  const end = text.lastIndexOf('\n');
  if (end < 0) return content;
  for (const line of text.slice(0, end).split('\n')) {
    if (line.startsWith('T')) content.thin.push(line.slice(1));
    else if (line.startsWith('D')) content.detail.push(line.slice(1));
  }
  return content;
}

export async function readSegment(dir: string, name: string): Promise<SegmentContent> {
  return parseSegment(await fs.promises.readFile(path.join(dir, name), 'utf8'));
}

/** Moves a segment ClickHouse refuses for its content aside, so it cannot block the rows behind it. */
export async function quarantineSegment(dir: string, name: string): Promise<void> {
  const rejected = path.join(dir, 'rejected');
  await fs.promises.mkdir(rejected, { recursive: true });
  await fs.promises.rename(path.join(dir, name), path.join(rejected, name));
}
