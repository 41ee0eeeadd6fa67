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
 * noise's maximum. Pure data: the CLI and the lab draw it (compareTable.ts as Markdown,
 * compareChart.ts as an SVG).
 */
import type { Problem } from '../data/problem';
import type { BankEvent } from '../sage/bank';
import { compareLevels, problemLevel } from '../sage/levels';
import type { MetricsRecord } from '../sage/run';
import { ownAccuracy, type ValidationOutcomes, type ValidationResult } from '../sage/validation';
import { mean, sampleStd } from '../util/stats';
import { gapShare, isRight, pairedDifference, pairedGain, shareable, type BootstrapOptions, type Correct, type Interval } from './pairedStats';
import { comparePractice, runPractice, type PracticeOrigin } from './practice';

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
  /** Where the own mode has plans: the problems whose plan the Critic let through to the Solver. */
  shown?: ReadonlySet<string>;
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
    return { own: correct(planned ?? solver), solver: correct(solver), ...(planned ? { shown: new Set(planned.problems.filter((p) => p.planShown).map((p) => p.id)) } : {}) };
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
  const mode = (m: 'own' | 'solver', within?: ReadonlySet<string>): PairedFigures => ({
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
 * What the plans do in a method's own mode (Planner, Critic gate, Solver) at the final
 * validation, each problem of each run against the Solver alone on the same problem in the same
 * run: where the Critic let the plan through, how often the Solver was right with it and without
 * it; where it refused, whether both modes agree (the Solver then answers without a plan, so
 * they should); and own mode − Solver alone with its paired interval, overall and on the levels
 * beyond the seeds. It says whether SAGE's plans help the Solver or lead it astray.
 */
export interface PlanEffect {
  /** Problem-runs (one held-out problem in one run) read, and those whose plan was shown. */
  problems: number;
  shown: number;
  /** Of those shown: right with the plan, and right with the Solver alone. */
  rightWithPlan: number;
  rightAlone: number;
  /** Of those refused: the problem-runs where both modes gave the same verdict. */
  refused: number;
  refusedAgree: number;
  /** Own mode − Solver alone, seeds paired (both from the same runs); over the levels beyond the seeds too (null: none pooled). */
  all: Interval | null;
  beyond: Interval | null;
}

/** The plans' effect from a method's runs' outcomes; null where a run's own mode has no plans. */
export function planEffect(runs: readonly RunOutcomes[], pooled: Pooled | null, o: BootstrapOptions = {}): PlanEffect | null {
  const finals = runs.map((r) => r.final);
  if (!finals.length || finals.some((f) => !f.shown)) return null;
  const e = { problems: 0, shown: 0, rightWithPlan: 0, rightAlone: 0, refused: 0, refusedAgree: 0 };
  for (const f of finals) {
    for (const [id, own] of f.own) {
      const alone = f.solver.get(id);
      if (alone === undefined) continue;
      e.problems++;
      if (f.shown!.has(id)) {
        e.shown++;
        e.rightWithPlan += own;
        e.rightAlone += alone;
      } else {
        e.refused++;
        if (own === alone) e.refusedAgree++;
      }
    }
  }
  const difference = (within?: ReadonlySet<string>) => pairedDifference(finals.map((f) => f.own), finals.map((f) => f.solver), within, { ...o, pairSeeds: true });
  const beyond = pooled ? levelScopes(runs, pooled).get(pooled.key) : undefined;
  return { ...e, all: difference(), beyond: beyond ? difference(beyond) : null };
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
    return shareable(gap) ? gapShare(finals(m!), finals(b!), finals(c!), within, { ...o, pairSeeds: paired }) : null;
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
  /**
   * The share of the Solver's sample groups a step whose rewards were all alike, so that the
   * update has no contrast in them (a Judge that rates every answer alike, seeds it always gets
   * right): each run's mean over its steps, then over seeds (null: records from before it was
   * counted).
   */
  solverFlat: MeanSe | null;
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
  /** What the plans do in the own mode; null for a method without plans, or runs without outcomes. */
  plans: PlanEffect | null;
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
    type StepRecord = (typeof stepsRecords)[number][number];
    // A per-step figure (absent from a step, or from older records) as each run's mean over its steps from `from` to the shortest run's end, then over seeds.
    const stepMean = (pick: (x: StepRecord) => number | null | undefined, from = 0) =>
      optional(stepsRecords.map((rs) => {
        const picked = defined(rs.filter((x) => x.step < steps && x.step >= from).map(pick));
        return picked.length ? mean(picked) : null;
      }));
    const rolloutSeeds = stepMean((x) => x.solverRollouts?.seeds);
    const rolloutGenerated = stepMean((x) => x.solverRollouts?.generated);
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
      plansRight: stepMean((x) => x.plansRight, steps - PLANS_WINDOW),
      solverRollouts: rolloutSeeds && rolloutGenerated ? { seeds: rolloutSeeds, generated: rolloutGenerated } : null,
      solverFlat: stepMean((x) => x.zeroSpreadShare?.solver),
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
    plans: outcomes && planEffect(outcomes, pooled, bootstrap),
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
