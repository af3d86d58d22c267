/**
 * A request body written straight into bytes, as the encoders produce it: no string
 * per record to build, flatten and convert to UTF-8 afterwards (measured about half
 * the CPU of building the text with `+` and calling Buffer.from on it).
 *
 * `raw` takes text the encoder knows is ASCII (punctuation, member names, numbers,
 * hex ids); `string` writes any value as a JSON string literal, byte for byte what
 * JSON.stringify writes encoded as UTF-8. Most values (guids, names, ids) need no
 * escaping: those are only quoted. Anything with a quote, backslash, control
 * character or surrogate (which JSON.stringify escapes when unpaired) goes through
 * JSON.stringify.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON must escape
const NEEDS_ESCAPING = /["\\\u0000-\u001f\ud800-\udfff]/;
const QUOTE = 0x22;
/** UTF-8 needs at most 3 bytes per UTF-16 code unit (a surrogate pair: 4 bytes for 2 units). */
const MAX_UTF8_PER_UNIT = 3;

/**
 * Node's Buffer writers without the argument parsing of `buf.write(text, offset,
 * encoding)` (measured a third cheaper here, called some 60 times per record). They
 * are what `write` calls, on Buffer.prototype since Node's first releases, but not in
 * @types/node; test/forwarder-encoding.test.ts compares every body byte for byte.
 */
interface DirectWrites {
  latin1Write(text: string, offset: number): number;
  utf8Write(text: string, offset: number): number;
}

export class JsonBodyWriter {
  private buf: Buffer & DirectWrites;
  private pos = 0;

  /** `sizeHint`: the expected body size in bytes; the buffer grows when it is short. */
  constructor(sizeHint: number) {
    this.buf = Buffer.allocUnsafe(Math.max(1024, sizeHint)) as Buffer & DirectWrites;
  }

  /** ASCII text written as is. */
  raw(text: string): void {
    this.room(text.length);
    this.pos += this.buf.latin1Write(text, this.pos);
  }

  /** A JSON string literal of `value`. */
  string(value: string): void {
    if (NEEDS_ESCAPING.test(value)) {
      const literal = JSON.stringify(value);
      this.room(literal.length * MAX_UTF8_PER_UNIT);
      this.pos += this.buf.utf8Write(literal, this.pos);
      return;
    }
    this.room(value.length * MAX_UTF8_PER_UNIT + 2);
    this.buf[this.pos++] = QUOTE;
    this.pos += this.buf.utf8Write(value, this.pos);
    this.buf[this.pos++] = QUOTE;
  }

  /** The body written so far (a view, not a copy). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
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
