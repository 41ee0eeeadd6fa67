/** The few statistics the loop, its advantages and the comparison share. */

/** The arithmetic mean; 0 for no values (an empty group contributes nothing). */
export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** The sample (unbiased, n − 1) standard deviation; 0 for fewer than two values. */
export function sampleStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
}
