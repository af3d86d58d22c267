import { z } from 'zod';
import type { ClickhouseStore } from '../../stores/clickhouse.js';
import { COLUMN, FILTER_COLUMNS, GROUP_COLUMNS, isLowercaseId } from './call-log-schema.js';
import { queryScoped, type QuerySettings } from './clickhouse-query.js';

/** The keys a usage report groups by (contract 8.3): the groupable columns of call-log-schema.ts, which the hourly rollup keeps. */
export const USAGE_GROUP_KEYS = GROUP_COLUMNS;
export type UsageGroupKey = (typeof USAGE_GROUP_KEYS)[number];

/** The query_logs filter keys plus the group keys they lack (tool_name and status). */
export const USAGE_FILTER_KEYS: readonly (UsageGroupKey | (typeof FILTER_COLUMNS)[number])[] = [
  ...FILTER_COLUMNS,
  ...GROUP_COLUMNS.filter((c) => !(FILTER_COLUMNS as readonly string[]).includes(c)),
];
export type UsageFilterKey = (typeof USAGE_FILTER_KEYS)[number];

export const USAGE_INTERVALS = ['minute', 'hour', 'day'] as const;
export type UsageInterval = (typeof USAGE_INTERVALS)[number];

export interface UsageQuery {
  fromMs: number;
  toMs: number;
  filters: Partial<Record<UsageFilterKey, string>>;
  groupBy: readonly UsageGroupKey[];
  interval?: UsageInterval | undefined;
  skip: number;
  take: number;
}

export interface UsageMeasures {
  calls: number;
  errors: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  requestBytes: number;
  responseBytes: number;
}

export type UsageItem = UsageMeasures & { bucket?: string } & Partial<Record<UsageGroupKey, string | null>>;

export interface UsageReport {
  items: UsageItem[];
  totals: UsageMeasures;
  skip: number;
  take: number;
  nextSkip: number | null;
}

const INTERVAL_MS: Record<UsageInterval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** A report's result rows, on top of the bounds of every read (clickhouse-query.ts). */
const REPORT_SETTINGS: QuerySettings = { max_result_rows: 2_000_000 };
/** What a report over its bounds tells the caller to narrow (a 400). */
const NARROW_REPORT = {
  path: 'fromMs',
  message: 'the report reads more than it may in time: narrow the window (fromMs, toMs), add filters or group by fewer keys',
};

/** The expression a key is read from; status is an Enum8 and is reported as its name. */
const keyExpr = (key: UsageFilterKey): string => (COLUMN[key].kind === 'status' ? `toString(${key})` : key);

/**
 * The measures of a group, from raw rows (`call_logs`) or from the hourly rollup's
 * states (`call_log_usage_hourly`): the same names either way, so one outer query
 * merges both. Durations are kept as a map of value to count, so percentiles are
 * exact (linear interpolation between closest ranks, numpy's default) however the
 * states are merged; counts and bytes are exact sums.
 */
const RAW_STATES = `count() AS calls, countIf(status = 'error') AS errors, quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(duration_ms, toUInt8(1)) AS durations,
  sum(toUInt64(request_bytes)) AS request_bytes_sum, sum(toUInt64(response_bytes)) AS response_bytes_sum`;
const ROLLUP_STATES = `sum(calls) AS calls, sum(errors) AS errors, quantilesExactWeightedInterpolatedMergeState(0.5, 0.95, 0.99)(durations) AS durations,
  sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum`;
const MERGED_MEASURES = `sum(calls) AS calls_total, sum(errors) AS errors_total, quantilesExactWeightedInterpolatedMerge(0.5, 0.95, 0.99)(durations) AS q,
  sum(request_bytes_sum) AS request_bytes_total, sum(response_bytes_sum) AS response_bytes_total`;

/** Filters the hourly rollup can answer: it keeps every group key, not trace or span ids or containers. */
const ROLLUP_FILTERS: ReadonlySet<string> = new Set(USAGE_GROUP_KEYS);

