/** The p-th percentile of `values` (nearest rank, the value at floor(p% of n) in sorted order); NaN when empty. */
export const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

/** The middle value (the upper one of an even count); NaN when empty. */
export const median = (values: readonly number[]): number => percentile(values, 50);

/** Runs `fn` `warmup` times untimed, then `runs` times timed: p50 and p99 of the timed runs, in ms. */
export async function timeRuns(fn: () => Promise<unknown>, runs: number, warmup = 3): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}
