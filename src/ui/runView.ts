/**
 * What the page shows of a loop run, folded from the engine's batched events: one compact
 * point per step for the charts, the validations, the last steps' transcripts and the
 * admitted problems. Pure, so the reduction is tested without a browser; it holds no GPU
 * handles and no seed arrays (the bank's seeds are a count).
 */
import type { BankEntry, BankEvent, RejectReason } from '../sage/bank';
import type { MethodConfig, RoleName } from '../sage/config';
import type { Transcript } from '../sage/loop';
import type { Phase } from '../sage/loopContract';
import { problemLevel } from '../sage/levels';
import type { MetricsRecord } from '../sage/run';
import { parseJsonl, RUN_FILES } from '../sage/runRecords';
import { ownAccuracy, type ValidationOutcomes } from '../sage/validation';
import type { AutosaveInfo, EvolveEvent } from '../worker/api';

export type RunStatus = 'idle' | 'starting' | 'warmup' | 'running' | 'paused' | 'done' | 'error';

/** A run that holds the engine: its settings and inputs are read-only, no other run may start. */
export const isActive = (status: RunStatus): boolean => status === 'starting' || status === 'warmup' || status === 'running' || status === 'paused';

export interface StepPoint {
  /** Steps completed, counting this one. */
  step: number;
  seeds: number;
  admitted: number;
  admittedThisStep: number;
  /** Rejections so far, by reason. */
  rejected: Record<RejectReason, number>;
  rewards: Partial<Record<RoleName, number>>;
  /** null where no training problem of the step had a reference answer (a validator-free run on questions alone). */
  solverAccuracy: number | null;
  loss: number | null;
  clipFraction: number | null;
  approxKl: number | null;
  entropy: number | null;
  gradNorm: number | null;
  tokensPerS: number;
  seconds: number;
  generationShare: number;
  /** The share of the step's Solver rollouts on generated problems (absent in older records). */
  generatedShare: number | null;
  /** Among the step's plans the environment can read, the share that compute their problem's answer (null: none, or no Planner). */
  plansRight: number | null;
  /** Per role, the share of advantage groups with no reward spread (no signal). */
  zeroSpread: Partial<Record<RoleName, number>>;
}

export interface ValidationPoint {
  /** Steps completed when it ran (0: before the first). */
  step: number;
  /** The Solver alone. */
  accuracy: number;
  perSource: Record<string, number>;
  perLevel: Record<string, number>;
  /** In the method's own mode with plans (Planner, Critic gate, Solver), where it has one. */
  planned: number | null;
  /** The Critic's AUC, real vs corrupted problems, own vs wrong plans and right vs wrong answers, where it has one. */
  problemAuc: number | null;
  planAuc: number | null;
  answerAuc: number | null;
}

/**
 * One validation's per-problem results as the page keeps them, for the paired comparison of
 * runs: the problems in order, and per mode a string of '1' (right) and '0' (wrong), a few
 * hundred bytes where the full outcomes (answers included) are tens of kilobytes.
 */
export interface KeptOutcomes {
  step: number;
  ids: string[];
  /** Each problem's level ('' where it has none). */
  levels: string[];
  solver: string;
  /** The method's own mode with plans, where it has one. */
  planned: string | null;
}

/** A validation's outcome lines as kept (null without the Solver alone's line). */
export function keptOutcomes(step: number, lines: readonly ValidationOutcomes[]): KeptOutcomes | null {
  const line = (mode: ValidationOutcomes['mode']) => lines.filter((l) => l.mode === mode).at(-1);
  const solver = line('solver');
  if (!solver) return null;
  const planned = line('planned');
  const bits = (l: ValidationOutcomes) => l.problems.map((p) => (p.verdict >= 1 ? '1' : '0')).join('');
  return { step, ids: solver.problems.map((p) => p.id), levels: solver.problems.map((p) => (p.level === undefined ? '' : String(p.level))), solver: bits(solver), planned: planned ? bits(planned) : null };
}

