import { THIN_INSERT_COLUMNS } from '../core/logs/call-log-row.js';

/**
 * A call-log row as the forwarder reads it from ClickHouse: every column selected
 * through toString(), so the physical types of the table do not matter here.
 * '' and the zero UUID mean "absent". The columns are the writer's own list (plus
 * ingested_at, which ClickHouse stamps), so a column added to the call log reaches
 * the forwarder without a second list.
 */
export const CALL_LOG_COLUMNS = ['ingested_at', ...THIN_INSERT_COLUMNS] as const;

export type CallLogColumn = (typeof CALL_LOG_COLUMNS)[number];
export type CallLogRow = Record<CallLogColumn, string>;

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

/** The value, or undefined when the column is empty or the zero UUID. */
export const present = (value: string | undefined): string | undefined => (value === undefined || value === '' || value === ZERO_UUID ? undefined : value);

/** Epoch milliseconds of a ClickHouse DateTime64(3,'UTC') rendered by toString() ('2026-11-21 10:00:00.123'). */
export function epochMs(clickhouseTime: string): number {
  // Fast path for the one form the forwarder reads (once or twice per forwarded row).
  if (clickhouseTime.length === 23 && clickhouseTime.charCodeAt(10) === 32) {
    const ms = Date.parse(`${clickhouseTime.slice(0, 10)}T${clickhouseTime.slice(11)}Z`);
    if (!Number.isNaN(ms)) return ms;
  }
  const iso = clickhouseTime.includes('T') ? clickhouseTime : clickhouseTime.replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  if (Number.isNaN(ms)) throw new Error(`not a ClickHouse time: ${clickhouseTime.slice(0, 40)}`);
  return ms;
}

/** Whole number of a numeric column, 0 when absent or unparsable. */
export const integer = (value: string | undefined): number => {
  const n = Number(value);
  return Number.isFinite(n) ? Math.trunc(n) : 0;
};
