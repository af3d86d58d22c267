import { z } from 'zod';
import type { ClickhouseStore } from '../../stores/clickhouse.js';
import {
  BUCKET_COUNTS_OF_ROWS,
  quantilesOfBuckets,
  ROLLUP_STATE_NAMES,
  USAGE_STATE_COLUMNS,
  USAGE_STATES_OF_ROWS,
  usageMeasuresOfBuckets,
  usageMeasuresOfStates,
  type UsageStateNames,
} from '../../stores/usage-rollup-sql.js';
import { COLUMN, FILTER_COLUMNS, GROUP_COLUMNS, isLowercaseId } from './call-log-schema.js';
import { cutWindow, GRAIN_MS, servingRollups, USAGE_ROLLUPS, type UsageRollup, type WindowPart } from './usage-rollups.js';
import { queryScoped, queryScopedWithTotals, type QuerySettings } from './clickhouse-query.js';

/** The keys a usage report groups by (contract 8.3): the groupable columns of call-log-schema.ts. */
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

/**
 * A report's result rows, on top of the bounds of every read (clickhouse-query.ts); and
 * no projection: call_logs' one (forwarder_counts) counts rows by ingested_at, which no
 * report reads by, and weighing a projection for a report's raw parts took time
 * (docs/call-logs.md, "Session 18").
 */
const REPORT_SETTINGS: QuerySettings = { max_result_rows: 2_000_000, optimize_use_projections: 0 };
/** What a report over its bounds tells the caller to narrow (a 400). */
const NARROW_REPORT = {
  path: 'fromMs',
  message: 'the report reads more than it may in time: narrow the window (fromMs, toMs), add filters or group by fewer keys',
};

/** The expression a key is read from; status is an Enum8 and is reported as its name. */
const keyExpr = (key: UsageFilterKey): string => (COLUMN[key].kind === 'status' ? `toString(${key})` : key);

/** A group's measures (Measures' names), its durations an array of bucket counts (h), which the totals add up. */
const GROUP_NAMES: UsageStateNames = {
  calls: 'calls_total',
  errors: 'errors_total',
  durations: 'h',
  requestBytes: 'request_bytes_total',
  responseBytes: 'response_bytes_total',
};
/**
 * A part's measures. A rollup's rows are read as stored, ungrouped, and a raw part's
 * groups make states of the same type under the same names, so the parts union and the
 * report's groups merge every state once, where grouping each part first and adding its
 * arrays up again made and added every array twice (docs/call-logs.md, "Session 17").
 */
const RAW_MEASURES = usageMeasuresOfBuckets(ROLLUP_STATE_NAMES, 'states');
const GROUP_MEASURES = usageMeasuresOfStates(GROUP_NAMES, 'arrays');
/** A group's measures straight from raw rows, when the whole window is read raw: one grouping fewer. */
const RAW_GROUP_MEASURES = usageMeasuresOfBuckets(GROUP_NAMES, 'arrays');
/**
 * A page of groups: their measures, the percentiles taken from the counts of the
 * page's rows only (after LIMIT). The totals over every group come with it as the totals row of
 * the groups' GROUP BY ... WITH TOTALS, which ClickHouse computes while grouping,
 * before ORDER BY and LIMIT: one query, where a second query for the totals doubled a
 * report's time (chDB runs one parameterized query at a time). They were window functions over the
 * groups, whose bucket-count array was copied into every row of the page (a week by
 * tool and hour has 3,042): WITH TOTALS merges those arrays once.
 */
const PAGE_MEASURES = `calls_total, errors_total, ${quantilesOfBuckets('h')} AS q, request_bytes_total, response_bytes_total`;
const TOTAL_MEASURES = `sum(calls_total) AS calls_total, sum(errors_total) AS errors_total, ${quantilesOfBuckets('sumForEach(h)')} AS q,
  sum(request_bytes_total) AS request_bytes_total, sum(response_bytes_total) AS response_bytes_total`;

/**
 * Builds the groups of a report: one row per bucket and keys, with GROUP_MEASURES.
 * The window is cut into parts (usage-rollups.ts): whole days, hours or minutes from
 * the coarsest rollup that keeps the report's keys and filters, the rest raw; the
 * parts read from one source (up to two, one at each end of the window) share a
 * SELECT, each SELECT yields measures as a rollup stores them (a rollup's own rows, raw
 * parts' groups), and one grouping merges them. Raw rows are counted by duration bucket
 * first (BUCKET_COUNTS_OF_ROWS), but for raw parts each under a minute, whose few rows
 * make their states at once (USAGE_STATES_OF_ROWS). A window read raw alone is grouped
 * into the report's groups at once.
 */
