import { SERVICE_NAME, callAttributes, logBody } from './attributes.js';
import { epochMs, type CallLogRow } from './call-log-row.js';
import { jsonString } from './json-text.js';

/**
 * Call-log rows to a Splunk HTTP Event Collector batch: one JSON object per row,
 * concatenated (not an array). `event` is the log body, `fields` the attributes as
 * flat string values (HEC refuses nested fields), `time` epoch seconds with
 * milliseconds written as a plain decimal (never scientific notation).
 * Written directly as text (the same bytes as JSON.stringify of the event object,
 * which test/forwarder-encoding.test.ts checks), to keep up with the forwarder's rate.
 */
export function hecTime(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return `${seconds}.${String(ms - seconds * 1000).padStart(3, '0')}`;
}

const json = jsonString;
// Constant members, serialised once.
const SOURCE_MEMBERS = `"host":${json(SERVICE_NAME)},"source":${json(SERVICE_NAME)},"sourcetype":"mcp:call"`;

export function toHecEvent(row: CallLogRow): string {
  const attrs = callAttributes(row);
  let fields = '';
  for (const key in attrs) fields += `${fields === '' ? '' : ','}${json(key)}:${json(String(attrs[key]))}`;
  // `time` is written as text so its decimal form is exactly ours.
  return `{"time":${hecTime(epochMs(row.created_at))},${SOURCE_MEMBERS},"event":${json(logBody(row))},"fields":{${fields}}}`;
}

export const encodeHecEvents = (rows: readonly CallLogRow[]): string => rows.map(toHecEvent).join('\n');
