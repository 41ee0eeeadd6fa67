/**
 * A comparison of methods over seeds, from the runs' records: per method the start and the
 * final validation (the method's own mode and the Solver alone, overall and per level) as
 * mean ± standard error over seeds, the Critic's AUC and the bank's growth, curves of the mean
 * with its band; and, from the per-problem outcomes, each method's gain from its start and its
 * difference from a baseline with a 95% interval of a paired bootstrap over problems and seeds
 * (pairedStats.ts), overall, per level and pooled over the levels the seeds do not show; with
 * a ceiling among the methods, the share of the gap between the baseline and it that each
 * method closes; and the levels of the problems each method's bank admitted. The final
 * validation, not the best: picking the best of several on the held-out split would report the
 * noise's maximum. Pure data: the CLI and the lab draw it.
 */
import type { Problem } from '../data/problem';
import { mean, sampleStd } from '../util/stats';
import type { BankEvent } from './bank';
import { gapShare, isRight, pairedDifference, pairedGain, RESAMPLES, type BootstrapOptions, type Correct, type Interval } from './pairedStats';
import type { MetricsRecord } from './run';
import { compareLevels, comparePractice, problemLevel, runPractice, UNREADABLE, type PracticeOrigin } from './practice';
import { ownAccuracy, type ValidationOutcomes, type ValidationResult } from './validation';

export interface ComparedRun {
  method: string;
  seed: number;
  records: readonly MetricsRecord[];
  /** Its outcomes.jsonl: every held-out problem's result at every validation (absent in records from before they were kept). */
  outcomes?: readonly ValidationOutcomes[];
  /** Its bank-events.jsonl: what the bank admitted and drew (absent: not read). */
  bankEvents?: readonly BankEvent[];
  /** Its seed problems, for the levels of what the Solver practised (absent: not read). */
  seeds?: readonly Problem[];
}

/**
 * The comparison's ceiling: RLVR on seeds of every level the held-out split has, where the
 * method's own seeds show only the easy ones; a Challenger that wrote only right problems of
 * the missing levels could give the Solver no more. `npm run compare` runs it on
 * data/seeds/curriculum-all-levels-1000.jsonl.
 */
export const CEILING = {
  name: 'rlvr-ceiling',
  method: 'rlvr',
  label: 'ceiling: RLVR on seeds of all five levels (what a perfect Challenger could give)',
} as const;

/** Each level once and in order, then the pooled key of the levels beyond the seeds (if any): the columns of a per-level table. */
export function levelColumns(keys: Iterable<string>, beyond: string | null | undefined): string[] {
  return [...[...new Set(keys)].filter((l) => l !== beyond).sort(compareLevels), ...(beyond ? [beyond] : [])];
}

/** Levels as a span where they run on ("3-5"), else listed ("2,4"). */
export function levelSpan(levels: readonly string[]): string {
  const ns = levels.map(Number);
  const run = ns.length > 1 && ns.every((x, i) => Number.isInteger(x) && (i === 0 || x === ns[i - 1]! + 1));
  return run ? `${levels[0]}-${levels.at(-1)}` : levels.join(',');
}

/** Mean and standard error of the mean (sample standard deviation / √n; null for one run). */
export interface MeanSe {
  mean: number;
  se: number | null;
  n: number;
}

export function meanSe(xs: readonly number[]): MeanSe {
  const n = xs.length;
  if (!n) return { mean: NaN, se: null, n: 0 };
  return { mean: mean(xs), se: n < 2 ? null : sampleStd(xs) / Math.sqrt(n), n };
}

/** A validation and the number of loop steps made before it. */
interface Point {
  after: number;
  v: ValidationResult;
}

function validations(records: readonly MetricsRecord[]): Point[] {
  return records.flatMap((r) => (r.kind === 'validation' ? [{ after: r.step, v: r.validation }] : r.validation ? [{ after: r.step + 1, v: r.validation }] : []));
}

/** A run's correctness on each held-out problem at one validation: the method's own mode and the Solver alone. */
export interface ModeOutcomes {
  own: Correct;
  solver: Correct;
}

/** What a run gives the paired figures: its first and final validation's outcomes, and each problem's level. */
export interface RunOutcomes {
  start: ModeOutcomes;
  final: ModeOutcomes;
  levels: ReadonlyMap<string, string>;
  /** The run's seed, where known: runs of two methods with one seed and one start pair (seedPairing). */
  seed?: number;
}

/**
 * The methods' runs lined up seed by seed, and whether their seeds pair: every method has the
 * same seeds, and each seed's runs share their start (the Solver alone right on the same
 * problems at the first validation: one checkpoint, one step 0). Unpaired, the runs as given.
 */
export function seedPairing(methods: readonly (readonly RunOutcomes[])[]): { runs: RunOutcomes[][]; paired: boolean } {
  const bySeed = methods.map((rs) => [...rs].sort((a, b) => (a.seed ?? NaN) - (b.seed ?? NaN)));
  const [first] = bySeed;
  const sameStart = (a: Correct, b: Correct) => a.size === b.size && [...a].every(([id, v]) => b.get(id) === v);
  const paired =
    !!first?.length &&
    first.every((r) => r.seed !== undefined) &&
    bySeed.every((rs) => rs.length === first.length && rs.every((r, k) => r.seed === first[k]!.seed && sameStart(r.start.solver, first[k]!.start.solver)));
  return { runs: paired ? bySeed : methods.map((rs) => [...rs]), paired };
}

/**
 * A run's outcomes at the validations made after `start` and `final` steps; null where either
 * has no Solver-alone line (records from before outcomes were kept). The own mode is the
 * planned one where the method has it, as ownAccuracy reads the tallies.
 */
