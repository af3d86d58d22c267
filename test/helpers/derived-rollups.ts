import { USAGE_ROLLUPS } from '../../src/core/logs/usage-rollups.js';

/** A rollup fed by another rollup's inserts and backfilled from it, as its DDL file builds it. */
export interface DerivedRollup {
  table: string;
  /** The rollup whose inserts feed it. */
  source: string;
  /** Its time column and keys, as usage-rollups.ts declares them. */
  time: string;
  keys: readonly string[];
  /** How its view and backfill make the time column from the source's, when it is not the source's own. */
  timeFrom?: string;
}

/** Weeks of 7 days from the epoch, made of the daily people rollup's days, as clickhouse/0016 and usage-rollups.ts count them. */
const WEEK_OF_DAY = "toDateTime(intDiv(toUInt32(day), 604800) * 604800, 'UTC')";

const derived = (table: string, source: string, timeFrom?: string): DerivedRollup => {
  const rollup = USAGE_ROLLUPS.find((r) => r.table === table)!;
  return { table, source, time: rollup.timeColumn, keys: rollup.keys, ...(timeFrom ? { timeFrom } : {}) };
};

/** The derived rollups of each DDL file that makes some. */
export const DERIVED_ROLLUPS = {
  '0013_call_log_usage_hourly_tools.sql': [derived('call_log_usage_hourly_tools', 'call_log_usage_hourly')],
  '0015_call_log_usage_summaries.sql': [
    derived('call_log_usage_daily_totals', 'call_log_usage_daily'),
    derived('call_log_usage_daily_servers', 'call_log_usage_daily'),
    derived('call_log_usage_hourly_totals', 'call_log_usage_hourly_tools'),
    derived('call_log_usage_hourly_tool_names', 'call_log_usage_hourly_tools'),
  ],
  '0016_call_log_usage_weekly_people.sql': [derived('call_log_usage_weekly_people', 'call_log_usage_daily_people', WEEK_OF_DAY)],
} satisfies Record<string, DerivedRollup[]>;
