import { describe, expect, it } from 'vitest';
import { rng } from '../util/random';
import { checkResamples, gapShare, MIN_RESAMPLES, pairedBootstrap, pairedDifference, pairedGain, RESAMPLES, shareable, type Correct, type Group } from './pairedStats';

/** Problem ids p0, p1, ... with the given values: one run's correctness. */
const correct = (values: readonly number[]): Correct => new Map(values.map((v, j) => [`p${j}`, v]));

/**
 * The bootstrap SE of a figure needs resamples: the sample SD of R draws has a relative
 * standard error of about √((κ − 1)/(4R)), κ the kurtosis (3 for a normal: 0.7% at R = 10,000;
 * 2.5 for the 4-problem case below: 0.6%). 5% is three of those and more; the draws are seeded,
 * so the check cannot flake.
 */
const SE_TOLERANCE = 0.05;

describe('the paired bootstrap against worked examples', () => {
  it('one seed a side, 4 problems: the mean difference, its SE and an interval that covers 0', () => {
    // A right on p0, p1, p2; B right on p1 only. Per-problem differences d = (1, 0, 1, 0).
    // Estimate: mean(d) = 2/4 = 0.5, exactly.
    // One run a side, so a resample only redraws the 4 problems: the statistic is K/4 with K the
    // number of drawn problems whose d is 1, K ~ Binomial(4, 1/2).
    //   its mean   E[K/4] = 0.5;
    //   its variance Var[K/4] = (population variance of d) / n = (0.5 · 0.5) / 4 = 1/16: SE 0.25.
    // P(K = 0) = P(K = 4) = 1/16 = 6.25%, more than 2.5% at each end: the 2.5th percentile is
    // 0/4 and the 97.5th 4/4. The interval [0, 1] covers 0: two problems of four are inside the noise.
    const r = pairedDifference([correct([1, 1, 1, 0])], [correct([0, 1, 0, 0])])!;
    expect(r.estimate).toBe(0.5);
    expect(r.se).toBeGreaterThan(0.25 * (1 - SE_TOLERANCE));
    expect(r.se).toBeLessThan(0.25 * (1 + SE_TOLERANCE));
    expect([r.lo, r.hi]).toEqual([0, 1]);
    expect(r.insideNoise).toBe(true);
    expect(r).toMatchObject({ problems: 4, seeds: [1, 1], seedsResampled: false, resamples: RESAMPLES });
  });

  it('one seed a side, 10 problems: an interval that does not cover 0', () => {
    // A right on all 10, B on p0 only: d has nine 1s and one 0; estimate 0.9.
    // Resampled: K/10, K ~ Binomial(10, 0.9). SE = √(0.9 · 0.1 / 10) = 0.0949.
    //   P(K = 10) = 0.9^10 = 0.349, P(K = 9) = 0.387, P(K = 8) = 0.194, P(K = 7) = 0.057,
    //   so P(K ≤ 6) = 1 − 0.987 = 0.013 and P(K ≤ 7) = 0.070: the 2.5th percentile is K = 7
    //   (0.7); P(K = 10) = 0.349 > 2.5%: the 97.5th is 1. [0.7, 1] lies above 0.
    const r = pairedDifference([correct(Array(10).fill(1))], [correct([1, ...Array(9).fill(0)])])!;
    expect(r.estimate).toBeCloseTo(0.9, 15);
    expect(r.se / Math.sqrt(0.009)).toBeGreaterThan(1 - SE_TOLERANCE);
    expect(r.se / Math.sqrt(0.009)).toBeLessThan(1 + SE_TOLERANCE);
    expect(r.lo).toBeCloseTo(0.7, 12);
    expect(r.hi).toBeCloseTo(1, 12);
    expect(r.insideNoise).toBe(false);
  });

  it('two seeds of A, one of B: the spread between seeds enters the interval', () => {
    // A's seed 0 right on all 5 problems, its seed 1 on none; B right on none. Every run is the
    // same on each problem, so the problems' draw changes nothing: the statistic is the mean of
    // two seeds drawn from A's {1, 0}, minus 0: 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4.
    //   mean 0.5 (the estimate), variance (population variance 1/4) / 2 seeds = 1/8: SE 0.354;
    //   P(0) = P(1) = 25% > 2.5%: the interval is [0, 1], inside the noise.
    const r = pairedDifference([correct([1, 1, 1, 1, 1]), correct([0, 0, 0, 0, 0])], [correct([0, 0, 0, 0, 0])])!;
    expect(r.estimate).toBe(0.5);
    expect(r.se / Math.sqrt(1 / 8)).toBeGreaterThan(1 - SE_TOLERANCE);
    expect(r.se / Math.sqrt(1 / 8)).toBeLessThan(1 + SE_TOLERANCE);
    expect([r.lo, r.hi]).toEqual([0, 1]);
    expect(r).toMatchObject({ insideNoise: true, seeds: [2, 1], seedsResampled: true });
  });

  it('pairs the problems: two methods right on the same problems differ by exactly 0 in every resample', () => {
    // Drawn independently, the two means of (1, 0, 1, 1, 0, 0) would each vary (SE 0.2 apiece);
    // drawn together, their difference is 0 in every resample.
    const same = correct([1, 0, 1, 1, 0, 0]);
    const r = pairedDifference([same], [same])!;
    expect(r).toMatchObject({ estimate: 0, lo: 0, hi: 0, se: 0, insideNoise: true });
  });

  it('the gain from the start pairs each run with itself, problem by problem', () => {
    // One run: start (0, 1, 0, 1, 0), final (1, 1, 0, 1, 1): d = (1, 0, 0, 0, 1), gain 0.4.
    // SE = √(population variance of d / n) = √(0.4 · 0.6 / 5) = √0.048 = 0.219.
    const r = pairedGain([correct([0, 1, 0, 1, 0])], [correct([1, 1, 0, 1, 1])])!;
    expect(r.estimate).toBeCloseTo(0.4, 15);
    expect(r.se / Math.sqrt(0.048)).toBeGreaterThan(1 - SE_TOLERANCE);
    expect(r.se / Math.sqrt(0.048)).toBeLessThan(1 + SE_TOLERANCE);
    expect(r.seeds).toEqual([1]);
    // Two runs whose starts are swapped: pairing by run matters.
    const twoRuns = pairedGain([correct([0, 0]), correct([1, 1])], [correct([1, 1]), correct([1, 1])])!;
    expect(twoRuns.estimate).toBe(0.5);
    expect(() => pairedGain([correct([0])], [])).toThrow('1 starts for 0 finals');
  });

  it('keeps to the problems every run holds, or a level\'s', () => {
    const a = new Map([['x', 1], ['y', 1], ['z', 0]]);
    const b = new Map([['y', 0], ['z', 0], ['w', 1]]);
    // Shared: y (1 − 0) and z (0 − 0).
    expect(pairedDifference([a], [b])).toMatchObject({ estimate: 0.5, problems: 2 });
    expect(pairedDifference([a], [b], new Set(['y']))).toMatchObject({ estimate: 1, lo: 1, hi: 1, problems: 1, insideNoise: false });
    expect(pairedDifference([a], [b], new Set(['w']))).toBeNull();
    expect(pairedDifference([], [b])).toBeNull();
  });

  it('random runs: the bootstrap SE matches the closed form of the two-level resampling', () => {
    // For groups g (sign ±1) of m_g runs x_gsj over n problems, T = Σ_g sign_g (1/m_g) Σ_k Y_g,S_k(c),
    // Y_gs(c) = (1/n) Σ_j c_j x_gsj, c ~ Multinomial(n, 1/n) shared, S_k uniform per group:
    //   Var T = Var(E[T | c]) + E[Var(T | c)]
    //         = popvar_j(Σ_g sign_g x̄_gj) / n
    //           + Σ_g [ popvar_s(μ_gs) / m_g + Σ_s popvar_j(x_gsj − x̄_gj) / (m_g² n) ],
    // with x̄_gj the mean of problem j over g's runs and μ_gs run s's mean over problems.
    const random = rng(7);
    const n = 60;
    const difficulty = Array.from({ length: n }, () => random());
    const runs = (m: number, skill: number) => Array.from({ length: m }, () => difficulty.map((d) => (random() < skill * d + 0.2 * random() ? 1 : 0)));
    const groups: Group[] = [{ sign: 1, runs: runs(3, 0.9) }, { sign: -1, runs: runs(4, 0.7) }];
    const popvar = (xs: number[]) => {
      const m = xs.reduce((a, b) => a + b, 0) / xs.length;
      return xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length;
    };
    const colMean = (g: Group) => difficulty.map((_, j) => g.runs.reduce((a, r) => a + r[j]!, 0) / g.runs.length);
    const means = groups.map(colMean);
    let variance = popvar(difficulty.map((_, j) => groups.reduce((a, g, k) => a + g.sign * means[k]![j]!, 0))) / n;
    groups.forEach((g, k) => {
      const m = g.runs.length;
      variance += popvar(g.runs.map((r) => r.reduce((a, b) => a + b, 0) / n)) / m;
      variance += g.runs.reduce((a, r) => a + popvar(r.map((x, j) => x - means[k]![j]!)), 0) / (m * m * n);
    });
    const r = pairedBootstrap(groups);
    expect(r.se / Math.sqrt(variance)).toBeGreaterThan(1 - SE_TOLERANCE);
    expect(r.se / Math.sqrt(variance)).toBeLessThan(1 + SE_TOLERANCE);
    expect(r.lo).toBeLessThan(r.estimate);
    expect(r.hi).toBeGreaterThan(r.estimate);
    // Reproducible: the same records, the same interval.
    expect(pairedBootstrap(groups)).toEqual(r);
  });

  it('the share of a gap: a baseline right on nothing and a ceiling on everything make it the method\'s own accuracy, resample by resample', () => {
    // (m − 0) / (1 − 0) = m in every resample, with the problems drawn as a one-group bootstrap draws them.
    const method = correct([1, 0, 0, 1, 0, 1, 0, 0, 0, 0]);
    const r = gapShare([method], [correct(Array(10).fill(0))], [correct(Array(10).fill(1))])!;
    const alone = pairedBootstrap([{ sign: 1, runs: [[...method.values()]] }]);
    expect(r).toEqual({ ...alone, seeds: [1, 1, 1] });
    expect(r.estimate).toBeCloseTo(0.3, 15);
  });

  it('random runs: the share is the ratio of the mean differences, 0 for the baseline itself and 1 for the ceiling', () => {
    const random = rng(11);
    const n = 80;
    const difficulty = Array.from({ length: n }, () => random());
    const run = (skill: number) => correct(difficulty.map((d) => (random() < skill * d ? 1 : 0)));
    const mean = (runs: Correct[]) => runs.reduce((a, r) => a + [...r.values()].reduce((x, y) => x + y, 0), 0) / (runs.length * n);
    const [a, b, c] = [[run(0.6), run(0.6), run(0.6)], [run(0.3), run(0.3)], [run(1), run(1), run(1), run(1)]];
    const r = gapShare(a, b, c)!;
    expect(r.estimate).toBeCloseTo((mean(a) - mean(b)) / (mean(c) - mean(b)), 12);
    expect(r.lo).toBeLessThan(r.estimate);
    expect(r.hi).toBeGreaterThan(r.estimate);
    expect(r).toMatchObject({ problems: n, seeds: [3, 2, 4], seedsResampled: true });
    // One run a side: the baseline closes none of the gap and the ceiling all of it, in every resample.
    expect(gapShare([b[0]!], [b[0]!], [c[0]!])).toMatchObject({ estimate: 0, lo: 0, hi: 0 });
    expect(gapShare([c[0]!], [b[0]!], [c[0]!])).toMatchObject({ estimate: 1, lo: 1, hi: 1 });
    expect(gapShare(a, b, c, new Set(['none']))).toBeNull();
    expect(gapShare([], b, c)).toBeNull();
  });

  it('is given only for a gap whose interval is above 0', () => {
    // One run's per-problem differences: every resample's mean lies within their range.
    const gap = (differences: number[]) => pairedBootstrap([{ sign: 1, runs: [differences] }]);
    expect(shareable(gap([1, 0.5, 1, 0.25]))).toBe(true);
    expect(shareable(gap([0, 0, 0, 0]))).toBe(false);
    expect(shareable(gap([1, -1, 1, -1]))).toBe(false);
    expect(shareable(null)).toBe(false);
  });

  it('covers a known mean in about 95% of samples: paired by problem, the interval is narrow and still covers', () => {
    // 200 samples of 20 problems, each problem a difficulty d_j ~ U(0, 1) both methods share, A's
    // value d_j + 0.1 + noise and B's d_j + noise (noise N(0, 0.1²)): the true difference is 0.1.
    // The percentile interval should cover it in about 95% of samples (binomial SD of the share
    // 1.5% in 200: the band is about ±3 SD, wider below for the percentile interval's known
    // undercoverage at small n). Drawn together, the problems' shared difficulty cancels: the
    // interval is as wide as the noise makes it (SD of the mean difference √2 · 0.1 / √20 = 0.032,
    // about 0.12 from end to end), not the difficulty (SD 0.29 / √20 = 0.065 a side, unpaired 0.36).
    const random = rng(3);
    const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const [n, samples] = [20, 200];
    let covered = 0;
    let width = 0;
    for (let k = 0; k < samples; k++) {
      const d = Array.from({ length: n }, () => random());
      const a = d.map((x) => x + 0.1 + 0.1 * normal());
      const b = d.map((x) => x + 0.1 * normal());
      const r = pairedBootstrap([{ sign: 1, runs: [a] }, { sign: -1, runs: [b] }], { seed: k });
      if (r.lo <= 0.1 && 0.1 <= r.hi) covered++;
      width += (r.hi - r.lo) / samples;
    }
    expect(covered / samples).toBeGreaterThan(0.89);
    expect(covered / samples).toBeLessThan(0.995);
    expect(width).toBeGreaterThan(0.1);
    expect(width).toBeLessThan(0.14);
  });

  it('pairs the seeds where asked: a seed that moves both methods alike cancels in their difference', () => {
    // Seed s adds u_s to every problem of both methods (u: 0, 0.4, 0.8); A is B + 0.05 on every problem.
    // Paired, every resample's difference is exactly 0.05; drawn on their own, the seeds' spread
    // (SD 0.4 a seed) makes the interval wide.
    const base = [0.1, 0.3, 0.2, 0.5, 0.4];
    const u = [0, 0.4, 0.8];
    const b = u.map((x) => base.map((y) => y + x));
    const a = b.map((row) => row.map((y) => y + 0.05));
    const groups: Group[] = [{ sign: 1, runs: a }, { sign: -1, runs: b }];
    const paired = pairedBootstrap(groups, { pairSeeds: true });
    expect(paired.lo).toBeCloseTo(0.05, 12);
    expect(paired.hi).toBeCloseTo(0.05, 12);
    expect(paired).toMatchObject({ seedsPaired: true, seedsResampled: true, seeds: [3, 3] });
    const apart = pairedBootstrap(groups);
    expect(apart.seedsPaired).toBe(false);
    expect(apart.hi - apart.lo).toBeGreaterThan(0.5);
    // One run a side: nothing to pair.
    expect(pairedBootstrap([{ sign: 1, runs: [a[0]!] }, { sign: -1, runs: [b[0]!] }], { pairSeeds: true }).seedsPaired).toBe(false);
  });

  it('refuses what it cannot resample', () => {
    expect(() => pairedBootstrap([])).toThrow('no groups');
    expect(() => pairedBootstrap([{ sign: 1, runs: [] }])).toThrow('a group without runs');
    expect(() => pairedBootstrap([{ sign: 1, runs: [[1, 0]] }, { sign: -1, runs: [[1]] }])).toThrow('different numbers of problems');
    expect(() => pairedBootstrap([{ sign: 1, runs: [[]] }])).toThrow('no problems');
    expect(() => pairedBootstrap([{ sign: 1, runs: [[1, 0]] }, { sign: -1, runs: [[1, 0], [0, 1]] }], { pairSeeds: true })).toThrow('seeds paired across groups of 1, 2 runs');
  });

  it('refuses fewer than 10,000 resamples: a report\'s interval rests on at least that many', () => {
    expect(MIN_RESAMPLES).toBe(10_000);
    expect(RESAMPLES).toBeGreaterThanOrEqual(MIN_RESAMPLES);
    for (const resamples of [10, 2000, MIN_RESAMPLES - 1, 10_000.5]) expect(() => pairedBootstrap([{ sign: 1, runs: [[1]] }], { resamples })).toThrow(`resamples must be an integer of at least 10,000 (got ${resamples})`);
    expect(() => checkResamples(MIN_RESAMPLES)).not.toThrow();
    expect(pairedBootstrap([{ sign: 1, runs: [[1, 0]] }], { resamples: 12_000 }).resamples).toBe(12_000);
  });
});