function plan(q: UsageQuery, rollups: readonly UsageRollup[]): { groups: string; params: Record<string, unknown> } {
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
  const groupCols = groupColumns(q);
  const groupBy = groupCols.length ? `GROUP BY ${groupCols.join(', ')}` : '';
  const parts = cutWindow(q.fromMs, q.toMs, servingRollups([...Object.keys(q.filters), ...q.groupBy], q.interval, rollups));
  const timeRange = (part: WindowPart, i: number): string => {
    params[`p${i}From`] = part.fromMs;
    params[`p${i}To`] = part.toMs;
    const column = timeColumn(part.from);
    return part.from === 'raw'
      ? `created_at >= fromUnixTimestamp64Milli({p${i}From:Int64}, 'UTC') AND created_at <= fromUnixTimestamp64Milli({p${i}To:Int64}, 'UTC')`
      : `${column} >= toDateTime(intDiv({p${i}From:Int64}, 1000), 'UTC') AND ${column} <= toDateTime(intDiv({p${i}To:Int64}, 1000), 'UTC')`;
  };
  // One SELECT per source, its parts' ranges or'ed: a SELECT costs a few ms however few
  // rows it reads, and a 30-day window has up to two parts in each of four sources.
  const sources = [...Map.groupBy(parts.entries(), ([, part]) => part.from)];
  const selects = sources.map(([from, ofSource]) => {
    const ranges = ofSource.map(([i, part]) => timeRange(part, i));
    const time = ranges.length === 1 ? ranges[0]! : `(${ranges.map((r) => `(${r})`).join(' OR ')})`;
    const bucket = q.interval ? [`${bucketExpr(q.interval, timeColumn(from))} AS b`] : [];
    const filter = `WHERE ${['organization_guid = {org:String}', time, ...where].join(' AND ')}`;
    if (from !== 'raw') return `SELECT ${[...bucket, ...keys, USAGE_STATE_COLUMNS].join(', ')} FROM ${from.table} ${filter}`;
    if (sources.length > 1 && ofSource.every(([, part]) => part.toMs - part.fromMs < GRAIN_MS.minute))
      return `SELECT ${[...bucket, ...keys, USAGE_STATES_OF_ROWS].join(', ')} FROM call_logs ${filter} ${groupBy}`;
    const buckets = `SELECT ${[...bucket, ...keys, BUCKET_COUNTS_OF_ROWS].join(', ')} FROM call_logs ${filter} GROUP BY ${[...groupCols, 'duration_bucket'].join(', ')}`;
    return `SELECT ${[...groupCols, sources.length === 1 ? RAW_GROUP_MEASURES : RAW_MEASURES].join(', ')} FROM (${buckets}) ${groupBy}`;
  });
  if (selects.length === 1 && sources[0]![0] === 'raw') return { groups: selects[0]!, params };
  return { groups: `SELECT ${[...groupCols, GROUP_MEASURES].join(', ')} FROM (${selects.join(' UNION ALL ')}) ${groupBy}`, params };
}

const timeColumn = (from: WindowPart['from']): string => (from === 'raw' ? 'created_at' : from.timeColumn);

/** The bucket (b) and the keys (g0, g1, ...) a report groups by. */
const groupColumns = (q: UsageQuery): string[] => [...(q.interval ? ['b'] : []), ...q.groupBy.map((_, i) => `g${i}`)];

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

/** A report row's schema: the measures, the bucket (b) when there is one and the keys (g0, g1, ...). */
const makeRowSchema = (bucketed: boolean, keys: number) =>
  Measures.extend({
    ...(bucketed ? { b: Count } : {}),
    ...Object.fromEntries(Array.from({ length: keys }, (_, i) => [`g${i}`, z.string()])),
  });
const rowSchemas = new Map<string, ReturnType<typeof makeRowSchema>>();

/**
 * The row schema of a report's shape, made once per shape (eight at most) and kept: zod
 * compiles a schema's checks at its first use, which a report paid on every request
 * when it made its own.
 */
function rowSchema(bucketed: boolean, keys: number): ReturnType<typeof makeRowSchema> {
  const name = `${bucketed}:${keys}`;
  let schema = rowSchemas.get(name);
  if (!schema) {
    schema = makeRowSchema(bucketed, keys);
    rowSchemas.set(name, schema);
  }
  return schema;
}

/**
 * A group's measures set on `item`, after what it holds (bucket and keys), by name:
 * made as an object and merged in with Object.assign they cost several times as
 * much on a large page (docs/call-logs.md, "Session 13: rows and items as one object
 * literal each").
 */
