/**
 * The runs kept in this browser: each run's configuration and its compact curves (held-out
 * accuracy, bank size), so earlier runs can be overlaid on the live charts (SAGE vs RLVR vs an
 * ablation) after the page is closed, and the per-problem results of its first and latest
 * validation, which a comparison pairs. Weights and transcripts stay in the run's export and
 * the autosave; a record is a few kilobytes even after a thousand steps.
 */
import { createStore, del, entries, set } from 'idb-keyval';
import { beyondSeeds, meanSe, pairedSummary, type MeanSe, type ModeOutcomes, type PairedSummary, type RunOutcomes } from '../research/compare';
import type { ChartSeries } from '../research/compareChart';
import type { MethodName } from '../sage/config';
import type { EvolveSettings } from '../worker/api';
import type { KeptOutcomes, RunView } from './runView';

export interface RunConfig {
  method: MethodName;
  templates: 'compact' | 'instruct';
  /** The settings typed for the run (the rest were their defaults). */
  settings: EvolveSettings;
  seeds: string;
  validation: string;
  model: string;
  /** Continued from an export or an autosave (its curves include the earlier steps). */
  resumed?: boolean;
  /** The comparison it belongs to (see comparisonKey): runs of one start, settings and problems. */
  comparison?: string;
  /** The levels its seeds show (absent in records kept before they were): the held-out levels beyond them are also reported pooled. */
  seedLevels?: string[];
}

export interface RunRecord {
  id: string;
  startedAt: number;
  config: RunConfig;
  /** Steps completed. */
  steps: number;
  /** Accuracy in the method's own mode, and the Solver alone's (absent in records kept before it was). */
  validations: { step: number; accuracy: number; solver?: number }[];
  bank: { step: number; size: number; admitted: number }[];
  best: { step: number; accuracy: number } | null;
  endReason: RunView['endReason'];
  /** Whether it ended (or failed) rather than was interrupted with the page. */
  finished: boolean;
  /** The per-problem results of its first and latest validation (absent in records kept before they were). */
  outcomes?: KeptOutcomes[];
}

/** A record of the run as the page shows it now. */
export function runRecord(id: string, startedAt: number, config: RunConfig, view: RunView): RunRecord {
  return {
    id,
    startedAt,
    config,
    steps: view.steps.length ? view.steps[view.steps.length - 1]!.step : 0,
    // The method's own inference mode: what runs of different methods compare on.
    validations: view.validations.map((v) => ({ step: v.step, accuracy: v.planned ?? v.accuracy, solver: v.accuracy })),
    bank: view.steps.map((p) => ({ step: p.step, size: p.seeds + p.admitted, admitted: p.admitted })),
    best: view.best ? { step: view.best.step, accuracy: view.best.planned ?? view.best.accuracy } : null,
    endReason: view.endReason,
    finished: view.endReason !== null || view.status === 'done' || view.status === 'error',
    ...(view.outcomes.length ? { outcomes: view.outcomes } : {}),
  };
}

/** A run's name in lists and legends: method, seeds and when it started. */
export function runLabel(r: RunRecord): string {
  const when = new Date(r.startedAt).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  return `${r.config.method} · ${r.config.seeds} · ${when}${r.config.resumed ? ' (resumed)' : ''}`;
}

/** Whether a value read back from storage is a run record this version can draw. */
export function isRunRecord(x: unknown): x is RunRecord {
  const r = x as RunRecord;
  return (
    typeof r === 'object' && r !== null && typeof r.id === 'string' && typeof r.startedAt === 'number' &&
    typeof r.config === 'object' && r.config !== null && Array.isArray(r.validations) && Array.isArray(r.bank)
  );
}

// idb-keyval keeps one object store per database, so the runs have a database of their own.
let store: ReturnType<typeof createStore> | null = null;
const runStore = () => (store ??= createStore('sage-lab-runs', 'runs'));

/** Every run kept, newest first (records of an older layout are skipped, not thrown on). */
export async function listRuns(): Promise<RunRecord[]> {
  if (typeof indexedDB === 'undefined') return [];
  const all = await entries<string, unknown>(runStore());
  return all.map(([, v]) => v).filter(isRunRecord).sort((a, b) => b.startedAt - a.startedAt);
}

export const saveRun = (r: RunRecord): Promise<void> => set(r.id, r, runStore());
export const deleteRun = (id: string): Promise<void> => del(id, runStore());

/** One method's kept runs compared: the start and final held-out accuracy (own mode) and the problems admitted, mean ± standard error over runs; the paired figures. */
export interface KeptComparison {
  method: MethodName;
  runs: number;
  /** Steps of the shortest of them. */
  steps: number;
  start: MeanSe;
  final: MeanSe;
  admitted: MeanSe;
  /** The key under which paired.perLevel pools the held-out levels the seeds do not show ("3-5"), or null. */
  beyondSeeds: string | null;
  /**
   * From the runs' per-problem outcomes: the gain from the start, and the difference from the
   * RLVR runs where there are some (compare.ts); null where a run was kept before outcomes were.
   */
  paired: PairedSummary | null;
}

/** A kept run's outcomes at its first and last validation, as the paired figures read them; null where either is not kept. */
function keptRunOutcomes(r: RunRecord): RunOutcomes | null {
  const at = (step: number | undefined): (ModeOutcomes & { kept: KeptOutcomes }) | null => {
    const k = r.outcomes?.find((o) => o.step === step);
    if (!k) return null;
    const correct = (bits: string) => new Map(k.ids.map((id, j) => [id, bits[j] === '1' ? 1 : 0]));
    const solver = correct(k.solver);
    return { own: k.planned === null ? solver : correct(k.planned), solver, kept: k };
  };
  const start = at(r.validations[0]?.step);
  const final = at(r.validations[r.validations.length - 1]?.step);
  if (!start || !final) return null;
  const levels = new Map<string, string>();
  for (const k of [start.kept, final.kept]) k.ids.forEach((id, j) => k.levels[j] && levels.set(id, k.levels[j]!));
  return { start, final, levels };
}

