/** The p-th percentile of `values` (nearest rank, the value at floor(p% of n) in sorted order); NaN when empty. */
export const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

/** The middle value (the upper one of an even count); NaN when empty. */
export const median = (values: readonly number[]): number => percentile(values, 50);
