/**
 * The measures every usage rollup keeps, as the reports read and merge them, and the
 * duration bucketing their raw reads share with the rollups' views. The DDL file
 * (clickhouse/0011) spells the same text literally, as applied migrations must stay;
 * test/logs-ddl.test.ts holds them equal, so a rollup's states and a raw read's always
 * merge.
 */

/**
 * A duration's bucket: exact below 32 ms (buckets 0-31), above that the float32 of the
 * value with 4 bits of mantissa kept (16 buckets per doubling, 32 on up to 464 for the
 * largest UInt32). Each bucket stands for one value (DURATION_BUCKET_VALUES), within
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
 * A map of bucket to count (`quantilesExactWeightedInterpolated`'s state) cost about
 * 25 ns an entry to merge; arrays add in a few (docs/call-logs.md, "Usage reports").
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

/**
 * call_logs rows counted by their keys and duration bucket: the inner step of every
 * read of raw rows (a rollup's view and backfill, a report's raw parts), which then
 * groups by the keys alone with usageStatesOfBuckets. Counting per bucket first makes
 * each bucket one small array per group, instead of one per row.
 */
export const BUCKET_COUNTS_OF_ROWS = `${DURATION_BUCKET_SQL} AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes`;

/**
 * What a read makes of the durations: a rollup's view and backfill store states
 * (`sumForEachState`, `sumForEachMergeState`), which the table merges; a report works
 * with the bucket-count arrays themselves from the table read on (`sumForEach`,
 * `sumForEachMerge`): creating and finalising a state again at each level of its query
 * cost about as much as the merging.
 */
export type DurationsAs = 'states' | 'arrays';
const suffix = (as: DurationsAs) => (as === 'states' ? 'State' : '');

/** The measures of the buckets BUCKET_COUNTS_OF_ROWS counted, under `to`'s names. */
export const usageMeasuresOfBuckets = (to: UsageStateNames, as: DurationsAs): string =>
  `sum(bucket_calls) AS ${to.calls}, sum(bucket_errors) AS ${to.errors}, sumForEach${suffix(as)}(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS ${to.durations},
    sum(bucket_request_bytes) AS ${to.requestBytes}, sum(bucket_response_bytes) AS ${to.responseBytes}`;

/** A rollup's rows merged under `to`'s names: coarser states (a coarser rollup fed by a finer one), or arrays (a report's rollup reads). */
export const usageMeasuresOfStates = (to: UsageStateNames, as: DurationsAs): string =>
  `sum(${n.calls}) AS ${to.calls}, sum(${n.errors}) AS ${to.errors}, sumForEachMerge${suffix(as)}(${n.durations}) AS ${to.durations},
    sum(${n.requestBytes}) AS ${to.requestBytes}, sum(${n.responseBytes}) AS ${to.responseBytes}`;

/** Arrays of bucket counts, and the other measures, summed under `to`'s names (a report's parts merged into its groups). */
export const usageMeasuresOfArrays = (to: UsageStateNames): string =>
  `sum(${n.calls}) AS ${to.calls}, sum(${n.errors}) AS ${to.errors}, sumForEach(${n.durations}) AS ${to.durations},
    sum(${n.requestBytes}) AS ${to.requestBytes}, sum(${n.responseBytes}) AS ${to.responseBytes}`;