/**
 * Whether the hourly rollup can serve this report's middle: no filter on a column it
 * lacks and no bucket finer than an hour. The rows of the window's partial hours at
 * either end are then read raw and merged in the same query.
 */
function usesRollup(q: UsageQuery): boolean {
  if (q.interval === 'minute') return false;
  return Object.keys(q.filters).every((k) => ROLLUP_FILTERS.has(k));
}

const HOUR = 3_600_000;

interface Plan {
  /** The SQL of the union of raw and rollup states, grouped by the bucket and the keys. */
  source: string;
  params: Record<string, unknown>;
}

/**
 * Builds the inner query: one or two SELECTs (raw rows, and the rollup for whole
 * hours), each grouped by the report's bucket and keys and yielding mergeable states.
 */
function plan(q: UsageQuery): Plan {
  const keys = q.groupBy.map((k, i) => `${keyExpr(k)} AS g${i}`);
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  for (const key of USAGE_FILTER_KEYS) {
    const value = q.filters[key];
    if (value === undefined) continue;
    // Column names come from the fixed list above; values are always bound.
    where.push(`${keyExpr(key)} = {f_${key}:String}`);
    // Ids are stored lowercase; tool names, types and statuses are compared as given.
    params[`f_${key}`] = isLowercaseId(key) ? value.toLowerCase() : value;
  }
  const bucketOf = (column: string) => (q.interval ? [`${bucketExpr(q.interval, column)} AS b`] : []);
  const groupCols = [...(q.interval ? ['b'] : []), ...q.groupBy.map((_, i) => `g${i}`)];
  const groupBy = groupCols.length ? `GROUP BY ${groupCols.join(', ')}` : '';
  const select = (states: string, column: string) => [...bucketOf(column), ...keys, states].join(', ');
  const rawSelect = (bounds: { fromMs: number; toMs: number }, name: string) => {
    params[`${name}From`] = bounds.fromMs;
    params[`${name}To`] = bounds.toMs;
    const time = `created_at >= fromUnixTimestamp64Milli({${name}From:Int64}, 'UTC') AND created_at <= fromUnixTimestamp64Milli({${name}To:Int64}, 'UTC')`;
    return `SELECT ${select(RAW_STATES, 'created_at')} FROM call_logs WHERE ${['organization_guid = {org:String}', time, ...where].join(' AND ')} ${groupBy}`;
  };
  // The rollup covers whole hours [firstHour, endHour); the rest of the window is read raw.
  const firstHour = Math.ceil(q.fromMs / HOUR) * HOUR;
  const endHour = Math.floor((q.toMs + 1) / HOUR) * HOUR;
  if (!usesRollup(q) || endHour - firstHour < HOUR) return { source: rawSelect(q, 'w'), params };
  const parts: string[] = [];
  if (q.fromMs < firstHour) parts.push(rawSelect({ fromMs: q.fromMs, toMs: firstHour - 1 }, 'head'));
  if (endHour <= q.toMs) parts.push(rawSelect({ fromMs: endHour, toMs: q.toMs }, 'tail'));
  params.hourFrom = firstHour / 1000;
  params.hourTo = endHour / 1000;
  parts.push(
    `SELECT ${select(ROLLUP_STATES, 'hour')} FROM call_log_usage_hourly
     WHERE organization_guid = {org:String} AND hour >= toDateTime({hourFrom:UInt32}, 'UTC') AND hour < toDateTime({hourTo:UInt32}, 'UTC')
     ${where.length ? `AND ${where.join(' AND ')}` : ''} ${groupBy}`,
  );
  return { source: parts.join(' UNION ALL '), params };
}

function bucketExpr(interval: UsageInterval, column: string): string {
  const start = { minute: 'toStartOfMinute', hour: 'toStartOfHour', day: 'toStartOfDay' }[interval];
  return `toUnixTimestamp(${start}(toDateTime(${column}, 'UTC')))`;
}

