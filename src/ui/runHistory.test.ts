import { describe, expect, it } from 'vitest';
import { compareChart } from '../research/compareChart';
import { pairedDifference, pairedGain } from '../research/pairedStats';
import { compareKept, comparisonKey, comparisonPlan, comparisons, keptSeries, type RunRecord } from './runHistory';

const run = (id: string, method: RunRecord['config']['method'], final: number, admitted: number, steps = 20): RunRecord => ({
  id, startedAt: 0, steps, endReason: 'steps', finished: true, best: null,
  config: { method, templates: 'compact', settings: {}, seeds: 's', validation: 'v', model: 'm' },
  validations: [{ step: 0, accuracy: 0.05 }, { step: steps, accuracy: final }],
  bank: [{ step: steps, size: 500 + admitted, admitted }],
});

describe('kept runs compared by method', () => {
  it('start and final held-out accuracy and admitted problems as mean ± SE; no paired figures without per-problem results', () => {
    const rows = compareKept([
      run('a', 'sage', 0.3, 10), run('b', 'sage', 0.5, 20, 30), run('c', 'rlvr', 0.2, 0), run('d', 'rlvr', 0.4, 0),
      // A run that never validated after its start tells nothing.
      { ...run('e', 'mae', 0.9, 5), validations: [{ step: 0, accuracy: 0.9 }] },
    ]);
    expect(rows.map((r) => r.method)).toEqual(['sage', 'rlvr']);
    const [sage, rlvr] = rows;
    expect(sage).toMatchObject({ runs: 2, steps: 20, start: { mean: 0.05 }, final: { mean: expect.closeTo(0.4, 12), se: expect.closeTo(0.1, 12) }, admitted: { mean: 15, se: 5 } });
    expect(sage!.paired).toBeNull();
    expect(rlvr!.paired).toBeNull();
  });

  it('pairs each run\'s first and last validation problem by problem, and each method with RLVR', () => {
    // Six problems, p0-p2 at level 1 and p3-p5 at level 2; '1' right, '0' wrong.
    const ids = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5'];
    const levels = ['1', '1', '1', '2', '2', '2'];
    const kept = (step: number, solver: string, planned: string | null = null) => ({ step, ids, levels, solver, planned });
    const withOutcomes = (id: string, method: RunRecord['config']['method'], start: [string, string | null], final: [string, string | null]): RunRecord => ({
      ...run(id, method, 0.5, 0),
      outcomes: [kept(0, ...start), kept(20, ...final)],
    });
    const sage = [withOutcomes('a', 'sage', ['100000', '100000'], ['110000', '111100']), withOutcomes('b', 'sage', ['000000', '100000'], ['100000', '110100'])];
    const rlvr = [withOutcomes('c', 'rlvr', ['100000', null], ['110000', null]), withOutcomes('d', 'rlvr', ['000000', null], ['111000', null])];
    const [s, r] = compareKept([...sage, ...rlvr]);
    const bits = (b: string) => new Map(ids.map((id, j) => [id, Number(b[j])]));
    // SAGE's own mode (planned) 1/6 → (4 + 3)/12: +5/12; against RLVR's (2 + 3)/12 at the end: +2/12.
    expect(s!.paired!.own.gain).toEqual(pairedGain([bits('100000'), bits('100000')], [bits('111100'), bits('110100')]));
    expect(s!.paired!.own.gain!.estimate).toBeCloseTo(5 / 12, 12);
    expect(s!.paired!.own.vsBaseline).toEqual(pairedDifference([bits('111100'), bits('110100')], [bits('110000'), bits('111000')]));
    expect(s!.paired!.own.vsBaseline!.estimate).toBeCloseTo(2 / 12, 12);
    expect(s!.paired!.solver.vsBaseline!.estimate).toBeCloseTo((2 + 1 - 2 - 3) / 12, 12);
    // Level 2: SAGE right on p3 in both runs, RLVR on none: +1/3 over 3 problems.
    expect(s!.paired!.perLevel['2']!.vsBaseline).toMatchObject({ estimate: expect.closeTo(1 / 3, 12), problems: 3 });
    expect(r!.paired!.own.vsBaseline).toBeNull();
    // A run whose first validation's results were not kept: no paired figures for its method.
    const [s2] = compareKept([{ ...sage[0]!, outcomes: sage[0]!.outcomes!.slice(1) }, sage[1]!, ...rlvr]);
    expect(s2!.paired).toBeNull();
  });

  it('pools the held-out levels the seeds do not show, as npm run compare does, where the runs recorded their seeds\' levels', () => {
    // Nine problems at levels 1-3; the seeds show level 1 only.
    const ids = Array.from({ length: 9 }, (_, j) => `p${j}`);
    const levels = ids.map((_, j) => String(1 + Math.floor(j / 3)));
    const random = () => Math.random();
    const draw = () => ids.map(() => (random() < 0.5 ? '1' : '0')).join('');
    const make = (id: string, method: RunRecord['config']['method'], seedLevels?: string[]): RunRecord => {
      const r = run(id, method, 0.5, 0);
      return { ...r, config: { ...r.config, ...(seedLevels ? { seedLevels } : {}) }, outcomes: [{ step: 0, ids, levels, solver: draw(), planned: null }, { step: 20, ids, levels, solver: draw(), planned: null }] };
    };
    const runs = [make('a', 'sage', ['1']), make('b', 'sage', ['1']), make('c', 'rlvr', ['1']), make('d', 'rlvr', ['1'])];
    const [s, r] = compareKept(runs);
    expect(s!.beyondSeeds).toBe('2-3');
    expect(r!.beyondSeeds).toBe('2-3');
    const finals = (xs: RunRecord[]) => xs.map((x) => new Map(ids.map((id, j) => [id, Number(x.outcomes![1]!.solver[j])])));
    expect(s!.paired!.perLevel['2-3']).toMatchObject({ vsBaseline: pairedDifference(finals(runs.slice(0, 2)), finals(runs.slice(2)), new Set(ids.slice(3))) });
    expect(s!.paired!.perLevel['2-3']!.vsBaseline!.problems).toBe(6);
    // Records kept before the seeds' levels were: no pooled figure.
    const old = compareKept(runs.map((x) => ({ ...x, config: { ...x.config, seedLevels: undefined } })));
    expect(old[0]!.beyondSeeds).toBeNull();
    expect(Object.keys(old[0]!.paired!.perLevel)).toEqual(['1', '2', '3']);
  });
});