/** An admitted problem as the bank table lists it. */
export interface AdmittedRow {
  id: string;
  statement: string;
  kind: 'math' | 'code';
  answer: string;
  step: number;
  quality: number | null;
  parents: string[];
  /** The curriculum level its statement reads as (problemLevel), or UNREADABLE. */
  level: string;
  /** The latest measured Solver pass rate. */
  passRate: number | null;
}

export interface RunView {
  status: RunStatus;
  /** Phase in flight, and the step it belongs to (0-based). */
  phase: Phase | 'validate' | null;
  phaseStep: number;
  warmup: { step: number; of: number; loss: number } | null;
  /** Kernels tuned for the run's shapes before its first step, while that lasts (null after). */
  tuning: { done: number; total: number } | null;
  steps: StepPoint[];
  validations: ValidationPoint[];
  best: ValidationPoint | null;
  /** The last steps' transcripts, oldest first. */
  transcripts: { step: number; items: Transcript[] }[];
  admitted: AdmittedRow[];
  endReason: 'steps' | 'early-stop' | 'stopped' | null;
  /** The per-problem outcomes of the first validation and of the latest (what a comparison pairs): at most two. */
  outcomes: KeptOutcomes[];
  /** The last autosave of this run, or why it failed. */
  autosave: { info?: AutosaveInfo; error?: string } | null;
}

/** Steps whose transcripts are kept for browsing. */
export const KEPT_TRANSCRIPT_STEPS = 50;

export const EMPTY_RUN: RunView = {
  status: 'idle',
  phase: null,
  phaseStep: 0,
  warmup: null,
  tuning: null,
  steps: [],
  validations: [],
  best: null,
  transcripts: [],
  admitted: [],
  endReason: null,
  outcomes: [],
  autosave: null,
};

const rates = (r: Record<string, { accuracy: number }>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.accuracy]));

function admittedRow(e: BankEntry): AdmittedRow {
  const p = e.problem;
  const last = e.provenance.passRates[e.provenance.passRates.length - 1];
  return {
    id: p.id,
    statement: p.statement,
    kind: p.kind,
    answer: p.kind === 'math' ? (p.answer ?? '') : '',
    step: e.provenance.step,
    quality: e.provenance.quality,
    parents: e.provenance.parents,
    level: problemLevel(p),
    passRate: last ? last[1] : null,
  };
}