export function runOutcomes(lines: readonly ValidationOutcomes[], start: number, final: number): RunOutcomes | null {
  const levels = new Map<string, string>();
  const at = (step: number): ModeOutcomes | null => {
    // The last line of a step and mode: a run resumed before its checkpoint may have validated that step twice.
    const line = (mode: ValidationOutcomes['mode']) => lines.filter((l) => l.step === step && l.mode === mode).at(-1);
    const correct = (l: ValidationOutcomes) => new Map(l.problems.map((p) => [p.id, isRight(p.verdict)]));
    const solver = line('solver');
    if (!solver) return null;
    const planned = line('planned');
    for (const p of [...solver.problems, ...(planned?.problems ?? [])]) if (p.level !== undefined) levels.set(p.id, String(p.level));
    return { own: correct(planned ?? solver), solver: correct(solver) };
  };
  const s = at(start);
  const f = at(final);
  return s && f ? { start: s, final: f, levels } : null;
}

/** A method's gain from its start in one mode, and its difference from the baseline's final in the same mode. */
export interface PairedFigures {
  gain: Interval | null;
  /** Null for the baseline itself, or where the baseline's runs have no outcomes. */
  vsBaseline: Interval | null;
}

/** The paired figures of a method (pairedStats.ts: 95% percentile intervals over problems and seeds). */
export interface PairedSummary {
  own: PairedFigures;
  solver: PairedFigures;
  /** Per level, in the method's own mode. */
  perLevel: Record<string, PairedFigures>;
  /** Per level, the Solver alone; null where not asked for (a method without plans: its own mode is the Solver alone). */
  perLevelSolver: Record<string, PairedFigures> | null;
}

/** Each level's held-out problems (ids), and the levels pooled under `pooled`'s key, from the runs' outcomes. */
function levelScopes(runs: readonly RunOutcomes[], pooled: Pooled | null): Map<string, Set<string>> {
  const byLevel = new Map<string, Set<string>>();
  for (const r of runs) for (const [id, level] of r.levels) byLevel.set(level, (byLevel.get(level) ?? new Set()).add(id));
  const scopes = new Map([...byLevel.keys()].sort().map((level) => [level, byLevel.get(level)!]));
  const inPool = pooled ? [...byLevel.keys()].filter((l) => pooled.levels.includes(l)) : [];
  if (pooled && inPool.length) scopes.set(pooled.key, new Set(inPool.flatMap((l) => [...byLevel.get(l)!])));
  return scopes;
}

/** Held-out levels reported together as well as one by one: those the seeds do not show. */
export interface Pooled {
  key: string;
  levels: readonly string[];
}

/**
 * The held-out levels the seeds do not show, pooled, where the seeds show some of the held-out
 * levels and not all, and more than one lies beyond them (one level beyond is its own row
 * already); null otherwise.
 */
export function beyondSeeds(held: readonly string[], seedLevels: readonly string[] | undefined): Pooled | null {
  const beyond = seedLevels?.length ? held.filter((l) => !seedLevels.includes(l)) : [];
  return beyond.length > 1 && beyond.length < held.length ? { key: levelSpan(beyond), levels: beyond } : null;
}

/**
 * A method's paired figures from its runs' outcomes, against the baseline's runs (null: none to
 * compare with); the Solver alone per level too with `solverPerLevel` (two bootstraps a level,
 * only worth it where the own mode differs).
 */
export function pairedSummary(mine: readonly RunOutcomes[], base: readonly RunOutcomes[] | null, pooled: Pooled | null = null, solverPerLevel = false, o: BootstrapOptions = {}): PairedSummary {
  const {
    runs: [a, b],
    paired,
  } = seedPairing(base ? [mine, base] : [mine]);
  const mode = (m: keyof ModeOutcomes, within?: ReadonlySet<string>): PairedFigures => ({
    gain: pairedGain(mine.map((r) => r.start[m]), mine.map((r) => r.final[m]), within, o),
    vsBaseline: base ? pairedDifference(a!.map((r) => r.final[m]), b!.map((r) => r.final[m]), within, { ...o, pairSeeds: paired }) : null,
  });
  const scopes = [...levelScopes(mine, pooled)];
  return {
    own: mode('own'),
    solver: mode('solver'),
    perLevel: Object.fromEntries(scopes.map(([level, ids]) => [level, mode('own', ids)])),
    perLevelSolver: solverPerLevel ? Object.fromEntries(scopes.map(([level, ids]) => [level, mode('solver', ids)])) : null,
  };
}

/**
 * The share of the gap between the baseline and the ceiling that a method closes, in its own
 * mode, overall and per level (and pooled): null where the ceiling is not above the baseline
 * beyond the noise (the share would divide by noise).
 */
export interface GapSummary {
  own: Interval | null;
  perLevel: Record<string, Interval | null>;
}

function gapSummary(mine: readonly RunOutcomes[], base: readonly RunOutcomes[], ceiling: readonly RunOutcomes[], pooled: Pooled | null, o: BootstrapOptions = {}): GapSummary {
  const finals = (runs: readonly RunOutcomes[]) => runs.map((r) => r.final.own);
  const {
    runs: [m, b, c],
    paired,
  } = seedPairing([mine, base, ceiling]);
  const pairs = seedPairing([ceiling, base]);
  const share = (within?: ReadonlySet<string>) => {
    const gap = pairedDifference(finals(pairs.runs[0]!), finals(pairs.runs[1]!), within, { ...o, pairSeeds: pairs.paired });
    return gap && gap.lo > 0 ? gapShare(finals(m!), finals(b!), finals(c!), within, { ...o, pairSeeds: paired }) : null;
  };
  return { own: share(), perLevel: Object.fromEntries([...levelScopes(mine, pooled)].map(([level, ids]) => [level, share(ids)])) };
}