/**
 * The kept runs with a validation after their first step, grouped by method, as `npm run
 * compare` reports them: the first and last validation of each (not the best: the best of
 * several held-out evaluations is the noise's maximum), mean ± standard error over the runs,
 * and the paired figures against RLVR from the per-problem outcomes.
 */
export function compareKept(runs: readonly RunRecord[]): KeptComparison[] {
  const usable = runs.filter((r) => r.validations.some((v) => v.step > 0));
  const methods = [...new Set(usable.map((r) => r.config.method))];
  const outcomesOf = (mine: RunRecord[]) => {
    const o = mine.map(keptRunOutcomes);
    return o.every((x) => x !== null) ? (o as RunOutcomes[]) : null;
  };
  const rlvr = outcomesOf(usable.filter((r) => r.config.method === 'rlvr'));
  // The held-out levels beyond the seeds, pooled as `npm run compare` pools them (the runs of a comparison share their seeds).
  const held = [...new Set(usable.flatMap((r) => r.outcomes ?? []).flatMap((k) => k.levels.filter((l): l is string => !!l)))].sort();
  const pooled = beyondSeeds(held, usable.find((r) => r.config.seedLevels)?.config.seedLevels);
  return methods.map((method) => {
    const mine = usable.filter((r) => r.config.method === method);
    const outcomes = outcomesOf(mine);
    return {
      method,
      runs: mine.length,
      steps: Math.min(...mine.map((r) => r.steps)),
      start: meanSe(mine.map((r) => r.validations[0]!.accuracy)),
      final: meanSe(mine.map((r) => r.validations[r.validations.length - 1]!.accuracy)),
      admitted: meanSe(mine.map((r) => r.bank[r.bank.length - 1]?.admitted ?? 0)),
      beyondSeeds: pooled?.key ?? null,
      paired: outcomes && pairedSummary(outcomes, method === 'rlvr' || !rlvr?.length ? null : rlvr, pooled),
    };
  });
}

/**
 * What the runs of one comparison share: the starting model, the problems and every setting
 * but the seed. Starting the same comparison again finds its finished runs by it and goes on
 * with the rest, as `npm run compare` does with its folder.
 */
export function comparisonKey(model: string, templates: RunConfig['templates'], seeds: string, validation: string, settings: EvolveSettings): string {
  const { seed: _seed, ...shared } = settings;
  const sorted = Object.fromEntries(Object.entries(shared).sort(([a], [b]) => a.localeCompare(b)));
  return JSON.stringify({ model, templates, seeds, validation, settings: sorted });
}

/** The runs of a comparison still to make, seed by seed (every method at a seed before the next seed), so one cut short is still balanced. */
export function comparisonPlan(key: string, methods: readonly MethodName[], seeds: number, kept: readonly RunRecord[]): { method: MethodName; seed: number }[] {
  const done = (method: MethodName, seed: number) =>
    kept.some((r) => r.config.comparison === key && r.config.method === method && (r.config.settings.seed ?? 0) === seed && r.finished && r.endReason === 'steps');
  const plan: { method: MethodName; seed: number }[] = [];
  for (let seed = 0; seed < seeds; seed++) for (const method of methods) if (!done(method, seed)) plan.push({ method, seed });
  return plan;
}

/** The finished runs of each comparison kept, the newest comparison first. */
export function comparisons(runs: readonly RunRecord[]): { key: string; runs: RunRecord[] }[] {
  const groups = new Map<string, RunRecord[]>();
  for (const r of runs) if (r.config.comparison && r.finished && r.endReason === 'steps') groups.set(r.config.comparison, [...(groups.get(r.config.comparison) ?? []), r]);
  const newest = (rs: RunRecord[]) => Math.max(...rs.map((r) => r.startedAt));
  return [...groups].map(([key, rs]) => ({ key, runs: rs })).sort((a, b) => newest(b.runs) - newest(a.runs));
}

/** Each method's curves over its runs, mean ± SE at every validation and step all of them made, for the comparison chart. */
export function keptSeries(runs: readonly RunRecord[]): ChartSeries[] {
  const methods = [...new Set(runs.map((r) => r.config.method))];
  return methods.map((method) => {
    const mine = runs.filter((r) => r.config.method === method);
    const common = <T extends { step: number }>(of: (r: RunRecord) => T[]) => of(mine[0]!).map((p) => p.step).filter((step) => mine.every((r) => of(r).some((p) => p.step === step)));
    const at = <T extends { step: number }>(of: (r: RunRecord) => T[], step: number, value: (p: T) => number) => meanSe(mine.map((r) => value(of(r).find((p) => p.step === step)!)));
    return {
      method,
      seeds: mine.map((r) => r.config.settings.seed ?? 0),
      curve: common((r) => r.validations).map((step) => {
        const own = at((r) => r.validations, step, (p) => p.accuracy);
        const alone = mine.map((r) => r.validations.find((p) => p.step === step)!.solver);
        return alone.every((x) => x !== undefined) ? { after: step, own, solver: meanSe(alone as number[]) } : { after: step, own };
      }),
      bank: common((r) => r.bank).map((step) => ({ after: step, size: at((r) => r.bank, step, (p) => p.size) })),
    };
  });
}
