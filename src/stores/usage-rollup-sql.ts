/**
 * The measures every usage rollup keeps, as the reports read and merge them, and the
 * duration bucketing their raw reads share with the rollups' views. The DDL file
 * (clickhouse/0011, 0012) spells the same text literally, as applied migrations must stay;
 * test/logs-ddl.test.ts holds them equal, so a rollup's states and a raw read's always
 * merge.
 */

/**
 * A duration's bucket: exact below 32 ms (buckets 0-31), above that the float32 of the
 * value with 4 bits of mantissa kept (16 buckets per doubling, 32 on up to 464 for the
 * largest UInt32). Each bucket stands for one value (durationOfBucket), within
 * 1/32 (3.125 %) of any duration in it; interpolating between two such values errs by
 * at most 3.125 % of the exact percentile (0.005 ms more for the rounding of the
 * answer), inside the contract's 5 % or 1 ms (8.3) for any rows, however few. A few
 * bit operations a row (a log/pow bucket of ratio 1.04 took twice as long on raw rows).
 */
export const DURATION_BUCKET_SQL = 'toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080))';
export const DURATION_BUCKETS = 465;

/** The duration a bucket stands for: below 32 the value itself, above the middle of its float32 range (capped at UInt32's largest). */
export function durationOfBucket(bucket: number): number {
  if (bucket < 32) return bucket;
  const bits = new DataView(new ArrayBuffer(4));
  bits.setUint32(0, ((bucket + 2080) << 19) | 262144);
  return Math.min(Math.trunc(bits.getFloat32(0)), 4_294_967_295);
}

/** Every bucket's duration as a ClickHouse array literal, index i + 1 for bucket i. */
export const DURATION_BUCKET_VALUES_SQL = `[${Array.from({ length: DURATION_BUCKETS }, (_, i) => durationOfBucket(i)).join(',')}]`;

/**
 * The durations a rollup keeps: the count of calls in each bucket, as an array indexed
 * by bucket (the last non-empty one ends it), merged by adding arrays (`sumForEach`).
 * A map of bucket to count (`quantilesExactWeightedInterpolated`'s state) merged
 * several times slower (docs/call-logs.md, "Usage reports").
 */
export const DURATION_STATE_TYPE = 'AggregateFunction(sumForEach, Array(UInt64))';

/**
 * The percentiles of a bucket-count array `counts` (an alias or a column): p50, p95
 * and p99 by linear interpolation between closest ranks (numpy's default), each bucket
 * weighing its count at its duration, computed by ClickHouse's own
 * `quantilesExactWeightedInterpolated` over the array.
 */
export const quantilesOfBuckets = (counts: string): string =>
  `arrayReduce('quantilesExactWeightedInterpolated(0.5, 0.95, 0.99)', arraySlice(${DURATION_BUCKET_VALUES_SQL}, 1, length(${counts})), ${counts})`;

/** The names a rollup's measures are stored under; a raw read's states take the same names, so they union. */
export interface UsageStateNames {
  calls: string;
  errors: string;
  durations: string;
  requestBytes: string;
  responseBytes: string;
}
export const ROLLUP_STATE_NAMES: UsageStateNames = {
  calls: 'calls',
  errors: 'errors',
  durations: 'durations',
  requestBytes: 'request_bytes_sum',
  responseBytes: 'response_bytes_sum',
};
const n = ROLLUP_STATE_NAMES;

/** What BUCKET_COUNTS_OF_ROWS names its sums: the measures of one bucket of one group. */
const BUCKET_SUMS: Omit<UsageStateNames, 'durations'> = {
  calls: 'bucket_calls',
  errors: 'bucket_errors',
  requestBytes: 'bucket_request_bytes',
  responseBytes: 'bucket_response_bytes',
};

/**
 * call_logs rows counted by their keys and duration bucket: the inner step of every
 * read of raw rows (a rollup's view and backfill, a report's raw parts), which then
 * groups by the keys alone with usageMeasuresOfBuckets. Counting per bucket first makes
 * each bucket one small array per group, instead of one per row.
 */
export const BUCKET_COUNTS_OF_ROWS = `${DURATION_BUCKET_SQL} AS duration_bucket, count() AS ${BUCKET_SUMS.calls}, countIf(status = 'error') AS ${BUCKET_SUMS.errors},
    sum(toUInt64(request_bytes)) AS ${BUCKET_SUMS.requestBytes}, sum(toUInt64(response_bytes)) AS ${BUCKET_SUMS.responseBytes}`;

/**
 * What a read makes of the durations: a rollup's view and backfill store states
 * (`sumForEachState`, `sumForEachMergeState`), which the table merges, and so do a
 * report's raw parts, which union with a rollup's rows as they are stored; a report's
 * groups merge those states into the bucket-count arrays themselves (`sumForEachMerge`)
 * once, or make the arrays straight from raw rows (`sumForEach`) when the whole window is
 * read raw. Each level of grouping in between (a source's rows merged into arrays, then
 * the arrays added up again) cost about as much as the merging itself.
 */
export type DurationsAs = 'states' | 'arrays';
const suffix = (as: DurationsAs) => (as === 'states' ? 'State' : '');

/** The measures under `to`'s names: the sums of `from`'s columns, and the durations as `durations` makes them. */
const measures = (to: UsageStateNames, from: Omit<UsageStateNames, 'durations'>, durations: string): string =>
  `sum(${from.calls}) AS ${to.calls}, sum(${from.errors}) AS ${to.errors}, ${durations} AS ${to.durations},
    sum(${from.requestBytes}) AS ${to.requestBytes}, sum(${from.responseBytes}) AS ${to.responseBytes}`;

/** The measures of the buckets BUCKET_COUNTS_OF_ROWS counted, each count placed at its bucket. */
export const usageMeasuresOfBuckets = (to: UsageStateNames, as: DurationsAs): string =>
  measures(to, BUCKET_SUMS, `sumForEach${suffix(as)}(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), ${BUCKET_SUMS.calls}))`);

/**
 * A rollup's states straight from call_logs rows, one array a row, grouped once: for a
 * report's raw parts that are each under a minute (the ends of a window the minute
 * rollup serves), where the rows are few and the bucket counting of BUCKET_COUNTS_OF_ROWS,
 * a grouping level more to plan and run, cost more than it saved (docs/call-logs.md,
 * "Session 23").
 */
export const USAGE_STATES_OF_ROWS = `count() AS ${n.calls}, countIf(status = 'error') AS ${n.errors},
    sumForEachState(arrayPushBack(arrayWithConstant(${DURATION_BUCKET_SQL}, toUInt64(0)), toUInt64(1))) AS ${n.durations},
    sum(toUInt64(request_bytes)) AS ${n.requestBytes}, sum(toUInt64(response_bytes)) AS ${n.responseBytes}`;

/** A rollup's rows merged: into coarser states (a coarser rollup fed by a finer one), or arrays (a report's groups). */
export const usageMeasuresOfStates = (to: UsageStateNames, as: DurationsAs): string => measures(to, n, `sumForEachMerge${suffix(as)}(${n.durations})`);

/** A rollup's measures as stored, one row each: a report's parts union them with raw parts' states, which its groups merge. */
export const USAGE_STATE_COLUMNS = [n.calls, n.errors, n.durations, n.requestBytes, n.responseBytes].join(', ');
