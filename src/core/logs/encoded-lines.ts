import { Utf8Lines } from './utf8-lines.js';

/** One row encoded for its INSERTs, in its tables' format: the main table's line, and the detail table's or null. */
export interface EncodedRow {
  thin: string;
  detail: string | null;
}

/** Rows encoded as their tables' lines, as the spool holds them: the main table's bytes, the detail table's (null when no row has detail). */
export interface EncodedLines {
  rows: number;
  thin: Buffer;
  detail: Buffer | null;
}

/**
 * Encodes batches of rows with one row encoder into their tables' lines. The lines are
 * views of scratch buffers the encoder reuses, valid until its next encode: whoever
 * encodes writes them out (or copies them) before anything else encodes.
 */
export class LineEncoder<R> {
  private readonly thinLines = new Utf8Lines();
  private readonly detailLines = new Utf8Lines();

  constructor(private readonly encodeRow: (row: R) => EncodedRow) {}

  private rows = 0;

  /** Adds the lines of `rows` to those the next take() gives; throws TypeError on a malformed row, and then keeps none of `rows`. */
  add(rows: readonly R[]): void {
    const thinMark = this.thinLines.length;
    const detailMark = this.detailLines.length;
    try {
      for (const row of rows) {
        const encoded = this.encodeRow(row);
        this.thinLines.push(encoded.thin);
        if (encoded.detail !== null) this.detailLines.push(encoded.detail);
      }
    } catch (err) {
      this.thinLines.truncate(thinMark);
      this.detailLines.truncate(detailMark);
      throw err;
    }
    this.rows += rows.length;
  }

  /** The lines added since the last take. */
  take(): EncodedLines {
    const rows = this.rows;
    this.rows = 0;
    return { rows, thin: this.thinLines.take() ?? Buffer.alloc(0), detail: this.detailLines.take() };
  }

  /** Throws TypeError on a malformed row, and then keeps none of `rows`. */
  encode(rows: readonly R[]): EncodedLines {
    this.add(rows);
    return this.take();
  }
}