function withMeasures<T extends object>(item: T, r: z.output<typeof Measures>): T & UsageMeasures {
  const out = item as T & UsageMeasures;
  out.calls = r.calls_total;
  out.errors = r.errors_total;
  out.p50Ms = r.calls_total ? (r.q[0] ?? 0) : 0;
  out.p95Ms = r.calls_total ? (r.q[1] ?? 0) : 0;
  out.p99Ms = r.calls_total ? (r.q[2] ?? 0) : 0;
  out.requestBytes = r.request_bytes_total;
  out.responseBytes = r.response_bytes_total;
  return out;
}

/** A bucket's start (epoch seconds) as ISO text, each made once per report: a report has many items per bucket. */
function bucketNames(): (seconds: number) => string {
  const names = new Map<number, string>();
  return (seconds) => {
    let name = names.get(seconds);
    if (name === undefined) {
      name = new Date(seconds * 1000).toISOString();
      names.set(seconds, name);
    }
    return name;
  };
}

/**
 * Runs get_usage_report for one workspace: the page of groups and the totals over
 * everything the window and filters select, read in one query (PAGE_MEASURES).
 */
export async function usageReport(
  store: Pick<ClickhouseStore, 'client'>,
  organizationGuid: string,
  q: UsageQuery,
  /** Tighter bounds than the defaults (tests). */
  bounds: QuerySettings = {},
  /** The rollups it may read (bench:usage compares sets in one run). */
  rollups: readonly UsageRollup[] = USAGE_ROLLUPS,
): Promise<UsageReport> {
  const { groups, params } = plan(q, rollups);
  const groupCols = groupColumns(q);
  const order = [...(q.interval ? ['b ASC'] : []), 'calls_total DESC', ...q.groupBy.map((_, i) => `g${i} ASC`)];
  const Row = rowSchema(q.interval !== undefined, q.groupBy.length);
  const scoped = <S extends z.ZodType>(tag: string, sql: string, row: S) => ({
    tag,
    sql,
    params: { ...params, limit: q.take + 1, skip: q.skip },
    row,
    settings: { ...REPORT_SETTINGS, ...bounds },
    overLimit: NARROW_REPORT,
  });
  // Without keys or buckets the groups are one row, which is the totals too.
  const withTotals = groupCols.length ? `${groups} WITH TOTALS` : groups;
  // The percentiles are taken on the page's rows only, after LIMIT; the totals row passes through.
  const page = `SELECT * FROM (${withTotals}) ORDER BY ${order.join(', ')} LIMIT {limit:UInt32} OFFSET {skip:UInt64}`;
  const sql = `SELECT ${[...groupCols, PAGE_MEASURES].join(', ')} FROM (${page}) ORDER BY ${order.join(', ')}`;
  const { rows, totals: ofPage } = await queryScopedWithTotals(store, organizationGuid, scoped('usage_report.items', sql, Row));
  // A page past the last group has no row to carry its totals (see queryScopedWithTotals);
  // only then are they read on their own.
  const totals =
    ofPage ??
    (groupCols.length ? undefined : rows[0]) ??
    (await queryScoped(store, organizationGuid, scoped('usage_report.totals', `SELECT ${TOTAL_MEASURES} FROM (${groups})`, Measures)))[0];
  // Without keys or buckets the one row is there even when nothing was selected: no calls, no item (as a bucket without calls has none).
  const pageRows = rows.slice(0, q.take).filter((r) => groupCols.length > 0 || Number(r.calls_total) > 0);
  const bucketName = bucketNames();
  const items = pageRows.map((r) => {
    const item: Partial<Record<UsageGroupKey, string | null>> & { bucket?: string } = {};
    if (q.interval) item.bucket = bucketName(Number(r.b));
    for (let i = 0; i < q.groupBy.length; i++) {
      const value = (r as Record<string, unknown>)[`g${i}`] as string;
      item[q.groupBy[i]!] = value === '' ? null : value;
    }
    return withMeasures(item, r);
  });
  // A report over an empty window still has totals: zero of everything.
  const total = withMeasures({}, totals ?? { calls_total: 0, errors_total: 0, q: [], request_bytes_total: 0, response_bytes_total: 0 });
  return { items, totals: total, skip: q.skip, take: q.take, nextSkip: rows.length > q.take ? q.skip + q.take : null };
}

/** The default window: the last 24 hours, ending at toMs when only toMs is given. */
export function usageWindow(fromMs: number | undefined, toMs: number | undefined, now = Date.now()): { fromMs: number; toMs: number } {
  const end = toMs ?? (fromMs !== undefined ? Math.max(now, fromMs) : now);
  return { fromMs: fromMs ?? Math.max(0, end - GRAIN_MS.day), toMs: end };
}