/** The view after a batch of events (a new object; the old one is untouched). */
export function reduceRun(view: RunView, events: readonly EvolveEvent[]): RunView {
  const v: RunView = { ...view };
  for (const e of events) {
    switch (e.type) {
      case 'warmup':
        v.status = 'warmup';
        v.warmup = { step: e.step, of: e.of, loss: e.loss };
        break;
      case 'tuning':
        v.tuning = e.done < e.total ? { done: e.done, total: e.total } : null;
        break;
      case 'phase':
        v.tuning = null;
        if (v.status !== 'paused') v.status = 'running';
        v.phase = e.phase;
        v.phaseStep = e.step;
        break;
      case 'paused':
        v.status = 'paused';
        break;
      case 'resumed':
        v.status = 'running';
        break;
      case 'step': {
        const m = e.metrics;
        v.steps = [
          ...v.steps,
          {
            step: m.step + 1,
            seeds: m.bank.seeds,
            admitted: m.bank.admitted,
            admittedThisStep: m.bank.admittedThisStep,
            rejected: { ...m.bank.rejected },
            rewards: { ...m.rewards },
            solverAccuracy: m.solverAccuracy,
            loss: m.loss?.loss ?? null,
            clipFraction: m.loss?.clipFraction ?? null,
            approxKl: m.loss?.approxKl ?? null,
            entropy: m.loss?.entropy ?? null,
            gradNorm: m.loss?.gradNorm ?? null,
            tokensPerS: m.tokensPerS,
            seconds: m.seconds.total,
            generationShare: m.seconds.total > 0 ? m.seconds.generation / m.seconds.total : 0,
            generatedShare: m.generatedShare ?? null,
            plansRight: m.plansRight ?? null,
            zeroSpread: { ...(m.zeroSpreadShare ?? {}) },
          },
        ];
        v.transcripts = [...v.transcripts, { step: m.step + 1, items: e.transcripts }].slice(-KEPT_TRANSCRIPT_STEPS);
        break;
      }
      case 'validation': {
        const r = e.result;
        const point: ValidationPoint = {
          step: r.step, accuracy: r.accuracy, perSource: rates(r.perSource), perLevel: rates(r.perLevel),
          planned: r.planned?.accuracy ?? null, problemAuc: r.critic?.problemAuc ?? null, planAuc: r.critic?.planAuc ?? null,
          answerAuc: r.critic?.answerAuc ?? null,
        };
        v.validations = [...v.validations.filter((p) => p.step !== point.step), point];
        if (e.best) v.best = point;
        const kept = e.outcomes && keptOutcomes(r.step, e.outcomes);
        if (kept) {
          const first = v.outcomes[0];
          v.outcomes = first && first.step < kept.step ? [first, kept] : [kept];
        }
        break;
      }
      case 'bank':
        if (e.event.type === 'admit' && e.event.entry.provenance.origin === 'generated') v.admitted = [...v.admitted, admittedRow(e.event.entry)];
        else if (e.event.type === 'pass-rate') {
          const { id, rate } = e.event;
          v.admitted = v.admitted.map((r) => (r.id === id ? { ...r, passRate: rate } : r));
        }
        break;
      case 'autosave':
        v.autosave = { info: e.info, error: e.error };
        break;
      case 'done':
        // The status turns 'done' when the engine's call returns: after this event the engine
        // still writes the ended run's autosave, and takes no other work until it has.
        v.phase = null;
        v.endReason = e.reason;
        break;
    }
  }
  return v;
}

/** The phases a step of this method runs, in order (for the progress bar within a step). */
export function stepPhases(method: MethodConfig): Phase[] {
  const has = (r: RoleName) => (method.roles as readonly RoleName[]).includes(r);
  const phases: Phase[] = [];
  if (method.evolveBank && has('challenger')) phases.push('propose', 'score-problems', 'difficulty', 'admit');
  if (has('planner')) phases.push('plan', 'score-plans');
  phases.push('solve');
  if (method.solverReward === 'judge') phases.push('judge-answers');
  phases.push('update');
  return phases;
}

/**
 * The events that rebuild an exported run's history (its metrics, per-problem outcomes and
 * bank), so a resumed run's charts, bank and comparison continue where the export left them.
 * Transcripts are not replayed.
 */
export function historyEvents(read: (name: string) => string | null): EvolveEvent[] {
  const events: EvolveEvent[] = [];
  let best = -1;
  const outcomesText = read(RUN_FILES.outcomes);
  const outcomes = outcomesText ? parseJsonl<ValidationOutcomes>(outcomesText, RUN_FILES.outcomes) : [];
  const validation = (result: MetricsRecord['validation'] & object) => {
    const lines = outcomes.filter((o) => o.step === result.step);
    events.push({ type: 'validation', result, best: ownAccuracy(result) > best, ...(lines.length ? { outcomes: lines } : {}) });
    best = Math.max(best, ownAccuracy(result));
  };
  const metrics = read(RUN_FILES.metrics);
  for (const r of metrics ? parseJsonl<MetricsRecord>(metrics, RUN_FILES.metrics) : []) {
    if (r.kind === 'validation') validation(r.validation);
    else {
      const { kind: _k, validation: v, ...m } = r;
      events.push({ type: 'step', metrics: m, transcripts: [] });
      if (v) validation(v);
    }
  }
  const bank = read(RUN_FILES.bank);
  for (const event of bank ? parseJsonl<BankEvent>(bank, RUN_FILES.bank) : []) events.push({ type: 'bank', event });
  return events;
}