export interface MethodSummary {
  method: string;
  seeds: number[];
  /** Loop steps of the shortest run: what every figure below has in common. */
  steps: number;
  start: { own: MeanSe; solver: MeanSe };
  final: {
    own: MeanSe;
    solver: MeanSe;
    /** Per level, in the method's own mode. */
    perLevel: Record<string, MeanSe>;
    /** Per level, the Solver alone. */
    perLevelSolver: Record<string, MeanSe>;
    problemAuc: MeanSe | null;
    planAuc: MeanSe | null;
    planShown: MeanSe | null;
  };
  /** Problems admitted to the bank by the end. */
  admitted: MeanSe;
  /** Of the plans the environment could read over each run's last PLANS_WINDOW steps, the share computing the answer (null: no such plans, or records before the metric). */
  plansRight: MeanSe | null;
  /**
   * The Solver's training rollouts a step on seeds and on generated problems, each run's mean
   * over its steps, then over seeds: how much practice on the seeds a method gives up for its
   * generated problems (null: records from before they were counted).
   */
  solverRollouts: { seeds: MeanSe; generated: MeanSe } | null;
  /** At each validation every run made: the own-mode accuracy, and the bank size. */
  curve: { after: number; own: MeanSe; solver: MeanSe }[];
  bank: { after: number; size: MeanSe }[];
  /** The baseline the paired differences are taken from (null: none given, or not among the methods). */
  baseline: string | null;
  /** The ceiling among the methods (CEILING), or null. */
  ceiling: string | null;
  /** The key under which perLevel pools the held-out levels the seeds do not show ("3-5"), or null. */
  beyondSeeds: string | null;
  /** From the per-problem outcomes; null where a run of the method (or of the baseline, for its differences) has none. */
  paired: PairedSummary | null;
  /** Where this method is between the baseline and the ceiling; null for those two, without a ceiling, or without outcomes. */
  gap: GapSummary | null;
  /** Problems the bank admitted a run, per level (problemLevel), mean ± SE over the runs whose bank events were read; null: none were. */
  admittedLevels: Record<string, MeanSe> | null;
  /** What the Solver practised, over the runs whose bank events and seeds were read; null: none were. */
  practice: PracticeRow[] | null;
}

/** The bank's draws of one origin and level in a method's runs. */
export interface PracticeRow {
  origin: PracticeOrigin;
  level: string;
  /** Draws a run, mean ± SE over the runs (0 in a run that drew none there). */
  draws: MeanSe;
  /** Over all the runs' draws there: the mean pass rate, and the shares of draws none of whose samples, or all of them, passed. */
  passRate: number;
  noneRight: number;
  allRight: number;
}

export interface SummaryOptions {
  /** The method that is the ceiling (CEILING.name): each other's share of the gap from the baseline to it. */
  ceiling?: string;
  /** The levels the comparison's seeds show: the held-out levels beyond them are also reported pooled. */
  seedLevels?: readonly string[];
  /** Bootstrap resamples of every interval (default RESAMPLES, at least MIN_RESAMPLES). */
  resamples?: number;
}

const defined = <T>(xs: readonly (T | null | undefined)[]): T[] => xs.filter((x): x is T => x !== null && x !== undefined);

/** A method's runs: each one's validations, the loop steps every run made (the shortest run's), and the last validation each made by then. */
function lastValidations(mine: readonly ComparedRun[]): { points: Point[][]; steps: number; finalPoints: (Point | undefined)[] } {
  const points = mine.map((r) => validations(r.records));
  const steps = Math.min(...mine.map((r) => r.records.filter((x) => x.kind === 'step').length));
  return { points, steps, finalPoints: points.map((ps) => ps.filter((p) => p.after <= steps).at(-1)) };
}

/**
 * A method's runs' outcomes at their first validation and their final one (at the shortest
 * run's end), each with its seed; null where a run has none (records from before they were kept).
 */
export function methodOutcomes(mine: readonly ComparedRun[]): RunOutcomes[] | null {
  const { points, finalPoints } = lastValidations(mine);
  const outcomes = mine.map((r, i) => {
    const first = points[i]![0];
    const last = finalPoints[i];
    const o = r.outcomes && first && last ? runOutcomes(r.outcomes, first.after, last.after) : null;
    return o && { ...o, seed: r.seed };
  });
  return outcomes.every((o) => o !== null) ? (outcomes as RunOutcomes[]) : null;
}

/** Steps at the end of a run over which the share of right plans is averaged: one step's few plans are noise. */
export const PLANS_WINDOW = 10;

/**
 * Each method's summary; with a `baseline` among the methods, every other method's paired
 * differences from it (each method at its own final validation).
 */
