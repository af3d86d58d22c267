/**
 * A request body written into bytes as the encoders produce it, a few records at a
 * time: pieces are joined into a string of up to FLUSH_AT units, which one native
 * call encodes into the body's buffer. Building the whole body as one string and
 * converting it afterwards cost about twice the CPU (V8 flattens a rope of every
 * piece); one native write per piece (some 60 a record) cost about a quarter more
 * than this (bench/forward-stages.ts: 44 vs 36 ms per 5,000 OTLP log records).
 *
 * `raw` takes text that is already JSON (punctuation, member names, numbers, hex
 * ids); `string` writes any value as a JSON string literal, byte for byte what
 * JSON.stringify writes encoded as UTF-8. Most values (guids, names, ids) need no
 * escaping: those are only quoted. Anything with a quote, backslash, control
 * character or surrogate (which JSON.stringify escapes when unpaired) goes through
 * JSON.stringify.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON must escape
const NEEDS_ESCAPING = /["\\\u0000-\u001f\ud800-\udfff]/;
/** UTF-8 needs at most 3 bytes per UTF-16 code unit (a surrogate pair: 4 bytes for 2 units). */
const MAX_UTF8_PER_UNIT = 3;
/** Pending text is encoded once it is this long (UTF-16 units): about ten records (4096 measured the same). */
const FLUSH_AT = 16384;

/**
 * Node's UTF-8 Buffer writer without the argument parsing of `buf.write(text, offset,
 * encoding)`. It is what `write` calls, on Buffer.prototype since Node's first
 * releases, but not in @types/node; test/forwarder-encoding.test.ts compares every
 * body byte for byte.
 */
interface DirectWrites {
  utf8Write(text: string, offset: number): number;
}

export class JsonBodyWriter {
  private buf: Buffer & DirectWrites;
  private pos = 0;
  /** Text not yet in `buf`: pieces are joined in a string and encoded in one call per few KB. */
  private pending = '';

  /** `sizeHint`: the expected body size in bytes; the buffer grows when it is short. */
  constructor(sizeHint: number) {
    this.buf = Buffer.allocUnsafe(Math.max(1024, sizeHint)) as Buffer & DirectWrites;
  }

  /** Text that is already JSON, written as is. */
  raw(text: string): void {
    this.pending += text;
    if (this.pending.length >= FLUSH_AT) this.flush();
  }

  /** A JSON string literal of `value`. */
  string(value: string): void {
    this.pending += NEEDS_ESCAPING.test(value) ? JSON.stringify(value) : '"' + value + '"';
    if (this.pending.length >= FLUSH_AT) this.flush();
  }

  /** The body written so far (a view, not a copy). */
  bytes(): Buffer {
    this.flush();
    return this.buf.subarray(0, this.pos);
  }

  private flush(): void {
    const text = this.pending;
    if (text.length === 0) return;
    this.pending = '';
    this.room(text.length * MAX_UTF8_PER_UNIT);
    this.pos += this.buf.utf8Write(text, this.pos);
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes)) as Buffer & DirectWrites;
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }
}

/** A JSON string literal as text (for constant pieces built once). */
export const jsonString = (s: string): string => (NEEDS_ESCAPING.test(s) ? JSON.stringify(s) : `"${s}"`);
