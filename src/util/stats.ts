/** The few statistics the loop, its advantages and the comparison share. */

/**
 * The arithmetic mean; 0 for no values (an empty group contributes nothing). Values all equal
 * give that value exactly, and so a sample deviation of exactly 0: a sum's rounding does not
 * (five of 199/400 sum to a mean of 0.49749999999999994, printed 49.7% beside one run's 49.8%).
 */
export function mean(xs: readonly number[]): number {
  if (!xs.length) return 0;
  const first = xs[0]!;
  return xs.every((x) => x === first) ? first : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/**
 * The largest f(x) over xs (0 for none), by a loop: Math.max(...xs) passes every element as an
 * argument and overflows the stack past ~100k of them, which a request of many rows reaches
 * before the checks that refuse it (a 2 GiB binding limit, an H100's, admits ~186k rows).
 */
export function maxOf<T>(xs: readonly T[], f: (x: T) => number): number {
  let m = 0;
  for (const x of xs) m = Math.max(m, f(x));
  return m;
}

/** The sample (unbiased, n − 1) standard deviation; 0 for fewer than two values. */
export function sampleStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
}

/**
 * The unbiased pass@k of a task with n samples of which c pass (Chen et al. 2021):
 * 1 − C(n−c, k)/C(n, k), as a product so that large n stays exact in floating point.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}

/** The ks reported: HumanEval's 1, 10, 100 and the steps between, up to the fewest samples any task has (that count too). */
export function reportedKs(fewest: number): number[] {
  return [...new Set([1, 2, 5, 10, 20, 50, 100, fewest])].filter((k) => k <= fewest).sort((a, b) => a - b);
}