export function summarize(runs: readonly ComparedRun[], baseline?: string, options: SummaryOptions = {}): MethodSummary[] {
  const methods = [...new Set(runs.map((r) => r.method))];
  const base = baseline !== undefined && methods.includes(baseline) ? baseline : null;
  const ceiling = options.ceiling !== undefined && options.ceiling !== base && methods.includes(options.ceiling) ? options.ceiling : null;
  const held = [...new Set(runs.flatMap((r) => validations(r.records).flatMap((p) => Object.keys((p.v.planned ?? p.v).perLevel))))].sort();
  const pooled = beyondSeeds(held, options.seedLevels);
  const bootstrap: BootstrapOptions = options.resamples === undefined ? {} : { resamples: options.resamples };
  /** A validation's tallies per level: the own mode's, or the Solver alone's. */
  type Tallies = (v: ValidationResult) => ValidationResult['perLevel'];
  const ownTallies: Tallies = (v) => (v.planned ?? v).perLevel;
  const solverTallies: Tallies = (v) => v.perLevel;
  /** A validation's accuracy pooled over the levels beyond the seeds, where it has any. */
  const pooledAccuracy = (v: ValidationResult, tallied: Tallies) => {
    const tallies = pooled ? defined(pooled.levels.map((l) => tallied(v)[l])) : [];
    const total = tallies.reduce((a, t) => a + t.total, 0);
    return total ? tallies.reduce((a, t) => a + t.correct, 0) / total : undefined;
  };
  const summaries = methods.map((method) => {
    const mine = runs.filter((r) => r.method === method);
    const { points, steps, finalPoints } = lastValidations(mine);
    const finals = defined(finalPoints.map((p) => p?.v));
    const common = [...new Set(points.flatMap((ps) => ps.map((p) => p.after)))].filter((a) => a <= steps && points.every((ps) => ps.some((p) => p.after === a))).sort((a, b) => a - b);
    const at = (a: number) => points.map((ps) => ps.find((p) => p.after === a)!.v);
    const levels = [...new Set(finals.flatMap((v) => Object.keys((v.planned ?? v).perLevel)))].sort();
    /** Each level's final accuracy, then the levels beyond the seeds pooled, as mean ± SE over the runs. */
    const levelMeans = (tallied: Tallies): Record<string, MeanSe> =>
      Object.fromEntries([
        ...levels.map((l) => [l, meanSe(defined(finals.map((v) => tallied(v)[l]?.accuracy)))]),
        ...(pooled ? [[pooled.key, meanSe(defined(finals.map((v) => pooledAccuracy(v, tallied))))]] : []),
      ]);
    const optional = (xs: (number | null | undefined)[]) => {
      const d = defined(xs);
      return d.length ? meanSe(d) : null;
    };
    const stepsRecords = mine.map((r) => r.records.filter((x): x is Extract<MetricsRecord, { kind: 'step' }> => x.kind === 'step'));
    const rollouts = defined(stepsRecords.map((rs) => {
      const counted = defined(rs.filter((x) => x.step < steps).map((x) => x.solverRollouts));
      return counted.length ? { seeds: mean(counted.map((c) => c.seeds)), generated: mean(counted.map((c) => c.generated)) } : null;
    }));
    const bankSteps = [...new Set(stepsRecords.flatMap((rs) => rs.map((x) => x.step + 1)))].filter((a) => a <= steps).sort((a, b) => a - b);
    return {
      method,
      seeds: mine.map((r) => r.seed),
      steps,
      start: { own: meanSe(defined(points.map((ps) => ps[0]?.v)).map(ownAccuracy)), solver: meanSe(defined(points.map((ps) => ps[0]?.v.accuracy))) },
      final: {
        own: meanSe(finals.map(ownAccuracy)),
        solver: meanSe(finals.map((v) => v.accuracy)),
        perLevel: levelMeans(ownTallies),
        perLevelSolver: levelMeans(solverTallies),
        problemAuc: optional(finals.map((v) => v.critic?.problemAuc)),
        planAuc: optional(finals.map((v) => v.critic?.planAuc)),
        planShown: optional(finals.map((v) => v.planned?.planShown)),
      },
      admitted: meanSe(stepsRecords.map((rs) => rs.filter((x) => x.step < steps).at(-1)?.bank.admitted ?? 0)),
      plansRight: optional(stepsRecords.map((rs) => {
        const window = defined(rs.filter((x) => x.step < steps && x.step >= steps - PLANS_WINDOW).map((x) => x.plansRight));
        return window.length ? mean(window) : null;
      })),
      solverRollouts: rollouts.length ? { seeds: meanSe(rollouts.map((r) => r.seeds)), generated: meanSe(rollouts.map((r) => r.generated)) } : null,
      curve: common.map((after) => ({ after, own: meanSe(at(after).map(ownAccuracy)), solver: meanSe(at(after).map((v) => v.accuracy)) })),
      bank: bankSteps.map((after) => ({ after, size: meanSe(defined(stepsRecords.map((rs) => rs.find((x) => x.step + 1 === after)?.bank.size))) })),
      baseline: base,
      ceiling,
      beyondSeeds: pooled?.key ?? null,
      admittedCounts: admittedCounts(mine, steps),
      practice: practiceRows(mine, steps),
      outcomes: methodOutcomes(mine),
    };
  });
  const outcomesOf = (m: string | null) => summaries.find((s) => s.method === m)?.outcomes ?? null;
  const baseOutcomes = outcomesOf(base);
  const ceilingOutcomes = outcomesOf(ceiling);
  // Every level any method's bank admitted, in every method's figures (0 where it admitted none).
  const admitted = [...new Set(summaries.flatMap((s) => (s.admittedCounts ?? []).flatMap((c) => [...c.keys()])))].sort(compareLevels);
  return summaries.map(({ outcomes, admittedCounts, ...s }) => ({
    ...s,
    admittedLevels: admittedCounts && Object.fromEntries(admitted.map((l) => [l, meanSe(admittedCounts.map((c) => c.get(l) ?? 0))])),
    paired: outcomes && pairedSummary(outcomes, s.method === base ? null : baseOutcomes, pooled, s.final.planShown !== null, bootstrap),
    gap: outcomes && baseOutcomes && ceilingOutcomes && s.method !== base && s.method !== ceiling ? gapSummary(outcomes, baseOutcomes, ceilingOutcomes, pooled, bootstrap) : null,
  }));
}

