import { describe, expect, it } from 'vitest';
import { UNREADABLE } from '../sage/levels';
import type { BankEntry } from '../sage/bank';
import { METHODS } from '../sage/config';
import type { StepMetrics } from '../sage/loop';
import type { EvolveEvent } from '../worker/api';
import { isRunRecord, runLabel, runRecord } from './runHistory';
import { EMPTY_RUN, historyEvents, KEPT_TRANSCRIPT_STEPS, reduceRun, stepPhases } from './runView';

function metrics(step: number, admitted: number): StepMetrics {
  return {
    step,
    seconds: { generation: 3, validators: 0.5, training: 1, total: 6, phases: { solve: 2 } },
    bank: { size: 10 + admitted, seeds: 10, admitted, admittedThisStep: 1, rejected: { unparsable: step, quality: 0, validator: 1, duplicate: 0, 'near-duplicate': 0 } },
    rewards: { solver: 0.25 * step, challenger: 0.5 },
    advantageStd: {},
    groups: [],
    zeroSpreadShare: {},
    generatedShare: 0,
    plansRight: 0.25,
    responses: {},
    solverAccuracy: 0.1 * step,
    loss: { loss: -0.01 * step, clipFraction: 0.1, approxKl: 0.001, referenceKl: 0, entropy: 1.2, tokens: 100, gradNorm: 0.5, finite: true, tuned: 0 },
    tunedKernels: 0,
    tokens: { generated: 600, trained: 700 },
    tokensPerS: 100,
  };
}

const entry = (id: string, step: number): BankEntry => ({
  problem: { id, source: 'gen', format: 'curriculum', kind: 'math', statement: `${id}: 1+${step}=?`, answer: String(1 + step), raw: {} },
  provenance: { origin: 'generated', parents: ['seed:1'], step, quality: 0.9, passRates: [[step, 0.4]] },
});

