import { describe, expect, it } from 'vitest';
import { maxOf, mean, passAtK, reportedKs, sampleStd } from './stats';

describe('mean', () => {
  it('is the sum over the count on random arrays, 0 for none', () => {
    for (let trial = 0; trial < 50; trial++) {
      const xs = Array.from({ length: 2 + Math.floor(Math.random() * 40) }, () => Math.random());
      expect(mean(xs)).toBeCloseTo(xs.reduce((a, b) => a + b, 0) / xs.length, 14);
    }
    expect(mean([])).toBe(0);
  });

  it('of values all equal is that value exactly, their deviation exactly 0, where a sum rounds', () => {
    const xs = Array(5).fill(199 / 400);
    expect(xs.reduce((a, b) => a + b, 0) / xs.length).not.toBe(199 / 400);
    expect(mean(xs)).toBe(199 / 400);
    expect(sampleStd(xs)).toBe(0);
  });
});

describe('maxOf', () => {
  it('equals Math.max over random arrays, 0 for none', () => {
    for (let trial = 0; trial < 50; trial++) {
      const xs = Array.from({ length: 1 + Math.floor(Math.random() * 40) }, () => Math.floor(Math.random() * 1000));
      expect(maxOf(xs, (x) => x)).toBe(Math.max(...xs));
    }
    expect(maxOf([], (x: number) => x)).toBe(0);
  });

  it('takes more elements than a spread argument list holds', () => {
    const rows = new Array<number[]>(500_000).fill([1, 2]);
    rows[321_987] = [1, 2, 3, 4, 5];
    expect(maxOf(rows, (r) => r.length)).toBe(5);
  });
});

/**
 * pass@k by its definition, in float64: every way of drawing k of the n samples without
 * replacement enumerated, the share holding at least one of the c passing ones (the first c).
 */
function enumeratedPassAtK(n: number, c: number, k: number): number {
  let hit = 0;
  let all = 0;
  const walk = (next: number, left: number, passed: boolean) => {
    if (left === 0) {
      all++;
      if (passed) hit++;
      return;
    }
    for (let i = next; i <= n - left; i++) walk(i + 1, left - 1, passed || i < c);
  };
  walk(0, k, false);
  return hit / all;
}

describe('passAtK', () => {
  it('is the unbiased estimator: the share of k-subsets of the n samples holding a passing one, enumerated', () => {
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(Math.random() * 16);
      const c = Math.floor(Math.random() * (n + 1));
      const k = 1 + Math.floor(Math.random() * n);
      expect(passAtK(n, c, k), `n ${n}, c ${c}, k ${k}`).toBeCloseTo(enumeratedPassAtK(n, c, k), 12);
    }
  });

  it('stays exact where the binomials overflow a float64, and at its ends', () => {
    // C(2000, 1000) is about 1e600: the product form never forms it.
    expect(passAtK(2000, 1, 1000)).toBeCloseTo(0.5, 12);
    expect(passAtK(200, 0, 100)).toBe(0);
    expect(passAtK(200, 1, 1)).toBeCloseTo(0.005, 12);
    expect(passAtK(16, 1, 16)).toBe(1);
    for (let trial = 0; trial < 50; trial++) {
      const n = 1 + Math.floor(Math.random() * 64);
      const c = Math.floor(Math.random() * (n + 1));
      // pass@1 is the pass rate; pass@n is whether any passed.
      expect(passAtK(n, c, 1)).toBeCloseTo(c / n, 12);
      expect(passAtK(n, c, n)).toBe(c > 0 ? 1 : 0);
    }
  });

  it('reports HumanEval\'s ks up to the fewest samples, that count too', () => {
    expect(reportedKs(1)).toEqual([1]);
    expect(reportedKs(4)).toEqual([1, 2, 4]);
    expect(reportedKs(16)).toEqual([1, 2, 5, 10, 16]);
    expect(reportedKs(200)).toEqual([1, 2, 5, 10, 20, 50, 100, 200]);
  });
});
