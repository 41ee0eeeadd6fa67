import { describe, expect, it } from 'vitest';
import { compareChart, compareTable, difference, meanSe, PLANS_WINDOW, summarize, type ComparedRun } from './compare';
import type { MetricsRecord } from './run';
import type { StepMetrics } from './loop';
import type { ValidationResult } from './validation';

const tally = (accuracy: number) => ({ L: { correct: Math.round(100 * accuracy), total: 100, accuracy } });
const validation = (step: number, solver: number, own?: number, auc?: number): ValidationResult => ({
  step, accuracy: solver, perSource: {}, perLevel: { '1': tally(solver).L, '3': tally(solver / 2).L },
  ...(own === undefined ? {} : { planned: { accuracy: own, perSource: {}, perLevel: { '1': tally(own).L, '3': tally(own / 2).L }, planShown: 0.5 } }),
  ...(auc === undefined ? {} : { critic: { problemAuc: auc, planAuc: auc - 0.1, pairs: { problems: 100, plans: 100 } } }),
});
const step = (s: number, bank: number, v?: ValidationResult): MetricsRecord =>
  ({ kind: 'step', step: s, bank: { size: 500 + bank, seeds: 500, admitted: bank, admittedThisStep: 1, rejected: {} }, ...(v ? { validation: v } : {}) }) as unknown as { kind: 'step' } & StepMetrics;

/** A run of `steps` steps validated every 2, its accuracies from `acc(after)`. */
function run(method: string, seed: number, steps: number, acc: (after: number) => number, planned: boolean): ComparedRun {
  const v = (after: number) => validation(after, acc(after), planned ? acc(after) + 0.1 : undefined, planned ? 0.8 : undefined);
  const records: MetricsRecord[] = [{ kind: 'validation', step: 0, validation: v(0) }];
  for (let s = 0; s < steps; s++) records.push(step(s, s + 1, (s + 1) % 2 === 0 ? v(s + 1) : undefined));
  return { method, seed, records };
}

describe('a comparison over seeds', () => {
  it('mean and standard error against hand values; a difference in standard errors', () => {
    expect(meanSe([0.2, 0.4, 0.6])).toEqual({ mean: expect.closeTo(0.4, 12), se: expect.closeTo(0.2 / Math.sqrt(3), 12), n: 3 });
    expect(meanSe([0.5])).toEqual({ mean: 0.5, se: null, n: 1 });
    const d = difference({ mean: 0.5, se: 0.03, n: 3 }, { mean: 0.4, se: 0.04, n: 3 });
    expect(d.diff).toBeCloseTo(0.1, 12);
    expect(d.se).toBeCloseTo(0.05, 12);
    expect(d.z).toBeCloseTo(2, 12);
  });

  it('summarises the final validation in the method’s own mode, up to the shortest run, per level, with curves at common steps', () => {
    const runs = [
      run('sage', 0, 4, (a) => 0.1 + 0.05 * a, true),
      run('sage', 1, 6, (a) => 0.2 + 0.05 * a, true),
      run('rlvr', 0, 4, () => 0.3, false),
      run('rlvr', 1, 4, () => 0.5, false),
    ];
    const [sage, rlvr] = summarize(runs);
    expect(sage!.steps).toBe(4);
    // Final = after step 4 for both seeds (the longer run's step-6 validation is beyond the shortest).
    expect(sage!.final.solver.mean).toBeCloseTo((0.3 + 0.4) / 2, 12);
    expect(sage!.final.own.mean).toBeCloseTo((0.4 + 0.5) / 2, 12);
    expect(sage!.final.perLevel['3']!.mean).toBeCloseTo((0.2 + 0.25) / 2, 12);
    expect(sage!.final.problemAuc!.mean).toBeCloseTo(0.8, 12);
    expect(sage!.final.planShown!.mean).toBe(0.5);
    expect(sage!.start.own.mean).toBeCloseTo((0.2 + 0.3) / 2, 12);
    expect(sage!.curve.map((c) => c.after)).toEqual([0, 2, 4]);
    expect(sage!.bank.map((b) => b.after)).toEqual([1, 2, 3, 4]);
    expect(sage!.admitted.mean).toBe(4);
    expect(rlvr!.final.own).toEqual({ mean: expect.closeTo(0.4, 12), se: expect.closeTo(0.1, 12), n: 2 });
    expect(rlvr!.final.problemAuc).toBeNull();
    const table = compareTable([sage!, rlvr!], 'rlvr');
    expect(table.split('\n')[0]).toContain('vs rlvr');
    // SAGE's 45 ± 5 against RLVR's 40 ± 10: +5.0 points, 0.4 standard errors.
    expect(table).toMatch(/\| sage \| 2 \| 4 \| 25\.0 ± 5\.0 \| 45\.0 ± 5\.0 \| 35\.0 ± 5\.0 \| .* \| \+5\.0 \(0\.4 SE\) \|/);
    expect(sage!.curve.map((c) => c.solver.mean)).toEqual([0.15, 0.25, 0.35].map((x) => expect.closeTo(x, 12)));
    const svg = compareChart([sage!, rlvr!]);
    // Three panels (own mode, Solver alone, bank), a band per method in each.
    expect(svg.match(/<polygon /g)).toHaveLength(6);
    expect(svg).toContain('the Solver alone');
    expect(svg).toContain('sage (2 seeds)');
    expect(svg).not.toContain('NaN');
    // Without the Solver alone, two panels and the legend below them.
    const bare = compareChart([sage!, rlvr!].map((s) => ({ ...s, curve: s.curve.map(({ after, own }) => ({ after, own })) })));
    expect(bare.match(/<polygon /g)).toHaveLength(4);
    expect(bare).not.toContain('the Solver alone');
  });

  it('averages the share of right plans over each run\'s last steps, then over seeds; records without it report none', () => {
    const steps = PLANS_WINDOW + 5;
    const withPlans = (seed: number, share: (s: number) => number | null): ComparedRun => {
      const r = run('sage', seed, steps, () => 0.2, true);
      return { ...r, records: r.records.map((x) => (x.kind === 'step' ? ({ ...x, plansRight: share(x.step) } as MetricsRecord) : x)) };
    };
    // Seed 0: 0 before the window, 0.5 inside; seed 1: 1 inside, one step without readable plans.
    const [sage] = summarize([withPlans(0, (s) => (s < steps - PLANS_WINDOW ? 0 : 0.5)), withPlans(1, (s) => (s === steps - 1 ? null : 1))]);
    expect(sage!.plansRight).toEqual({ mean: expect.closeTo(0.75, 12), se: expect.closeTo(0.25, 12), n: 2 });
    expect(compareTable([sage!])).toContain('75.0 ± 25.0');
    const [old] = summarize([run('sage', 0, steps, () => 0.2, true)]);
    expect(old!.plansRight).toBeNull();
  });
});