const Count = z.coerce.number();
const Quantiles = z.array(z.coerce.number()).transform((q) => q.map((v) => (Number.isFinite(v) ? Math.round(v * 100) / 100 : 0)));
const Measures = z.object({
  calls_total: Count,
  errors_total: Count,
  q: Quantiles,
  request_bytes_total: Count,
  response_bytes_total: Count,
});

const measures = (r: z.output<typeof Measures>): UsageMeasures => ({
  calls: r.calls_total,
  errors: r.errors_total,
  p50Ms: r.calls_total ? (r.q[0] ?? 0) : 0,
  p95Ms: r.calls_total ? (r.q[1] ?? 0) : 0,
  p99Ms: r.calls_total ? (r.q[2] ?? 0) : 0,
  requestBytes: r.request_bytes_total,
  responseBytes: r.response_bytes_total,
});

/**
 * Runs get_usage_report for one workspace: the page of groups and the totals over
 * everything the window and filters select, read in two queries side by side.
 */
export async function usageReport(
  store: Pick<ClickhouseStore, 'client'>,
  organizationGuid: string,
  q: UsageQuery,
  /** Tighter bounds than the defaults (tests). */
  bounds: QuerySettings = {},
): Promise<UsageReport> {
  const { source, params } = plan(q);
  const groupCols = [...(q.interval ? ['b'] : []), ...q.groupBy.map((_, i) => `g${i}`)];
  const order = [...(q.interval ? ['b ASC'] : []), 'calls_total DESC', ...q.groupBy.map((_, i) => `g${i} ASC`)];
  const Row = Measures.extend({
    ...(q.interval ? { b: Count } : {}),
    ...Object.fromEntries(q.groupBy.map((_, i) => [`g${i}`, z.string()])),
  });
  const read = <S extends z.ZodType>(tag: string, sql: string, row: S) =>
    queryScoped(store, organizationGuid, {
      tag,
      sql,
      params: { ...params, limit: q.take + 1, skip: q.skip },
      row,
      settings: { ...REPORT_SETTINGS, ...bounds },
      overLimit: NARROW_REPORT,
    });
  const [rows, totals] = await Promise.all([
    read(
      'usage_report.items',
      `SELECT ${[...groupCols, MERGED_MEASURES].join(', ')} FROM (${source}) ${groupCols.length ? `GROUP BY ${groupCols.join(', ')}` : ''}
       ORDER BY ${order.join(', ')} LIMIT {limit:UInt32} OFFSET {skip:UInt64}`,
      Row,
    ),
    read('usage_report.totals', `SELECT ${MERGED_MEASURES} FROM (${source})`, Measures),
  ]);
  const page = rows.slice(0, q.take);
  const items = page.map((r) => {
    const item: UsageItem = {} as UsageItem;
    if (q.interval) item.bucket = new Date(Number(r.b) * 1000).toISOString();
    q.groupBy.forEach((key, i) => {
      const value = (r as Record<string, unknown>)[`g${i}`] as string;
      item[key] = value === '' ? null : value;
    });
    return Object.assign(item, measures(r));
  });
  // A report over an empty window still has totals: zero of everything.
  const total = totals[0] ? measures(totals[0]) : measures({ calls_total: 0, errors_total: 0, q: [], request_bytes_total: 0, response_bytes_total: 0 });
  return { items, totals: total, skip: q.skip, take: q.take, nextSkip: rows.length > q.take ? q.skip + q.take : null };
}

/** The default window: the last 24 hours, ending at toMs when only toMs is given. */
export function usageWindow(fromMs: number | undefined, toMs: number | undefined, now = Date.now()): { fromMs: number; toMs: number } {
  const end = toMs ?? (fromMs !== undefined ? Math.max(now, fromMs) : now);
  return { fromMs: fromMs ?? Math.max(0, end - INTERVAL_MS.day), toMs: end };
}
