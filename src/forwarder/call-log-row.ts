import { COLUMN, THIN_COLUMNS, THIN_INSERT_COLUMNS } from '../core/logs/call-log-schema.js';

/**
 * A call-log row as CallLogSource.nextBatch reads it: every column of call_logs
 * (call-log-schema.ts) selected through toString(), so the physical types of the
 * table do not matter here; '' and the zero UUID mean "absent". The server-stamped
 * columns (ingested_at) come first, then the writer's own list. The forwarder itself
 * sends records ClickHouse writes (record-sql.ts); these rows are what the tests and
 * benches hold them to.
 */
export const CALL_LOG_COLUMNS = [...THIN_COLUMNS.filter((c) => COLUMN[c].kind === 'serverTime'), ...THIN_INSERT_COLUMNS] as const;

export type CallLogColumn = (typeof THIN_COLUMNS)[number];
export type CallLogRow = Record<CallLogColumn, string>;

/** Epoch milliseconds of a ClickHouse DateTime64(3,'UTC') rendered by toString() ('2026-11-21 10:00:00.123'). */
export function epochMs(clickhouseTime: string): number {
  // Fast path for the form toString() writes.
  if (clickhouseTime.length === 23 && clickhouseTime.charCodeAt(10) === 32) {
    const ms = Date.parse(`${clickhouseTime.slice(0, 10)}T${clickhouseTime.slice(11)}Z`);
    if (!Number.isNaN(ms)) return ms;
  }
  const iso = clickhouseTime.includes('T') ? clickhouseTime : clickhouseTime.replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  if (Number.isNaN(ms)) throw new Error(`not a ClickHouse time: ${clickhouseTime.slice(0, 40)}`);
  return ms;
}