describe('the run view', () => {
  it('folds warm-up, phases, steps, validations and bank events into chart points', () => {
    const events: EvolveEvent[] = [
      { type: 'warmup', step: 3, of: 10, loss: 1.5 },
      { type: 'phase', step: 0, phase: 'validate' },
      { type: 'validation', result: { step: 0, accuracy: 0.1, perSource: { c: { correct: 1, total: 10, accuracy: 0.1 } }, perLevel: { 1: { correct: 1, total: 5, accuracy: 0.2 } } }, best: true },
      { type: 'phase', step: 0, phase: 'propose' },
      { type: 'bank', event: { type: 'admit', entry: entry('gen/0/1', 0) } },
      { type: 'bank', event: { type: 'reject', step: 0, reason: 'validator' } },
      { type: 'step', metrics: metrics(0, 1), transcripts: [] },
      { type: 'phase', step: 1, phase: 'solve' },
      { type: 'paused', step: 1, phase: 'solve' },
    ];
    let v = reduceRun(EMPTY_RUN, events.slice(0, 1));
    expect(v.status).toBe('warmup');
    expect(v.warmup).toEqual({ step: 3, of: 10, loss: 1.5 });
    v = reduceRun(v, events.slice(1));
    expect(v.status).toBe('paused');
    expect(v.phase).toBe('solve');
    expect(v.steps).toHaveLength(1);
    expect(v.steps[0]).toMatchObject({ step: 1, seeds: 10, admitted: 1, loss: -0, clipFraction: 0.1, generationShare: 0.5, rewards: { solver: 0, challenger: 0.5 } });
    expect(v.validations).toEqual([{ step: 0, accuracy: 0.1, perSource: { c: 0.1 }, perLevel: { 1: 0.2 }, planned: null, problemAuc: null, planAuc: null, answerAuc: null }]);
    // A method with a Planner and a Critic: its own mode's accuracy and the Critic's AUC come along.
    const sage = reduceRun(v, [
      { type: 'validation', result: { step: 5, accuracy: 0.1, perSource: {}, perLevel: {}, planned: { accuracy: 0.3, perSource: {}, perLevel: {}, planShown: 0.5 }, critic: { problemAuc: 0.9, planAuc: 0.7, answerAuc: 0.6, pairs: { problems: 100, plans: 100, answers: 100 } } }, best: true },
    ]);
    expect(sage.validations.at(-1)).toMatchObject({ step: 5, accuracy: 0.1, planned: 0.3, problemAuc: 0.9, planAuc: 0.7, answerAuc: 0.6 });
    expect(v.best?.accuracy).toBe(0.1);
    expect(v.admitted).toMatchObject([{ id: 'gen/0/1', answer: '1', passRate: 0.4, parents: ['seed:1'], level: UNREADABLE }]);
    // A statement in a curriculum style shows the level it reads as.
    const styled = { ...entry('gen/0/2', 0), problem: { ...entry('gen/0/2', 0).problem, statement: '5*(7+1)-3*5=?' } };
    expect(reduceRun(v, [{ type: 'bank', event: { type: 'admit', entry: styled } }]).admitted.at(-1)).toMatchObject({ id: 'gen/0/2', level: '5' });

    v = reduceRun(v, [
      { type: 'resumed', step: 1 },
      { type: 'bank', event: { type: 'pass-rate', id: 'gen/0/1', step: 1, rate: 0.8 } },
      { type: 'step', metrics: metrics(1, 1), transcripts: [] },
      { type: 'validation', result: { step: 2, accuracy: 0.05, perSource: {}, perLevel: {} }, best: false },
      { type: 'done', reason: 'early-stop', state: { step: 2, best: null, evaluationsWithoutGain: 1, warmedUp: true } },
    ]);
    // Ended, but not 'done' until the engine's call returns (it still writes the autosave).
    expect(v.status).toBe('running');
    expect(v.endReason).toBe('early-stop');
    expect(v.phase).toBeNull();
    expect(v.admitted[0]!.passRate).toBe(0.8);
    expect(v.steps.map((p) => p.step)).toEqual([1, 2]);
    // A validation that is not a new best leaves the best where it was.
    expect(v.best?.step).toBe(0);
  });

  it('shows the kernels being tuned before the first step, until the first phase begins', () => {
    let v = reduceRun(EMPTY_RUN, [{ type: 'tuning', done: 0, total: 40 }, { type: 'tuning', done: 12, total: 40 }]);
    expect(v.tuning).toEqual({ done: 12, total: 40 });
    v = reduceRun(v, [{ type: 'tuning', done: 40, total: 40 }]);
    expect(v.tuning).toBeNull();
    v = reduceRun(reduceRun(EMPTY_RUN, [{ type: 'tuning', done: 3, total: 40 }]), [{ type: 'phase', step: 0, phase: 'validate' }]);
    expect(v.tuning).toBeNull();
  });

  it('keeps the transcripts of the last steps only, and never mutates the view it was given', () => {
    let v = EMPTY_RUN;
    for (let i = 0; i < KEPT_TRANSCRIPT_STEPS + 5; i++) {
      const before = v;
      v = reduceRun(v, [{ type: 'step', metrics: metrics(i, 0), transcripts: [{ step: i, role: 'solver', template: 'solver', prompt: 'p', output: 'o', fields: {}, format: 1, reward: 1 }] }]);
      expect(before.steps).toHaveLength(i);
    }
    expect(v.transcripts).toHaveLength(KEPT_TRANSCRIPT_STEPS);
    expect(v.transcripts[0]!.step).toBe(6);
    expect(v.steps).toHaveLength(KEPT_TRANSCRIPT_STEPS + 5);
    expect(EMPTY_RUN.steps).toHaveLength(0);
  });

  it('rebuilds an exported run’s charts and bank from its records, the best validation recomputed', () => {
    const v0 = { step: 0, accuracy: 0.2, perSource: {}, perLevel: {} };
    const v2 = { step: 2, accuracy: 0.1, perSource: {}, perLevel: {} };
    const files: Record<string, string> = {
      'metrics.jsonl': [
        JSON.stringify({ kind: 'validation', step: 0, validation: v0 }),
        JSON.stringify({ kind: 'step', ...metrics(0, 1) }),
        JSON.stringify({ kind: 'step', ...metrics(1, 1), validation: v2 }),
      ].join('\n'),
      'bank-events.jsonl': `${JSON.stringify({ type: 'admit', entry: entry('gen/0/0', 0) })}\n`,
    };
    const v = reduceRun(EMPTY_RUN, historyEvents((name) => files[name] ?? null));
    expect(v.steps.map((p) => p.step)).toEqual([1, 2]);
    expect(v.validations.map((p) => p.step)).toEqual([0, 2]);
    expect(v.best?.step).toBe(0);
    expect(v.admitted.map((r) => r.id)).toEqual(['gen/0/0']);
    expect(historyEvents(() => null)).toEqual([]);
    expect(() => historyEvents((name) => (name === 'metrics.jsonl' ? '{bad\n{"kind":"validation"}\n' : null))).toThrow('metrics.jsonl:1');
  });

  it('lists the phases each method runs, in order', () => {
    expect(stepPhases(METHODS.sage)).toEqual(['propose', 'score-problems', 'difficulty', 'admit', 'plan', 'score-plans', 'solve', 'update']);
    expect(stepPhases(METHODS.mae)).toEqual(['propose', 'score-problems', 'difficulty', 'admit', 'solve', 'judge-answers', 'update']);
    expect(stepPhases(METHODS.rlvr)).toEqual(['solve', 'update']);
  });
});

