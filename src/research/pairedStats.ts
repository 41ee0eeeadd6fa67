/**
 * A paired bootstrap over problems and seeds: how sure a comparison of methods can be when
 * every run is validated on the same held-out problems. A figure is a signed sum of group
 * means (a method minus the baseline; a method's final minus its start, one group of per-run
 * differences), or a ratio of such sums (the share of a gap a method closes: gapShare); each
 * group is a set of runs (seeds), each run a vector of per-problem values
 * aligned by problem. One resample draws the problems with replacement, the SAME draw for
 * every group (the pairing: a problem every method finds easy moves them all alike), and,
 * independently, each group's runs with replacement (the spread between seeds). The interval
 * is the resamples' 2.5th to 97.5th percentile; "inside the noise" where it covers 0.
 *
 * Where the groups' runs are the same seeds from the same start (run s of every group made with
 * seed s from one checkpoint: `pairSeeds`), one seed draw serves every group as the problems'
 * draw does: what a seed's draw of batches does to every method alike cancels in a difference.
 *
 * Where every group has one run the seed draw is trivial: the interval then covers the
 * sampling of the problems only, and says so (`seedsResampled: false`). Pure and seeded, so a
 * report is reproducible to the digit.
 */
import { rng } from '../util/random';

/**
 * Resamples per figure, and the fewest a report accepts. With 2,000 the interval's ends are
 * order statistics 50 and 1949, each with about 50 resamples beyond it, and an end near 0 moves
 * across it with the draw (a figure of the 2026-11-27 comparison, +4.1 [+0.2, +8.3] from 2,000
 * draws, is [−0.05, +8.2] from 100,000). 10,000 puts 250 beyond each end: the Monte Carlo error
 * of an end shrinks as 1/√R, to 0.45 of 2,000's.
 */
export const RESAMPLES = 10_000;
export const MIN_RESAMPLES = 10_000;
/** The seed of every figure's draws: the same records give the same intervals. */
export const BOOTSTRAP_SEED = 0;

export interface Interval {
  /** The statistic on the records as they are. */
  estimate: number;
  /** The 95% percentile interval of the resampled statistic. */
  lo: number;
  hi: number;
  /** The resampled statistic's standard deviation (the bootstrap standard error). */
  se: number;
  /** The interval covers 0: the data cannot tell the sign. */
  insideNoise: boolean;
  /** Problems the figure rests on. */
  problems: number;
  /** Runs (seeds) of each group, in the order given. */
  seeds: number[];
  /** False where every group has one run: the interval covers problem sampling only. */
  seedsResampled: boolean;
  /** One seed draw for every group (runs of the same seeds from the same start), else each group's own. */
  seedsPaired: boolean;
  resamples: number;
}

/** One term of a figure: `sign` × the mean over its runs and the problems of `runs[s][j]`. */
export interface Group {
  sign: 1 | -1;
  /** One row per run, one value per problem, every row over the same problems in the same order. */
  runs: readonly (readonly number[])[];
}

export interface BootstrapOptions {
  /** At least MIN_RESAMPLES (default RESAMPLES). */
  resamples?: number;
  seed?: number;
  /** Row s of every group is seed s of one start: draw the seeds once for all groups (each group needs the same number of runs). */
  pairSeeds?: boolean;
}

/** The paired bootstrap of Σ sign × mean over a group's runs and problems (see the module's comment). */
export function pairedBootstrap(groups: readonly Group[], o: BootstrapOptions = {}): Interval {
  return bootstrapOf(groups.map((g) => g.runs), (means) => groups.reduce((s, g, k) => s + g.sign * means[k]!, 0), o);
}

/**
 * The paired bootstrap of any statistic of the groups' means (each the mean over a group's
 * runs and the problems): the same draws as pairedBootstrap, the statistic taken of each
 * resample's means; a ratio of differences (gapShare) is one that no signed sum expresses.
 */
