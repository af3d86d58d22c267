import { SERVICE_NAME, callAttributes, logBody } from './attributes.js';
import { epochMs, type CallLogRow } from './call-log-row.js';

/**
 * Call-log rows to a Splunk HTTP Event Collector batch: one JSON object per row,
 * concatenated (not an array). `event` is the log body, `fields` the attributes as
 * flat string values (HEC refuses nested fields), `time` epoch seconds with
 * milliseconds written as a plain decimal (never scientific notation).
 */
export function hecTime(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return `${seconds}.${String(ms - seconds * 1000).padStart(3, '0')}`;
}

export function toHecEvent(row: CallLogRow): string {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(callAttributes(row))) fields[key] = String(value);
  const rest = JSON.stringify({ host: SERVICE_NAME, source: SERVICE_NAME, sourcetype: 'mcp:call', event: logBody(row), fields });
  // `time` is spliced in as text so its decimal form is exactly ours.
  return `{"time":${hecTime(epochMs(row.created_at))},${rest.slice(1)}`;
}

export const encodeHecEvents = (rows: CallLogRow[]): string => rows.map(toHecEvent).join('\n');