describe('a comparison of kept runs', () => {
  const settings = { steps: 2, evalEvery: 1, patience: 3 };
  const key = comparisonKey('tiny-curriculum', 'compact', 's.jsonl', 'v.jsonl', settings);
  const member = (id: string, method: RunRecord['config']['method'], seed: number, finals: number[], endReason: RunRecord['endReason'] = 'steps'): RunRecord => ({
    ...run(id, method, finals[finals.length - 1]!, seed),
    endReason,
    config: { method, templates: 'compact', settings: { ...settings, seed }, seeds: 's.jsonl', validation: 'v.jsonl', model: 'tiny-curriculum', comparison: key },
    validations: finals.map((accuracy, i) => ({ step: i, accuracy })),
    bank: [{ step: 1, size: 500 + seed, admitted: seed }, { step: 2, size: 500 + 2 * seed, admitted: 2 * seed }],
  });

  it('has one key for every seed of the same start, problems and settings, and another when any of them differs', () => {
    expect(comparisonKey('tiny-curriculum', 'compact', 's.jsonl', 'v.jsonl', { ...settings, seed: 4 })).toBe(key);
    expect(comparisonKey('tiny-curriculum', 'compact', 's.jsonl', 'v.jsonl', { patience: 3, evalEvery: 1, steps: 2 })).toBe(key);
    for (const other of [
      comparisonKey('tiny', 'compact', 's.jsonl', 'v.jsonl', settings),
      comparisonKey('tiny-curriculum', 'instruct', 's.jsonl', 'v.jsonl', settings),
      comparisonKey('tiny-curriculum', 'compact', 'other.jsonl', 'v.jsonl', settings),
      comparisonKey('tiny-curriculum', 'compact', 's.jsonl', 'v2.jsonl', settings),
      comparisonKey('tiny-curriculum', 'compact', 's.jsonl', 'v.jsonl', { ...settings, lr: 1e-5 }),
    ]) expect(other).not.toBe(key);
  });

  it('plans the runs still to make seed by seed, skipping only the finished runs of the same comparison', () => {
    const kept = [
      member('a', 'sage', 0, [0.1, 0.2, 0.3]),
      member('b', 'rlvr', 0, [0.1, 0.2, 0.3], 'stopped'), // cut short: made again
      { ...member('c', 'rlvr', 1, [0.1, 0.2, 0.3]), config: { ...member('c', 'rlvr', 1, [0.1]).config, comparison: 'another' } },
    ];
    expect(comparisonPlan(key, ['sage', 'rlvr'], 2, kept)).toEqual([
      { method: 'rlvr', seed: 0 },
      { method: 'sage', seed: 1 },
      { method: 'rlvr', seed: 1 },
    ]);
    expect(comparisonPlan(key, ['sage'], 1, kept)).toEqual([]);
  });

  it('groups finished runs by comparison, newest first, and draws each method as mean ± SE over its seeds', () => {
    const older = { ...member('x', 'sage', 0, [0.5, 0.5, 0.5]), startedAt: -10, config: { ...member('x', 'sage', 0, [0.5]).config, comparison: 'older' } };
    const runs = [member('a', 'sage', 0, [0.1, 0.2, 0.3]), member('b', 'sage', 1, [0.1, 0.4, 0.5]), member('c', 'rlvr', 0, [0.1, 0.2, 0.2]), member('d', 'rlvr', 1, [0.1], 'stopped'), older];
    const groups = comparisons(runs);
    expect(groups.map((g) => [g.key, g.runs.map((r) => r.id)])).toEqual([[key, ['a', 'b', 'c']], ['older', ['x']]]);
    const series = keptSeries(groups[0]!.runs);
    expect(series.map((s) => [s.method, s.seeds])).toEqual([['sage', [0, 1]], ['rlvr', [0]]]);
    const sage = series[0]!;
    expect(sage.curve.map((c) => c.after)).toEqual([0, 1, 2]);
    expect(sage.curve[2]!.own.mean).toBeCloseTo(0.4, 12);
    expect(sage.curve[2]!.own.se).toBeCloseTo(0.1, 12);
    expect(sage.bank.map((b) => [b.after, b.size.mean])).toEqual([[1, 500.5], [2, 501]]);
    // Records kept before the Solver alone was: no such curve, two panels.
    expect(sage.curve.some((c) => c.solver)).toBe(false);
    const svg = compareChart(series);
    expect(svg).toContain('sage (2 seeds)');
    expect(svg.match(/<polygon/g)).toHaveLength(4); // a band per method and panel
    // With it: the Solver alone's mean ± SE at each step, a third panel.
    const withSolver = groups[0]!.runs.map((r) => ({ ...r, validations: r.validations.map((v) => ({ ...v, solver: v.accuracy + 0.1 })) }));
    const [s2] = keptSeries(withSolver);
    expect(s2!.curve[2]!.solver!.mean).toBeCloseTo(0.5, 12);
    expect(s2!.curve[2]!.solver!.se).toBeCloseTo(0.1, 12);
    expect(compareChart(keptSeries(withSolver)).match(/<polygon/g)).toHaveLength(6);
  });
});
