/**
 * The random draws seed-logs makes (docs/call-logs.md, "Seeded data"). Seeding 100M
 * rows must spend its time in the writer, not here: a draw is a few arithmetic
 * operations on a non-cryptographic PRNG, and weighted choices are precomputed tables.
 */

export type Random = () => number;

/** xorshift32: small and fast; seed data needs variety, not unpredictability. */
export function rng(seed: number): Random {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** Weights 1/rank^exponent for ranks 1..n: a few items carry most of the draws (Zipf's law). */
export function zipfWeights(n: number, exponent = 1.1): number[] {
  return Array.from({ length: n }, (_, i) => 1 / (i + 1) ** exponent);
}

/** Draws an index with probability proportional to its weight (binary search over the cumulative weights). */
export function weightedPicker(weights: readonly number[], random: Random): () => number {
  const cumulative = new Float64Array(weights.length);
  let total = 0;
  weights.forEach((w, i) => (cumulative[i] = total += w));
  const last = weights.length - 1;
  return () => {
    const target = random() * total;
    let lo = 0;
    let hi = last;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid]! > target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}

/**
 * Log-normal draws: `median * e^(sigma * Z)` with Z standard normal (Box-Muller, both
 * values of a pair used). Latencies and payload sizes look like this: most near the
 * median, a long tail to the right (p99 about 10x the median at sigma 1).
 */
export function logNormal(random: Random): (median: number, sigma: number) => number {
  let spare = NaN;
  return (median, sigma) => {
    let z = spare;
    if (Number.isNaN(z)) {
      const r = Math.sqrt(-2 * Math.log(1 - random()));
      const theta = 2 * Math.PI * random();
      z = r * Math.cos(theta);
      spare = r * Math.sin(theta);
    } else {
      spare = NaN;
    }
    return median * Math.exp(sigma * z);
  };
}

// Relative traffic by UTC hour on a weekday: quiet nights, a morning ramp, a plateau
// from 10:00 to 16:00 and an evening tail (one team spread over Europe and the Americas).
const WEEKDAY_BY_HOUR = [0.1, 0.08, 0.07, 0.07, 0.08, 0.1, 0.18, 0.35, 0.65, 0.9, 1, 1, 0.95, 0.95, 1, 1, 0.9, 0.7, 0.45, 0.3, 0.22, 0.17, 0.14, 0.12];

/** Relative traffic of the UTC hour starting at `hourMs`: weekday business hours peak; weekends are a fifth as busy, a flatter curve. */
export function trafficWeight(hourMs: number): number {
  const date = new Date(hourMs);
  const weekday = WEEKDAY_BY_HOUR[date.getUTCHours()]!;
  const day = date.getUTCDay();
  return day === 0 || day === 6 ? 0.12 + 0.1 * weekday : weekday;
}
