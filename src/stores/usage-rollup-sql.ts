/**
 * The measures every usage rollup keeps, as the reports read and merge them, and the
 * duration bucketing their raw reads share with the rollups' views. The DDL files
 * (clickhouse/0005, 0008-0010) spell the same text literally, as applied migrations
 * must stay; test/logs-ddl.test.ts holds them equal, so a rollup's states and a raw
 * read's always merge.
 */

/**
 * A duration as the reports' percentiles see it: exact below 32 ms, above that the
 * middle of its bucket, the value's float32 with 4 bits of mantissa kept (16 buckets
 * per doubling), so within 1/32 (3.125 %) of the value. Interpolating between two
 * such values errs by at most 3.125 % of the exact percentile (0.005 ms more for the
 * rounding of the answer), inside the contract's 5 % or 1 ms (8.3) for any rows,
 * however few. It bounds a state's distinct values (about 200 up to a minute), so the
 * rollups' states stay small and merge fast, and costs a few bit operations a row
 * (a log/pow bucket of ratio 1.04 took twice as long on raw rows).
 */
export const DURATION_BUCKET_SQL =
  'if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295)))';

/**
 * Durations are a map of bucketed value to count (`quantilesExactWeightedInterpolated`:
 * linear interpolation between closest ranks, numpy's default); counts and bytes are exact sums.
 */
export const USAGE_QUANTILES = 'quantilesExactWeightedInterpolated(0.5, 0.95, 0.99)';

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

/** The states of call_logs rows, under `to`'s names (a rollup's view and backfill, a report's raw reads). */
export const usageStatesOfRows = (to: UsageStateNames): string =>
  `count() AS ${to.calls}, countIf(status = 'error') AS ${to.errors}, ${USAGE_QUANTILES.replace('(', 'State(')}(${DURATION_BUCKET_SQL}, toUInt8(1)) AS ${to.durations},
    sum(toUInt64(request_bytes)) AS ${to.requestBytes}, sum(toUInt64(response_bytes)) AS ${to.responseBytes}`;

/** A rollup's rows merged into coarser states under `to`'s names (a coarser rollup fed by a finer one, a report's rollup reads). */
export const usageStatesOfStates = (to: UsageStateNames): string =>
  `sum(${n.calls}) AS ${to.calls}, sum(${n.errors}) AS ${to.errors}, ${USAGE_QUANTILES.replace('(', 'MergeState(')}(${n.durations}) AS ${to.durations},
    sum(${n.requestBytes}) AS ${to.requestBytes}, sum(${n.responseBytes}) AS ${to.responseBytes}`;