describe('a kept run', () => {
  it('records the run’s settings and compact curves, and refuses what is not a record', () => {
    const v = reduceRun(EMPTY_RUN, [
      { type: 'validation', result: { step: 0, accuracy: 0.1, perSource: {}, perLevel: {} }, best: true },
      { type: 'step', metrics: metrics(0, 1), transcripts: [] },
      { type: 'step', metrics: metrics(1, 3), transcripts: [] },
      { type: 'validation', result: { step: 2, accuracy: 0.3, perSource: {}, perLevel: {}, planned: { accuracy: 0.25, perSource: {}, perLevel: {}, planShown: 0.5 } }, best: true },
    ]);
    const config = { method: 'rlvr' as const, templates: 'compact' as const, settings: { lr: 3e-4 }, seeds: 'a.jsonl', validation: 'b.jsonl', model: 'tiny' };
    const r = runRecord('run-1', Date.UTC(2026, 10, 23, 12), config, v);
    // Accuracy in the method's own mode (with plans where validated with them), and the Solver alone's.
    expect(r).toMatchObject({ id: 'run-1', steps: 2, best: { step: 2, accuracy: 0.25 }, endReason: null, finished: false, config });
    expect(r.validations).toEqual([{ step: 0, accuracy: 0.1, solver: 0.1 }, { step: 2, accuracy: 0.25, solver: 0.3 }]);
    expect(r.bank).toEqual([{ step: 1, size: 11, admitted: 1 }, { step: 2, size: 13, admitted: 3 }]);
    expect(runLabel(r)).toMatch(/^rlvr · a\.jsonl · /);
    expect(runLabel({ ...r, config: { ...config, resumed: true } })).toMatch(/\(resumed\)$/);
    const done = runRecord('run-1', 0, config, reduceRun(v, [{ type: 'done', reason: 'steps', state: { step: 2, best: null, evaluationsWithoutGain: 0, warmedUp: true } }]));
    expect(done).toMatchObject({ finished: true, endReason: 'steps' });
    expect(isRunRecord(JSON.parse(JSON.stringify(r)))).toBe(true);
    for (const bad of [null, 3, {}, { ...r, bank: 'x' }, { ...r, id: 1 }]) expect(isRunRecord(bad)).toBe(false);
  });
});

describe('per-problem outcomes in the view', () => {
  const line = (step: number, mode: 'solver' | 'planned', verdicts: number[]) => ({
    step, mode, problems: verdicts.map((verdict, j) => ({ id: `p${j}`, source: 'curriculum', ...(j < 2 ? { level: 1 } : {}), verdict, answer: 'x'.repeat(50) })),
  });
  const result = (step: number) => ({ step, accuracy: 0.1, perSource: {}, perLevel: {} });

  it('keeps the first validation\'s and the latest\'s as bits per mode, and the kept run holds them', () => {
    const v = reduceRun(EMPTY_RUN, [
      { type: 'validation', result: result(0), best: true, outcomes: [line(0, 'solver', [1, 0, 0]), line(0, 'planned', [1, 1, 0])] },
      { type: 'validation', result: result(2), best: true, outcomes: [line(2, 'solver', [1, 0, 1])] },
      // A code problem's share of tests passed (0.5) is wrong.
      { type: 'validation', result: result(4), best: true, outcomes: [line(4, 'solver', [0.5, 1, 1]), line(4, 'planned', [1, 1, 1])] },
      { type: 'validation', result: result(6), best: false },
    ]);
    expect(v.outcomes).toEqual([
      { step: 0, ids: ['p0', 'p1', 'p2'], levels: ['1', '1', ''], solver: '100', planned: '110' },
      { step: 4, ids: ['p0', 'p1', 'p2'], levels: ['1', '1', ''], solver: '011', planned: '111' },
    ]);
    const config = { method: 'sage' as const, templates: 'compact' as const, settings: {}, seeds: 'a', validation: 'b', model: 'tiny' };
    expect(runRecord('r', 0, config, v).outcomes).toEqual(v.outcomes);
    expect(runRecord('r', 0, config, EMPTY_RUN).outcomes).toBeUndefined();
  });

  it('a resumed run\'s history brings the outcomes of its validations', () => {
    const files: Record<string, string> = {
      'metrics.jsonl': [JSON.stringify({ kind: 'validation', step: 0, validation: result(0) }), JSON.stringify({ kind: 'step', ...metrics(0, 1), validation: result(1) })].join('\n'),
      'outcomes.jsonl': [line(0, 'solver', [0, 0, 1]), line(1, 'solver', [1, 1, 1])].map((l) => JSON.stringify(l)).join('\n'),
    };
    const v = reduceRun(EMPTY_RUN, historyEvents((name) => files[name] ?? null));
    expect(v.outcomes.map((o) => [o.step, o.solver])).toEqual([[0, '001'], [1, '111']]);
    // Records from before outcomes were kept: none.
    expect(reduceRun(EMPTY_RUN, historyEvents((name) => (name === 'outcomes.jsonl' ? null : files[name] ?? null))).outcomes).toEqual([]);
  });
});
