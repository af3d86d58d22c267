import { SERVICE_NAME, callAttributes, logBody } from './attributes.js';
import { epochMs, type CallLogRow } from './call-log-row.js';
import { JsonBodyWriter, jsonString } from './json-text.js';

/**
 * Call-log rows to a Splunk HTTP Event Collector batch: one JSON object per row,
 * concatenated (not an array). `event` is the log body, `fields` the attributes as
 * flat string values (HEC refuses nested fields), `time` epoch seconds with
 * milliseconds written as a plain decimal (never scientific notation).
 * Written directly as bytes (the same as JSON.stringify of the event object, which
 * test/forwarder-encoding.test.ts checks), to keep up with the forwarder's rate.
 */
export function hecTime(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return `${seconds}.${String(ms - seconds * 1000).padStart(3, '0')}`;
}

const json = jsonString;
// Constant members, serialised once.
const SOURCE_MEMBERS = `"host":${json(SERVICE_NAME)},"source":${json(SERVICE_NAME)},"sourcetype":"mcp:call"`;
/** A typical event's size in bytes (measured ~880): the body buffer is sized once for most batches. */
const BYTES_PER_EVENT_HINT = 960;

function writeHecEvent(w: JsonBodyWriter, row: CallLogRow): void {
  const attrs = callAttributes(row);
  // `time` is written as text so its decimal form is exactly ours.
  w.raw(`{"time":${hecTime(epochMs(row.created_at))},${SOURCE_MEMBERS},"event":`);
  w.string(logBody(row));
  let separator = ',"fields":{';
  for (const key in attrs) {
    w.raw(separator + json(key) + ':');
    w.string(String(attrs[key]));
    separator = ',';
  }
  w.raw(separator === ',' ? '}}' : ',"fields":{}}');
}

/** A HEC batch: the events newline-separated, as UTF-8 bytes. */
export function encodeHecEvents(rows: readonly CallLogRow[]): Buffer {
  const w = new JsonBodyWriter(rows.length * BYTES_PER_EVENT_HINT);
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) w.raw('\n');
    writeHecEvent(w, rows[i]!);
  }
  return w.bytes();
}
