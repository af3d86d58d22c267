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

  /** Throws TypeError on a malformed row, and then keeps none of `rows`. */
  encode(rows: readonly R[]): EncodedLines {
    try {
      for (const row of rows) {
        const encoded = this.encodeRow(row);
        this.thinLines.push(encoded.thin);
        if (encoded.detail !== null) this.detailLines.push(encoded.detail);
      }
    } catch (err) {
      this.thinLines.clear();
      this.detailLines.clear();
      throw err;
    }
    return { rows: rows.length, thin: this.thinLines.take() ?? Buffer.alloc(0), detail: this.detailLines.take() };
  }
}
