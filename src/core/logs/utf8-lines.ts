/** What the scratch starts at, and what it goes back to after a large write. */
const SCRATCH_BYTES = 1 << 20;
const SCRATCH_KEPT_BYTES = 4 << 20;

/**
 * Encoded lines turned into bytes for the spool: each line written as UTF-8 straight
 * into a scratch buffer the writer reuses, and handed out as a view of it, never
 * copied. A Buffer a line joined by `Buffer.concat` cost the seed about 1 µs of the
 * event loop a row (docs/call-logs.md, "Session 35"); one long string first made V8
 * flatten a rope of every row's pieces (session 3). The view lives until the next
 * push: the lines are written out before anything else encodes.
 */
export class Utf8Lines {
  private scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  private used = 0;

  push(line: string): void {
    // A UTF-16 unit takes at most 3 bytes of UTF-8, so a line never lands cut.
    const room = line.length * 3;
    if (this.used + room > this.scratch.length) this.grow(room);
    this.used += this.scratch.write(line, this.used);
  }

  /** Bytes pushed since the last take: a mark truncate() goes back to. */
  get length(): number {
    return this.used;
  }

  /** Drops the lines pushed after `mark` (a length this gave since the last take). */
  truncate(mark: number): void {
    this.used = mark;
  }

  /** The lines pushed since the last take, as a view of the scratch that lives until the next push; null when there were none. */
  take(): Buffer | null {
    if (this.used === 0) return null;
    const lines = this.scratch.subarray(0, this.used);
    this.clear();
    return lines;
  }

  /** Drops the lines pushed since the last take. */
  clear(): void {
    this.used = 0;
    if (this.scratch.length > SCRATCH_KEPT_BYTES) this.scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  }

  private grow(room: number): void {
    const larger = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.used + room));
    this.scratch.copy(larger, 0, 0, this.used);
    this.scratch = larger;
  }
}