export function bootstrapOf(groups: readonly (readonly (readonly number[])[])[], statistic: (means: readonly number[]) => number, o: BootstrapOptions = {}): Interval {
  const resamples = o.resamples ?? RESAMPLES;
  if (!groups.length) throw new Error('paired bootstrap: no groups');
  checkResamples(resamples);
  const n = groups[0]![0]?.length ?? 0;
  for (const g of groups) {
    if (!g.length) throw new Error('paired bootstrap: a group without runs');
    if (g.some((r) => r.length !== n)) throw new Error('paired bootstrap: runs over different numbers of problems');
  }
  const pairSeeds = o.pairSeeds ?? false;
  if (pairSeeds && groups.some((g) => g.length !== groups[0]!.length)) throw new Error(`paired bootstrap: seeds paired across groups of ${groups.map((g) => g.length).join(', ')} runs`);
  if (!n) throw new Error('paired bootstrap: no problems');
  const rows = groups.map((g) => g.map((r) => Float64Array.from(r)));
  const estimate = statistic(rows.map((rs) => rs.reduce((t, r) => t + r.reduce((a, b) => a + b, 0), 0) / (rs.length * n)));

  const random = rng(o.seed ?? BOOTSTRAP_SEED);
  const counts = new Float64Array(n);
  const stats = new Float64Array(resamples);
  const totals = new Float64Array(Math.max(...rows.map((rs) => rs.length)));
  const means = new Array<number>(rows.length);
  // The seeds' draw shared by every group where they are paired: which run fills each place.
  const shared = new Int32Array(groups[0]!.length);
  for (let b = 0; b < resamples; b++) {
    // The problems' draw, shared by every group: how often each problem is in this resample.
    counts.fill(0);
    for (let k = 0; k < n; k++) counts[Math.floor(random() * n)]!++;
    if (pairSeeds && shared.length > 1) for (let k = 0; k < shared.length; k++) shared[k] = Math.floor(random() * shared.length);
    for (let g = 0; g < rows.length; g++) {
      const rs = rows[g]!;
      const m = rs.length;
      for (let s = 0; s < m; s++) {
        const r = rs[s]!;
        let sum = 0;
        for (let j = 0; j < n; j++) sum += counts[j]! * r[j]!;
        totals[s] = sum;
      }
      // The group's own draw of its runs, or the draw every group shares.
      let sum = 0;
      if (m === 1) sum = totals[0]!;
      else if (pairSeeds) for (let s = 0; s < m; s++) sum += totals[shared[s]!]!;
      else for (let s = 0; s < m; s++) sum += totals[Math.floor(random() * m)]!;
      means[g] = sum / (m * n);
    }
    stats[b] = statistic(means);
  }
  stats.sort();
  const lo = stats[Math.floor(0.025 * resamples)]!;
  const hi = stats[Math.ceil(0.975 * resamples) - 1]!;
  const mean = stats.reduce((a, b) => a + b, 0) / resamples;
  const se = Math.sqrt(stats.reduce((a, x) => a + (x - mean) ** 2, 0) / (resamples - 1));
  const seeds = groups.map((g) => g.length);
  const seedsResampled = seeds.some((m) => m > 1);
  return { estimate, lo, hi, se, insideNoise: lo <= 0 && hi >= 0, problems: n, seeds, seedsResampled, seedsPaired: pairSeeds && seedsResampled && groups.length > 1, resamples };
}

/** Refuses a number of resamples a report may not rest on (fewer than MIN_RESAMPLES, or not a whole number). */
export function checkResamples(resamples: number): void {
  if (!(Number.isInteger(resamples) && resamples >= MIN_RESAMPLES)) throw new Error(`paired bootstrap: resamples must be an integer of at least ${MIN_RESAMPLES.toLocaleString('en-US')} (got ${resamples})`);
}

/** One run's result on each held-out problem of one validation: problem id → 1 right, 0 wrong. */
export type Correct = ReadonlyMap<string, number>;

/** Whether a validator's verdict counts as right: a code problem only when every test passes. */
export const isRight = (verdict: number): number => (verdict >= 1 ? 1 : 0);

/** The problems every run holds (in the first run's order), optionally only those in `within`. */
function commonIds(runs: readonly Correct[], within?: ReadonlySet<string>): string[] {
  const [first, ...rest] = runs;
  return [...first!.keys()].filter((id) => (!within || within.has(id)) && rest.every((r) => r.has(id)));
}

/**
 * Method A's mean correctness minus method B's, over their runs (seeds) on the problems every
 * run of both validated (only those in `within`, for one level); null when they share none.
 */
export function pairedDifference(a: readonly Correct[], b: readonly Correct[], within?: ReadonlySet<string>, o?: BootstrapOptions): Interval | null {
  if (!a.length || !b.length) return null;
  const ids = commonIds([...a, ...b], within);
  if (!ids.length) return null;
  const rows = (runs: readonly Correct[]) => runs.map((r) => ids.map((id) => r.get(id)!));
  return pairedBootstrap([{ sign: 1, runs: rows(a) }, { sign: -1, runs: rows(b) }], o);
}

/**
 * A method's gain from its first validation to its final one in the same mode: per run and
 * problem final − start (`start[s]` and `final[s]` the same run), on the problems all of them
 * share; null when they share none.
 */
export function pairedGain(start: readonly Correct[], final: readonly Correct[], within?: ReadonlySet<string>, o?: BootstrapOptions): Interval | null {
  if (start.length !== final.length) throw new Error(`paired gain: ${start.length} starts for ${final.length} finals`);
  if (!start.length) return null;
  const ids = commonIds([...start, ...final], within);
  if (!ids.length) return null;
  return pairedBootstrap([{ sign: 1, runs: final.map((f, s) => ids.map((id) => f.get(id)! - start[s]!.get(id)!)) }], o);
}

/** Whether a gap is clearly above 0 (its interval's low end): only then is a share of it given (gapShare). */
export const shareable = (gap: Interval | null | undefined): gap is Interval => !!gap && gap.lo > 0;

/**
 * The share of the gap between a baseline and a ceiling that a method closes, from their runs'
 * results: (method − baseline) / (ceiling − baseline), the three drawn as one paired bootstrap
 * (the same problems for all, each one's seeds on their own); null when they share no problem.
 * A ratio divides by the gap's own noise: give it only where the gap is clearly above 0 (shareable; a
 * resample whose gap is 0 gives an infinite or undefined share, sorted to the interval's ends).
 */
export function gapShare(method: readonly Correct[], baseline: readonly Correct[], ceiling: readonly Correct[], within?: ReadonlySet<string>, o?: BootstrapOptions): Interval | null {
  if (!method.length || !baseline.length || !ceiling.length) return null;
  const ids = commonIds([...method, ...baseline, ...ceiling], within);
  if (!ids.length) return null;
  const rows = (runs: readonly Correct[]) => runs.map((r) => ids.map((id) => r.get(id)!));
  return bootstrapOf([rows(method), rows(baseline), rows(ceiling)], ([m, b, c]) => (m! - b!) / (c! - b!), o);
}
