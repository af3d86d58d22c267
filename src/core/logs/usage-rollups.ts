import type { CallLogColumnName } from './call-log-schema.js';

/** A rollup's unit of time; a week is 7 days from the Unix epoch (Thursdays, 00:00 UTC), as cutWindow counts it, and no report's bucket. */
export type UsageGrain = 'minute' | 'hour' | 'day' | 'week';
export const GRAIN_MS: Readonly<Record<UsageGrain, number>> = { minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 };

/** A usage rollup table (clickhouse/0005, 0008-0013, 0015, 0016): its grain, its time column and the group keys it keeps. */
export interface UsageRollup {
  table: string;
  grain: UsageGrain;
  timeColumn: string;
  keys: readonly CallLogColumnName[];
  /**
   * Serves only the reports that group or filter by one of its keys: a report without
   * them reads the finer summaries of the workspace's totals instead, which hold a row
   * a unit of time where this holds one a person.
   */
  keyedOnly?: true;
}

const TRAFFIC_KEYS = ['outbound_gateway_guid', 'inbound_server_guid', 'tool_name', 'type', 'status'] as const;
/** The traffic keys but the gateway: a third of the hourly rollup's rows (clickhouse/0013). */
const TOOL_KEYS = TRAFFIC_KEYS.filter((key) => key !== 'outbound_gateway_guid');
const PEOPLE_KEYS = ['user_guid', 'team_guid', 'host_guid', 'gateway_connection_guid'] as const;
/** The summaries of the traffic rollups (clickhouse/0015): the keys of a report by server or status, and by tool. */
const SERVER_KEYS = ['inbound_server_guid', 'type', 'status'] as const;
const TOOL_NAME_KEYS = ['tool_name'] as const;

/**
 * Every usage rollup, coarsest grain first; of two of the same grain, the smaller
 * first. A report reads each part of its window from the coarsest rollup that keeps
 * its keys and filters and is no coarser than its buckets (usage-report.ts).
 */
export const USAGE_ROLLUPS: readonly UsageRollup[] = [
  { table: 'call_log_usage_weekly_people', grain: 'week', timeColumn: 'week', keys: PEOPLE_KEYS, keyedOnly: true },
  { table: 'call_log_usage_daily_totals', grain: 'day', timeColumn: 'day', keys: [] },
  { table: 'call_log_usage_daily_servers', grain: 'day', timeColumn: 'day', keys: SERVER_KEYS },
  { table: 'call_log_usage_daily', grain: 'day', timeColumn: 'day', keys: TRAFFIC_KEYS },
  { table: 'call_log_usage_daily_people', grain: 'day', timeColumn: 'day', keys: PEOPLE_KEYS },
  { table: 'call_log_usage_hourly_totals', grain: 'hour', timeColumn: 'hour', keys: [] },
  { table: 'call_log_usage_hourly_tool_names', grain: 'hour', timeColumn: 'hour', keys: TOOL_NAME_KEYS },
  { table: 'call_log_usage_hourly_tools', grain: 'hour', timeColumn: 'hour', keys: TOOL_KEYS },
  { table: 'call_log_usage_hourly', grain: 'hour', timeColumn: 'hour', keys: TRAFFIC_KEYS },
  { table: 'call_log_usage_hourly_people', grain: 'hour', timeColumn: 'hour', keys: PEOPLE_KEYS },
  { table: 'call_log_usage_minute', grain: 'minute', timeColumn: 'minute', keys: ['outbound_gateway_guid'] },
];

/** A stretch of a report's window and where it is read from: a rollup (whole units of its grain) or the raw rows. */
export interface WindowPart {
  from: UsageRollup | 'raw';
  fromMs: number;
  /** Inclusive, as the window's toMs. */
  toMs: number;
}

/**
 * Cuts the window [fromMs, toMs] into parts: the whole units of the coarsest rollup
 * in the middle, the rest at either end cut the same way by the next finer rollup,
 * and what no rollup covers read raw. `rollups` are the ones that may serve the
 * report, coarsest first, at most one per grain.
 */
export function cutWindow(fromMs: number, toMs: number, rollups: readonly UsageRollup[]): WindowPart[] {
  const [rollup, ...finer] = rollups;
  if (!rollup) return [{ from: 'raw', fromMs, toMs }];
  const size = GRAIN_MS[rollup.grain];
  const first = Math.ceil(fromMs / size) * size;
  const end = Math.floor((toMs + 1) / size) * size;
  if (end - first < size) return cutWindow(fromMs, toMs, finer);
  return [
    ...(fromMs < first ? cutWindow(fromMs, first - 1, finer) : []),
    { from: rollup, fromMs: first, toMs: end - 1 },
    ...(end <= toMs ? cutWindow(end, toMs, finer) : []),
  ];
}

/** The rollups that may serve a report: they keep every key it groups or filters by (a keyedOnly one, at least one), and are no coarser than its buckets; one per grain. */
export function servingRollups(keys: readonly string[], interval: UsageGrain | undefined, among: readonly UsageRollup[] = USAGE_ROLLUPS): UsageRollup[] {
  const serving: UsageRollup[] = [];
  for (const rollup of among) {
    if (interval && GRAIN_MS[rollup.grain] > GRAIN_MS[interval]) continue;
    if (!keys.every((k) => (rollup.keys as readonly string[]).includes(k))) continue;
    if (rollup.keyedOnly && keys.length === 0) continue;
    if (serving.some((r) => r.grain === rollup.grain)) continue;
    serving.push(rollup);
  }
  return serving;
}