/** Problems each run's bank admitted in its first `steps` steps, per level, for the runs whose events were read (null: none were). */
function admittedCounts(runs: readonly ComparedRun[], steps: number): Map<string, number>[] | null {
  const counts = defined(runs.map((r) => r.bankEvents)).map((events) => {
    const c = new Map<string, number>();
    for (const e of events) {
      if (e.type !== 'admit' || e.entry.provenance.step >= steps) continue;
      const level = problemLevel(e.entry.problem);
      c.set(level, (c.get(level) ?? 0) + 1);
    }
    return c;
  });
  return counts.length ? counts : null;
}

/** The bank's draws in each run's first `steps` steps by origin and level, for the runs whose events and seeds were read (null: none were). */
function practiceRows(runs: readonly ComparedRun[], steps: number): PracticeRow[] | null {
  const read = runs.flatMap((r) => (r.bankEvents && r.seeds ? [runPractice(r.bankEvents, r.seeds, steps)] : []));
  if (!read.length) return null;
  const keys = [...new Map(read.flat().map((c) => [`${c.origin} ${c.level}`, { origin: c.origin, level: c.level }])).values()].sort(comparePractice);
  return keys.map(({ origin, level }) => {
    const cells = read.map((cs) => cs.find((c) => c.origin === origin && c.level === level));
    const rates = cells.flatMap((c) => c?.rates ?? []);
    const share = (f: (x: number) => boolean) => rates.filter(f).length / rates.length;
    return { origin, level, draws: meanSe(cells.map((c) => c?.rates.length ?? 0)), passRate: mean(rates), noneRight: share((x) => x <= 0), allRight: share((x) => x >= 1) };
  });
}

const pct = (m: MeanSe | null | undefined) => (!m || !m.n ? '-' : `${(100 * m.mean).toFixed(1)}${m.se === null ? '' : ` ± ${(100 * m.se).toFixed(1)}`}`);
const num = (m: MeanSe | null | undefined, digits = 2) => (!m || !m.n ? '-' : `${m.mean.toFixed(digits)}${m.se === null ? '' : ` ± ${m.se.toFixed(digits)}`}`);
/** A share in percent. */
const pct1 = (x: number) => (100 * x).toFixed(1);
/** A share as signed points. */
export const signedPoints = (x: number): string => {
  const t = (100 * x).toFixed(1);
  return t === '-0.0' ? '+0.0' : t.startsWith('-') ? t : `+${t}`;
};

/** A paired figure in points: the estimate, its 95% interval, † where only the problems were resampled (one seed a side), and "inside the noise" where the interval covers 0. */
export function intervalText(i: Interval): string {
  return `${signedPoints(i.estimate)} [${signedPoints(i.lo)}, ${signedPoints(i.hi)}]${i.seedsResampled ? '' : '†'}${i.insideNoise ? ' inside the noise' : ''}`;
}

/** A share of a gap in percent: the estimate, its 95% interval, † and "inside the noise" as intervalText. */
export function shareText(i: Interval): string {
  const p = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)}%` : x > 0 ? '+∞' : '−∞');
  return `${p(i.estimate)} [${p(i.lo)}, ${p(i.hi)}]${i.seedsResampled ? '' : '†'}${i.insideNoise ? ' inside the noise' : ''}`;
}

/** How the intervals' seeds were drawn, in words. */
function seedDraws(intervals: readonly Interval[]): string {
  const between = intervals.filter((i) => i.seeds.length > 1 && i.seedsResampled);
  const paired = between.filter((i) => i.seedsPaired).length;
  if (!between.length || !paired) return "each side's seeds drawn on their own";
  const how = 'seeds paired (one draw for both sides) where the runs of one seed share their step 0, the Solver alone right on the same problems';
  return paired === between.length ? how : `${how}, each side's seeds drawn on their own elsewhere`;
}

/** What a comparison's table says of its figures, under the table. */
function notes(summaries: readonly MethodSummary[]): string[] {
  const intervals = defined(summaries.flatMap((s) => [
    ...(s.paired ? [s.paired.own, s.paired.solver, ...Object.values(s.paired.perLevel), ...Object.values(s.paired.perLevelSolver ?? {})].flatMap((f) => [f.gain, f.vsBaseline]) : []),
    ...(s.gap ? [s.gap.own, ...Object.values(s.gap.perLevel)] : []),
  ]));
  const unpaired = summaries.filter((s) => !s.paired).map((s) => s.method);
  const ceiling = summaries.find((s) => s.method === s.ceiling);
  const beyond = summaries.find((s) => s.beyondSeeds)?.beyondSeeds;
  return [
    ...(ceiling ? [`${ceiling.method}: ${CEILING.label}.`] : []),
    'Percent. Start and final: mean ± standard error over seeds. Gain: final − start of the same runs; vs the baseline: the difference of the finals; both in points.',
    ...(beyond ? [`Levels ${beyond}: the held-out levels no seed shows, pooled.`] : []),
    ...(intervals.length
      ? [`In brackets the 95% interval of a paired bootstrap over problems and seeds (${(intervals[0]?.resamples ?? RESAMPLES).toLocaleString('en-US')} resamples, the same problem draw for both sides; ${seedDraws(intervals)}); "inside the noise" where it covers 0.`]
      : []),
    ...(intervals.some((i) => !i.seedsResampled) ? ['† one seed a side: the interval covers the sampling of the problems only, not the spread between seeds.'] : []),
    ...(unpaired.length ? [`${unpaired.join(', ')}: no per-problem outcomes in the records (kept before they were), so no paired interval: gain and difference are plain differences of means.`] : []),
    ...(summaries.some((s) => s.admittedLevels)
      ? [`Admitted: problems the bank took in a run (mean ± standard error over seeds), by the level of the curriculum style its statement is in; ${UNREADABLE}: a statement no curriculum style reads.`]
      : []),
    ...(summaries.some((s) => s.practice)
      ? ['Practised: the problems the bank drew for the Solver, by origin and level as above; draws a run (mean ± standard error over seeds); over all the runs\' draws, the mean pass rate (the share of the Solver\'s samples the validators accepted; a validator-free method\'s: its Judge\'s mean score), and the draws whose samples none or all passed, which hold no contrast within the problem.']
      : []),
  ];
}

