import type { Checkpoint } from './call-log-source.js';
import type { Envelope } from './record-sql.js';

/** A batch ready to send: the request body and what the forwarder needs to know of its rows. */
export interface EncodedBatch {
  /** Records in the body. */
  count: number;
  /** ingested_at of the first record (epoch ms), for the lag metric; 0 when empty. */
  firstIngestedMs: number;
  /** The checkpoint after the last record (`after` itself when empty). */
  end: Checkpoint;
  /** The request body in pieces sent back to back: the envelope's head, then the records and the tail. */
  body: Buffer[];
}

const TAB = 0x09;
const NEWLINE = 0x0a;

/**
 * Turns a TabSeparatedRaw answer (`ingested_at ms \t guid \t record \n` per line)
 * into the body: the envelope's head, then the records with its separator between
 * them and its tail. A record is JSON text, whose strings escape tabs and newlines,
 * so the first two tabs and the next newline delimit it.
 *
 * The records are moved left within the answer itself (each line loses its two key
 * fields, so a record never lands past where it was read from): no second buffer the
 * size of the batch, no string per row. Only the first line's time and the last
 * line's key are read, the last before its bytes are overwritten.
 */
export function joinRecords(answer: Buffer, envelope: Envelope, after: Checkpoint): EncodedBatch {
  const separator = Buffer.from(envelope.separator);
  let out = 0;
  let count = 0;
  let firstIngestedMs = 0;
  let end = after;
  for (let pos = 0; pos < answer.length;) {
    const firstTab = answer.indexOf(TAB, pos);
    const secondTab = firstTab < 0 ? -1 : answer.indexOf(TAB, firstTab + 1);
    if (secondTab < 0) throw new Error('the batch answer is not ingested_at, guid, record lines');
    let lineEnd = answer.indexOf(NEWLINE, secondTab + 1);
    if (lineEnd < 0) lineEnd = answer.length;
    if (count === 0) firstIngestedMs = Number(answer.toString('latin1', pos, firstTab));
    if (lineEnd + 1 >= answer.length)
      end = { at: new Date(Number(answer.toString('latin1', pos, firstTab))), guid: answer.toString('latin1', firstTab + 1, secondTab) };
    if (count > 0) out += separator.copy(answer, out);
    out += answer.copy(answer, out, secondTab + 1, lineEnd);
    count++;
    pos = lineEnd + 1;
  }
  if (count === 0) return { count, firstIngestedMs, end: after, body: [] };
  // The tail fits: every line gave up at least its two key fields and a tab.
  out += answer.write(envelope.tail, out);
  const body = answer.subarray(0, out);
  return { count, firstIngestedMs, end, body: envelope.head ? [Buffer.from(envelope.head), body] : [body] };
}