/** Where each method stands between the baseline and the ceiling: the gap itself, then each method's share of it, overall and per level. */
function gapTable(summaries: readonly MethodSummary[], levels: readonly string[], levelName: (l: string) => string): string[] {
  const ceiling = summaries.find((s) => s.method === s.ceiling);
  const base = summaries.find((s) => s.method === s.baseline);
  const placed = summaries.filter((s) => s.gap);
  if (!ceiling?.paired || !base || !placed.length) return [];
  const gapCell = (i: Interval | null | undefined) => (i ? intervalText(i) : '-');
  const shareCell = (i: Interval | null | undefined) => (i ? shareText(i) : '-');
  const rows = [
    [`${ceiling.method} − ${base.method} (points)`, gapCell(ceiling.paired.own.vsBaseline), ...levels.map((l) => gapCell(ceiling.paired!.perLevel[l]?.vsBaseline))],
    ...placed.map((s) => [`${s.method}: share closed`, shareCell(s.gap!.own), ...levels.map((l) => shareCell(s.gap!.perLevel[l]))]),
  ];
  const beyond = ceiling.beyondSeeds;
  const headline = placed.flatMap((s) => {
    const at = beyond ? s.gap!.perLevel[beyond] : s.gap!.own;
    return at ? [`${s.method} closes ${shareText({ ...at, insideNoise: false })} of the gap between ${base.method} and the ceiling${beyond ? ` on levels ${beyond} (beyond the seeds)` : ''}${at.insideNoise ? ', inside the noise' : ''}.`] : [];
  });
  return [
    `Between ${base.method} and the ceiling (${CEILING.label}), final, own mode:`,
    '',
    markdown(['', 'all levels', ...levels.map(levelName)], rows),
    '',
    `Share closed: (method − ${base.method}) / (${ceiling.method} − ${base.method}) of the finals, the three drawn as one paired bootstrap; "-" where ${ceiling.method} is not above ${base.method} beyond the noise there (the share would divide by noise).${headline.length ? ` ${headline.join(' ')}` : ''}`,
    '',
  ];
}

const markdown = (head: string[], rows: string[][]) =>
  [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '--:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

/**
 * The comparison as Markdown: accuracy (start, final, gain, difference from the baseline, in
 * the own mode and the Solver alone), the same per level in the own mode, the methods' other
 * figures, and notes on what the numbers are.
 */
export function compareTable(summaries: readonly MethodSummary[]): string {
  const base = summaries.find((s) => s.method === s.baseline);
  const vsHead = (mode: string) => (base ? [`vs ${base.method} (${mode})`] : []);
  const gain = (s: MethodSummary, mode: 'own' | 'solver') => {
    const i = s.paired?.[mode].gain;
    return i ? intervalText(i) : s.paired ? '-' : signedPoints(s.final[mode].mean - s.start[mode].mean);
  };
  const pairedLevels = (s: MethodSummary, mode: 'own' | 'solver') => (mode === 'own' ? s.paired?.perLevel : s.paired?.perLevelSolver);
  const finalLevels = (s: MethodSummary, mode: 'own' | 'solver') => (mode === 'own' ? s.final.perLevel : s.final.perLevelSolver);
  const vs = (s: MethodSummary, mode: 'own' | 'solver', level?: string) => {
    if (!base) return [];
    if (s === base) return ['-'];
    const i = level === undefined ? s.paired?.[mode].vsBaseline : pairedLevels(s, mode)?.[level]?.vsBaseline;
    if (i) return [intervalText(i)];
    const mine = level === undefined ? s.final[mode] : finalLevels(s, mode)[level];
    const theirs = level === undefined ? base.final[mode] : finalLevels(base, mode)[level];
    return [mine?.n && theirs?.n ? signedPoints(mine.mean - theirs.mean) : '-'];
  };
  const accuracy = markdown(
    ['method', 'seeds', 'problems', 'start (own mode)', 'final (own mode)', 'gain (own mode)', ...vsHead('own mode'), 'start (Solver alone)', 'final (Solver alone)', 'gain (Solver alone)', ...vsHead('Solver alone')],
    summaries.map((s) => [
      s.method, String(s.seeds.length), String(s.paired?.own.gain?.problems ?? '-'),
      pct(s.start.own), pct(s.final.own), gain(s, 'own'), ...vs(s, 'own'),
      pct(s.start.solver), pct(s.final.solver), gain(s, 'solver'), ...vs(s, 'solver'),
    ]),
  );
  const beyond = summaries.find((s) => s.beyondSeeds)?.beyondSeeds;
  const levels = levelColumns(summaries.flatMap((s) => Object.keys(s.final.perLevel)), beyond);
  const levelName = (l: string) => (l === beyond ? `${l} (beyond the seeds)` : l);
  const perLevel = (mode: 'own' | 'solver', shown: readonly MethodSummary[]) => {
    const name = mode === 'own' ? 'own mode' : 'Solver alone';
    return markdown(
      ['method', 'level', 'problems', `final (${name})`, `gain (${name})`, ...vsHead(name)],
      shown.flatMap((s) =>
        levels.map((l) => {
          const f = pairedLevels(s, mode)?.[l];
          return [s.method, levelName(l), String(f?.gain?.problems ?? '-'), pct(finalLevels(s, mode)[l]), f?.gain ? intervalText(f.gain) : '-', ...vs(s, mode, l)];
        }),
      ),
    );
  };
  // Where a method's own mode is not the Solver alone (it has plans), its Solver alone per level too, against the baseline's.
  const planned = summaries.filter((s) => s.final.planShown !== null);
  const admittedLabels = [...new Set(summaries.flatMap((s) => Object.keys(s.admittedLevels ?? {})))];
  const admitted = summaries.some((s) => s.admittedLevels)
    ? markdown(
        ['method', 'admitted', ...admittedLabels.map((l) => (l === UNREADABLE ? l : `level ${l}`))],
        summaries.map((s) => [s.method, num(s.admitted, 1), ...admittedLabels.map((l) => num(s.admittedLevels?.[l], 1))]),
      )
    : null;
  const practised = summaries.some((s) => s.practice)
    ? markdown(
        ['method', 'drawn from', 'level', 'draws a run', 'pass rate', 'none right', 'all right'],
        summaries.flatMap((s) => (s.practice ?? []).map((p) => [s.method, p.origin === 'seed' ? 'seeds' : 'generated', p.level === UNREADABLE ? p.level : `level ${p.level}`, num(p.draws, 1), pct1(p.passRate), pct1(p.noneRight), pct1(p.allRight)])),
      )
    : null;
  const other = markdown(
    ['method', 'plans shown', `plans right (last ${PLANS_WINDOW} steps)`, 'Critic AUC problems', 'Critic AUC plans', 'admitted', 'Solver rollouts a step: seeds', 'generated'],
    summaries.map((s) => [s.method, pct(s.final.planShown), pct(s.plansRight), num(s.final.problemAuc), num(s.final.planAuc), num(s.admitted, 1), num(s.solverRollouts?.seeds, 1), num(s.solverRollouts?.generated, 1)]),
  );
  return [
    accuracy,
    '',
    ...(levels.length ? ['Per level:', '', perLevel('own', summaries), ''] : []),
    ...(levels.length && planned.length ? ['Per level, the Solver alone, for the methods whose own mode has plans:', '', perLevel('solver', planned), ''] : []),
    ...gapTable(summaries, levels, levelName),
    other,
    '',
    ...(admitted ? ['What the bank admitted, by level:', '', admitted, ''] : []),
    ...(practised ? ['What the Solver practised:', '', practised, ''] : []),
    notes(summaries).join('\n\n'),
  ].join('\n');
}

/** Words in lines of at most `width` characters (a longer word on its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

/** What the chart draws of a method: its held-out accuracy (own mode, and the Solver alone where recorded) and bank size over steps, mean ± SE over its seeds. */
export type ChartSeries = Pick<MethodSummary, 'method' | 'seeds' | 'bank'> & { curve: { after: number; own: MeanSe; solver?: MeanSe }[]; ceiling?: string | null };

/**
 * The panels as one SVG, two a row: the held-out accuracy in each method's own mode, the
 * Solver alone (when any run recorded it: it differs from the own mode where plans are
 * shown), and the bank size over steps; each method's mean with a band of ±1 standard error
 * over its seeds (the spread between seeds only: the sampling of the problems is in the
 * table's paired intervals, not here), titled so; the ceiling dashed, its legend saying what it
 * is; the legend in the grid's free cell, or below it. The viewBox lets a page scale it to its width.
 */
export function compareChart(summaries: readonly ChartSeries[]): string {
  const PW = 480;
  const PH = 320;
  const M = { left: 60, right: 16, top: 34, bottom: 44 };
  type Series = { colour: string; dashed: boolean; points: { x: number; y: MeanSe }[] };
  const panel = (x0: number, y0: number, title: string, yLabel: string, series: Series[], scale: number) => {
    const pts = series.flatMap((s) => s.points);
    const maxX = Math.max(1, ...pts.map((p) => p.x));
    const lo = (p: { y: MeanSe }) => scale * (p.y.mean - (p.y.se ?? 0));
    const hi = (p: { y: MeanSe }) => scale * (p.y.mean + (p.y.se ?? 0));
    let minY = Math.min(...pts.map(lo));
    let maxY = Math.max(...pts.map(hi));
    if (!pts.length) (minY = 0), (maxY = 1);
    if (maxY - minY < 1e-9) (minY -= 1), (maxY += 1);
    const pad = 0.08 * (maxY - minY);
    minY = Math.max(0, minY - pad);
    maxY += pad;
    const w = PW - M.left - M.right;
    const h = PH - M.top - M.bottom;
    const sx = (x: number) => (x0 + M.left + (x / maxX) * w).toFixed(1);
    const sy = (y: number) => (y0 + M.top + h - ((y - minY) / (maxY - minY)) * h).toFixed(1);
    const out = [`<text x="${x0 + M.left + w / 2}" y="${y0 + 20}" text-anchor="middle" font-weight="600">${title}</text>`];
    for (let i = 0; i <= 4; i++) {
      const y = minY + ((maxY - minY) * i) / 4;
      out.push(`<line x1="${sx(0)}" x2="${sx(maxX)}" y1="${sy(y)}" y2="${sy(y)}" stroke="#e5e7eb"/>`, `<text x="${+sx(0) - 6}" y="${+sy(y) + 4}" text-anchor="end">${y.toFixed(maxY - minY < 10 ? 1 : 0)}</text>`);
    }
    for (let i = 0; i <= 5; i++) out.push(`<text x="${sx(Math.round((maxX * i) / 5))}" y="${y0 + M.top + h + 18}" text-anchor="middle">${Math.round((maxX * i) / 5)}</text>`);
    out.push(
      `<text x="${x0 + M.left + w / 2}" y="${y0 + PH - 6}" text-anchor="middle">loop steps</text>`,
      `<text transform="translate(${x0 + 16} ${y0 + M.top + h / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text>`,
      `<rect x="${sx(0)}" y="${y0 + M.top}" width="${w}" height="${h}" fill="none" stroke="#9ca3af"/>`,
    );
    for (const s of series) {
      if (!s.points.length) continue;
      const band = [...s.points.map((p) => `${sx(p.x)},${sy(hi(p))}`), ...[...s.points].reverse().map((p) => `${sx(p.x)},${sy(lo(p))}`)].join(' ');
      out.push(`<polygon points="${band}" fill="${s.colour}" fill-opacity="0.15" stroke="none"/>`);
      out.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${s.points.map((p) => `${sx(p.x)},${sy(scale * p.y.mean)}`).join(' ')}"/>`);
      for (const p of s.points) out.push(`<circle cx="${sx(p.x)}" cy="${sy(scale * p.y.mean)}" r="3" fill="${s.colour}"/>`);
    }
    return out.join('\n');
  };
  const colour = (i: number) => COLOURS[i % COLOURS.length]!;
  // The ceiling is a reference, not a method: dashed, and its legend says what it is.
  const dashed = (s: ChartSeries) => s.ceiling === s.method;
  const accuracy = (pick: (c: ChartSeries['curve'][number]) => MeanSe | undefined) =>
    summaries.map((s, i) => ({ colour: colour(i), dashed: dashed(s), points: s.curve.flatMap((c) => (pick(c) ? [{ x: c.after, y: pick(c)! }] : [])) }));
  const solver = accuracy((c) => c.solver);
  const panels = [
    { title: 'Held-out accuracy, own inference mode (mean ± 1 SE over seeds)', yLabel: 'accuracy (%)', series: accuracy((c) => c.own), scale: 100 },
    ...(solver.some((s) => s.points.length) ? [{ title: 'Held-out accuracy, the Solver alone (mean ± 1 SE over seeds)', yLabel: 'accuracy (%)', series: solver, scale: 100 }] : []),
    { title: 'Problem bank (mean ± 1 SE over seeds)', yLabel: 'problems', series: summaries.map((s, i) => ({ colour: colour(i), dashed: dashed(s), points: s.bank.map((b) => ({ x: b.after, y: b.size })) })), scale: 1 },
  ];
  const cell = (k: number) => ({ x: (k % 2) * PW, y: Math.floor(k / 2) * PH });
  // Each entry's lines: the method and its seeds, then for the ceiling what it is, wrapped to a legend column.
  const labels = summaries.map((s) => [`${s.method}${s.seeds.length > 1 ? ` (${s.seeds.length} seeds)` : ''}`, ...(dashed(s) ? wrap(CEILING.label, 44) : [])]);
  const LINE = 15;
  // An odd panel count leaves the last row's right cell free: the legend goes there as a column.
  const free = panels.length % 2 === 1 ? cell(panels.length) : null;
  const rows = Math.ceil(panels.length / 2);
  const extra = (i: number) => labels[i]!.length - 1;
  const rowExtra = (r: number) => Math.max(0, ...labels.slice(3 * r, 3 * r + 3).map((l) => l.length - 1));
  const legendAt = (i: number) => {
    if (free) return { x: free.x + M.left, y: free.y + M.top + 10 + i * 22 + LINE * labels.slice(0, i).reduce((a, l) => a + l.length - 1, 0) };
    const row = Math.floor(i / 3);
    return { x: M.left + (i % 3) * 300, y: rows * PH + 12 + row * 20 + LINE * Array.from({ length: row }, (_, r) => rowExtra(r)).reduce((a, b) => a + b, 0) };
  };
  const legend = labels
    .map((lines, i) => {
      const at = legendAt(i);
      const mark = dashed(summaries[i]!)
        ? `<line x1="${at.x}" x2="${at.x + 14}" y1="${at.y - 4}" y2="${at.y - 4}" stroke="${colour(i)}" stroke-width="2" stroke-dasharray="4 2"/>`
        : `<rect x="${at.x}" y="${at.y - 6}" width="14" height="4" fill="${colour(i)}"/>`;
      const text = lines.map((line, k) => `<tspan x="${at.x + 20}" dy="${k ? LINE : 0}">${line}</tspan>`).join('');
      return `${mark}<text x="${at.x + 20}" y="${at.y}">${extra(i) ? text : lines[0]}</text>`;
    })
    .join('\n');
  const legendRows = Math.ceil(labels.length / 3);
  const height = free ? rows * PH : rows * PH + 12 + legendRows * 20 + LINE * Array.from({ length: legendRows }, (_, r) => rowExtra(r)).reduce((a, b) => a + b, 0);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * PW}" height="${height}" viewBox="0 0 ${2 * PW} ${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${panels.map((p, k) => panel(cell(k).x, cell(k).y, p.title, p.yLabel, p.series, p.scale)).join('\n')}
${legend}
</svg>
`;
}
