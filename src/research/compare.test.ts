import { describe, expect, it } from 'vitest';
import { generateProblem, LEVELS } from '../data/curriculum';
import { rng } from '../util/random';
import type { BankEvent } from '../sage/bank';
import { problemLevel, UNREADABLE } from '../sage/levels';
import type { StepMetrics } from '../sage/loop';
import type { MetricsRecord } from '../sage/run';
import type { ValidationOutcomes, ValidationResult } from '../sage/validation';
import { CEILING, levelSpan, meanSe, PLANS_WINDOW, runOutcomes, summarize, type ComparedRun } from './compare';
import { compareChart } from './compareChart';
import { compareTable, intervalText, shareText } from './compareTable';
import { gapShare, pairedDifference, pairedGain } from './pairedStats';

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
  it('mean and standard error against hand values', () => {
    expect(meanSe([0.2, 0.4, 0.6])).toEqual({ mean: expect.closeTo(0.4, 12), se: expect.closeTo(0.2 / Math.sqrt(3), 12), n: 3 });
    expect(meanSe([0.5])).toEqual({ mean: 0.5, se: null, n: 1 });
    // Five seeds at 199/400: a plain sum's mean is 0.49749999999999994, printed 49.7 where one seed prints 49.8.
    expect(meanSe(Array(5).fill(199 / 400))).toEqual({ mean: 199 / 400, se: 0, n: 5 });
  });

  it('summarises the final validation in the method’s own mode, up to the shortest run, per level, with curves at common steps', () => {
    const runs = [
      run('sage', 0, 4, (a) => 0.1 + 0.05 * a, true),
      run('sage', 1, 6, (a) => 0.2 + 0.05 * a, true),
      run('rlvr', 0, 4, () => 0.3, false),
      run('rlvr', 1, 4, () => 0.5, false),
    ];
    const [sage, rlvr] = summarize(runs, 'rlvr');
    expect(sage!.steps).toBe(4);
    // Final = after step 4 for both seeds (the longer run's step-6 validation is beyond the shortest).
    expect(sage!.final.solver.mean).toBeCloseTo((0.3 + 0.4) / 2, 12);
    expect(sage!.final.own.mean).toBeCloseTo((0.4 + 0.5) / 2, 12);
    expect(sage!.final.perLevel['3']!.mean).toBeCloseTo((0.2 + 0.25) / 2, 12);
    expect(sage!.final.problemAuc!.mean).toBeCloseTo(0.8, 12);
    expect(sage!.final.planShown!.mean).toBe(0.5);
    expect(sage!.start.own.mean).toBeCloseTo((0.2 + 0.3) / 2, 12);
    expect(sage!.start.solver.mean).toBeCloseTo((0.1 + 0.2) / 2, 12);
    expect(sage!.curve.map((c) => c.after)).toEqual([0, 2, 4]);
    expect(sage!.bank.map((b) => b.after)).toEqual([1, 2, 3, 4]);
    expect(sage!.admitted.mean).toBe(4);
    expect(rlvr!.final.own).toEqual({ mean: expect.closeTo(0.4, 12), se: expect.closeTo(0.1, 12), n: 2 });
    expect(rlvr!.final.problemAuc).toBeNull();
    // Records without per-problem outcomes: no paired figures, plain differences of means, said so.
    expect(sage!.paired).toBeNull();
    const table = compareTable([sage!, rlvr!]);
    expect(table.split('\n')[0]).toContain('vs rlvr (own mode)');
    // SAGE 25 → 45 (+20.0) in own mode, 15 → 35 alone; against RLVR's 40 and 40: +5.0 and -5.0.
    expect(table).toMatch(/\| sage \| 2 \| - \| 25\.0 ± 5\.0 \| 45\.0 ± 5\.0 \| \+20\.0 \| \+5\.0 \| 15\.0 ± 5\.0 \| 35\.0 ± 5\.0 \| \+20\.0 \| -5\.0 \|/);
    expect(table).toContain('sage, rlvr: no per-problem outcomes');
    expect(table).not.toContain('bootstrap');
    expect(table).not.toMatch(/\bSE\)/);
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

describe('the Solver\'s practice', () => {
  it('averages its rollouts a step on seeds and on generated problems over each run\'s steps, then over seeds', () => {
    const counted = (seed: number, rollouts: (s: number) => { seeds: number; generated: number }): ComparedRun => {
      const r = run('sage', seed, 4, () => 0.2, true);
      return { ...r, records: r.records.map((x) => (x.kind === 'step' ? ({ ...x, solverRollouts: { ...rollouts(x.step), tokenShare: null } } as MetricsRecord) : x)) };
    };
    // Seed 0: 16 on seeds and 16 generated every step; seed 1: 8 and 24 on steps 0-1, 16 and 16 on steps 2-3.
    const [sage] = summarize([counted(0, () => ({ seeds: 16, generated: 16 })), counted(1, (s) => (s < 2 ? { seeds: 8, generated: 24 } : { seeds: 16, generated: 16 }))]);
    expect(sage!.solverRollouts!.seeds).toEqual({ mean: 14, se: 2, n: 2 });
    expect(sage!.solverRollouts!.generated).toEqual({ mean: 18, se: 2, n: 2 });
    expect(compareTable([sage!])).toMatch(/\| 14\.0 ± 2\.0 \| 18\.0 ± 2\.0 \|/);
    // Records from before the rollouts were counted: none.
    expect(summarize([run('rlvr', 0, 4, () => 0.2, false)])[0]!.solverRollouts).toBeNull();
  });

  it('averages the share of its groups without reward spread over each run\'s steps (to the shortest run\'s end), then over seeds', () => {
    const flat = (seed: number, steps: number, share: (s: number) => number | undefined): ComparedRun => {
      const r = run('mae', seed, steps, () => 0.2, false);
      return { ...r, records: r.records.map((x) => (x.kind === 'step' ? ({ ...x, zeroSpreadShare: { critic: 1, ...(share(x.step) === undefined ? {} : { solver: share(x.step) }) } } as MetricsRecord) : x)) };
    };
    // Seed 0: 0.5 every step; seed 1: 1 on steps 0-1, no Solver groups on step 2, 0.75 on step 3, 0 on steps 4-5 (past seed 0's end).
    const [mae] = summarize([flat(0, 4, () => 0.5), flat(1, 6, (s) => (s < 2 ? 1 : s === 2 ? undefined : s === 3 ? 0.75 : 0))]);
    const seed1 = (1 + 1 + 0.75) / 3;
    expect(mae!.solverFlat).toEqual({ mean: expect.closeTo((0.5 + seed1) / 2, 12), se: expect.closeTo(Math.abs(seed1 - 0.5) / 2, 12), n: 2 });
    expect(compareTable([mae!])).toContain('| Solver groups without reward spread |');
    expect(compareTable([mae!])).toContain(`| ${(100 * (0.5 + seed1) / 2).toFixed(1)} ± ${(100 * Math.abs(seed1 - 0.5) / 2).toFixed(1)} |`);
    expect(summarize([run('rlvr', 0, 4, () => 0.2, false)])[0]!.solverFlat).toBeNull();
  });
});

describe('paired figures from per-problem outcomes', () => {
  // Ten problems, p0-p4 at level 1 and p5-p9 at level 3.
  const ids = Array.from({ length: 10 }, (_, j) => `p${j}`);
  const level = (j: number) => (j < 5 ? 1 : 3);
  const lines = (step: number, solver: number[], own?: number[]): ValidationOutcomes[] => {
    const problems = (v: number[]) => v.map((verdict, j) => ({ id: ids[j]!, source: 'curriculum', level: level(j), verdict, answer: null }));
    return [{ step, mode: 'solver', problems: problems(solver) }, ...(own ? [{ step, mode: 'planned' as const, problems: problems(own) }] : [])];
  };
  const tallies = (v: number[]) => {
    const right = v.map((x) => (x >= 1 ? 1 : 0));
    const at = (l: number) => right.filter((_, j) => level(j) === l);
    const t = (xs: number[]) => ({ correct: xs.reduce((a, b) => a + b, 0), total: xs.length, accuracy: xs.reduce((a, b) => a + b, 0) / xs.length });
    return { ...t(right), perSource: {}, perLevel: { '1': t(at(1)), '3': t(at(3)) } };
  };
  const result = (step: number, solver: number[], own?: number[]): ValidationResult => {
    const { correct: _c, total: _t, ...alone } = tallies(solver);
    const planned = own && (({ correct: _c2, total: _t2, ...rest }) => ({ ...rest, planShown: 0.5 }))(tallies(own));
    return { step, ...alone, ...(planned ? { planned } : {}) };
  };
  /** A run of 3 steps validated before the first and after the last, right as given (own: the planned mode). */
  const outcomeRun = (method: string, seed: number, start: number[][], final: number[][]): ComparedRun => ({
    method,
    seed,
    records: [
      { kind: 'validation', step: 0, validation: result(0, start[0]!, start[1]) },
      ...[0, 1, 2].map((s) => step(s, s, s === 2 ? result(3, final[0]!, final[1]) : undefined)),
    ],
    outcomes: [...lines(0, start[0]!, start[1]), ...lines(3, final[0]!, final[1])],
  });
  const v = (bits: string) => [...bits].map(Number);
  // SAGE: two seeds, Solver alone and planned; a code problem's partial verdict (0.5) counts as wrong.
  const sage = [
    outcomeRun('sage', 0, [v('1100000000'), v('1000000000')], [v('1110010000'), v('1111010000')]),
    outcomeRun('sage', 1, [v('1000000000'), v('1000000000')], [v('1100000000'), [1, 1, 1, 0.5, 0, 1, 1, 0, 0, 0]]),
  ];
  const rlvr = [outcomeRun('rlvr', 0, [v('1100000000')], [v('1111000000')]), outcomeRun('rlvr', 1, [v('1000000000')], [v('1110100000')])];
  const correct = (bits: number[]) => new Map(bits.map((x, j) => [ids[j]!, x >= 1 ? 1 : 0]));
  /** Each run's final outcomes in one mode (0 the Solver alone, 1 planned where the run has it). */
  const finals = (runs: ComparedRun[], mode: 0 | 1) => runs.map((x) => correct((x.outcomes!.filter((l) => l.step === 3)[mode] ?? x.outcomes!.filter((l) => l.step === 3)[0]!).problems.map((p) => p.verdict)));

  it('reads each run\'s start and final outcomes per mode, the last line of a step validated twice', () => {
    const o = runOutcomes([...lines(0, v('1000000000')), ...lines(3, v('0000000000')), ...lines(3, v('0000000001'))], 0, 3)!;
    expect([...o.final.solver.values()]).toEqual(v('0000000001'));
    // No planned mode: the own mode is the Solver alone.
    expect(o.final.own).toEqual(o.final.solver);
    expect(o.levels.get('p7')).toBe('3');
    expect(runOutcomes(lines(0, v('1000000000')), 0, 3)).toBeNull();
  });

  it('gain and difference from the baseline, overall and per level, each the paired bootstrap of the runs\' outcomes', () => {
    const [s, r] = summarize([...sage, ...rlvr], 'rlvr');
    const starts = (runs: ComparedRun[], mode: 0 | 1) => runs.map((x) => correct((x.outcomes!.filter((l) => l.step === 0)[mode] ?? x.outcomes!.filter((l) => l.step === 0)[0]!).problems.map((p) => p.verdict)));
    // By hand: SAGE's own mode 1/10 in both seeds → 5/10 in both (seed 1's 0.5 verdict wrong), a gain of
    // +40 points; RLVR (own mode = the Solver alone) (2 + 1)/20 = 15% → (4 + 4)/20 = 40%, +25; SAGE − RLVR
    // at the end: +10 points.
    expect(s!.paired!.own.gain!.estimate).toBeCloseTo(0.4, 12);
    expect(s!.paired!.own.vsBaseline!.estimate).toBeCloseTo(0.1, 12);
    expect(s!.paired!.own.vsBaseline!.estimate).toBeCloseTo(s!.final.own.mean - r!.final.own.mean, 12);
    expect(s!.paired!.own.gain).toEqual(pairedGain(starts(sage, 1), finals(sage, 1)));
    // Seed by seed the two methods share their step 0 (the Solver alone right on p0-p1, then p0): their seeds are drawn together.
    const paired = { pairSeeds: true };
    expect(s!.paired!.own.vsBaseline).toEqual(pairedDifference(finals(sage, 1), finals(rlvr, 0), undefined, paired));
    expect(s!.paired!.own.vsBaseline!.seedsPaired).toBe(true);
    expect(s!.paired!.solver.vsBaseline).toEqual(pairedDifference(finals(sage, 0), finals(rlvr, 0), undefined, paired));
    expect(Object.keys(s!.paired!.perLevel)).toEqual(['1', '3']);
    const level3 = new Set(ids.slice(5));
    expect(s!.paired!.perLevel['3']!.vsBaseline).toEqual(pairedDifference(finals(sage, 1), finals(rlvr, 0), level3, paired));
    // Level 3 by hand: SAGE right on 1 and 2 of the 5 level-3 problems at the end, RLVR on none: +30 points.
    expect(s!.paired!.perLevel['3']!.vsBaseline).toMatchObject({ estimate: expect.closeTo(0.3, 12), problems: 5, seeds: [2, 2] });
    expect(r!.paired!.own.vsBaseline).toBeNull();
    expect(r!.paired!.own.gain!.estimate).toBeCloseTo(0.25, 12);

    const table = compareTable([s!, r!]);
    expect(table).toContain(`| sage | 2 | 10 | 10.0 ± 0.0 | 50.0 ± 0.0 | ${intervalText(s!.paired!.own.gain!)} | ${intervalText(s!.paired!.own.vsBaseline!)} |`);
    expect(table).toContain(`| sage | 3 | 5 | 30.0 ± 10.0 | ${intervalText(s!.paired!.perLevel['3']!.gain!)} | ${intervalText(s!.paired!.perLevel['3']!.vsBaseline!)} |`);
    expect(table).toContain('paired bootstrap');
    expect(table).toContain('10,000 resamples');
    expect(table).toContain('seeds paired (one draw for both sides) where the runs of one seed share their step 0');
    expect(table).not.toContain('no per-problem outcomes');
    // Two seeds a side: no figure rests on the problems' sampling alone.
    expect(table).not.toContain('†');
  });

  it('draws the seeds of each side on their own where the runs of a seed do not share their step 0, or are not the same seeds', () => {
    // RLVR's seed 1 started elsewhere (right on p0-p2 at step 0): no pairing, and the figure is the unpaired bootstrap's.
    const moved = outcomeRun('rlvr', 1, [v('1110000000')], [v('1110100000')]);
    const [s] = summarize([...sage, rlvr[0]!, moved], 'rlvr');
    expect(s!.paired!.own.vsBaseline).toEqual(pairedDifference(finals(sage, 1), finals([rlvr[0]!, moved], 0)));
    expect(s!.paired!.own.vsBaseline!.seedsPaired).toBe(false);
    expect(compareTable(summarize([...sage, rlvr[0]!, moved], 'rlvr'))).toContain("each side's seeds drawn on their own");
    // The same starts under other seed numbers: not the same seeds.
    const renumbered = rlvr.map((r) => ({ ...r, seed: r.seed + 1000 }));
    expect(summarize([...sage, ...renumbered], 'rlvr')[0]!.paired!.own.vsBaseline!.seedsPaired).toBe(false);
  });

  it('says where a figure rests on one seed, and where the baseline has no outcomes', () => {
    const [s] = summarize([sage[0]!, rlvr[0]!], 'rlvr');
    expect(s!.paired!.own.vsBaseline).toMatchObject({ seeds: [1, 1], seedsResampled: false });
    const table = compareTable(summarize([sage[0]!, rlvr[0]!], 'rlvr'));
    expect(table).toContain('†');
    expect(table).toContain('one seed a side');
    const { outcomes: _o, ...old } = rlvr[0]!;
    const [s2, r2] = summarize([sage[0]!, old], 'rlvr');
    expect(s2!.paired!.own.vsBaseline).toBeNull();
    expect(s2!.paired!.own.gain).not.toBeNull();
    expect(r2!.paired).toBeNull();
    expect(compareTable([s2!, r2!])).toContain('rlvr: no per-problem outcomes');
  });

  it('marks a figure whose interval covers 0 as inside the noise, and only those', () => {
    const i = { estimate: 0.0125, lo: -0.01, hi: 0.035, se: 0.01, insideNoise: true, problems: 400, seeds: [5, 5], seedsResampled: true, seedsPaired: false, resamples: 10_000 };
    expect(intervalText(i)).toBe('+1.3 [-1.0, +3.5] inside the noise');
    expect(intervalText({ ...i, lo: 0.005, insideNoise: false, seedsResampled: false })).toBe('+1.3 [+0.5, +3.5]†');
  });
});

describe('the ceiling, the levels beyond the seeds and the bank\'s levels', () => {
  // Twelve problems, three at each of levels 1-4; the seeds show levels 1-2.
  const n = 12;
  const ids = Array.from({ length: n }, (_, j) => `q${j}`);
  const levelOf = (j: number) => 1 + Math.floor(j / 3);
  const tally = (bits: readonly number[], keep: (j: number) => boolean) => {
    const xs = bits.filter((_, j) => keep(j));
    const correct = xs.reduce((a, b) => a + b, 0);
    return { correct, total: xs.length, accuracy: correct / xs.length };
  };
  const result = (step: number, bits: readonly number[]): ValidationResult => ({
    step, accuracy: tally(bits, () => true).accuracy, perSource: {},
    perLevel: Object.fromEntries([1, 2, 3, 4].map((l) => [String(l), tally(bits, (j) => levelOf(j) === l)])),
  });
  const line = (step: number, bits: readonly number[]): ValidationOutcomes => ({ step, mode: 'solver', problems: bits.map((verdict, j) => ({ id: ids[j]!, source: 'curriculum', level: levelOf(j), verdict, answer: null })) });
  const admit = (id: string, statement: string, stepAt: number, level?: number): BankEvent => ({
    type: 'admit',
    entry: { problem: { id, source: 'challenger', format: 'qa', kind: 'math', statement, answer: '0', raw: {}, ...(level ? { level } : {}) }, provenance: { origin: 'generated', parents: [], step: stepAt, quality: 1, passRates: [] } },
  });
  /** A run of 2 steps validated before the first and after the last (the Solver alone), right on each problem with the given odds. */
  const random = rng(5);
  const draw = (odds: (j: number) => number) => ids.map((_, j) => (random() < odds(j) ? 1 : 0));
  const run = (method: string, seed: number, start: number[], final: number[], bankEvents?: BankEvent[]): ComparedRun => ({
    method, seed,
    records: [{ kind: 'validation', step: 0, validation: result(0, start) }, step(0, 0), step(1, 0, result(2, final))],
    outcomes: [line(0, start), line(2, final)],
    ...(bankEvents ? { bankEvents } : {}),
  });
  const easy = (j: number) => (levelOf(j) <= 2 ? 0.9 : 0.1);
  const rlvr = [0, 1].map((s) => run('rlvr', s, draw(easy), draw(easy), []));
  const ceiling = [0, 1].map((s) => run(CEILING.name, s, draw(easy), draw((j) => (levelOf(j) <= 2 ? 0.9 : 0.95)), []));
  const sageEvents = [
    [admit('g1', '3+4=?', 0), admit('g2', '12*3+5=?', 1), admit('g3', 'What is three and four?', 1), admit('g4', 'Whatever', 1, 2), admit('late', '2+2=?', 2)],
    [admit('h1', '(2+3)*4=?', 0)],
  ];
  const sage = [0, 1].map((s) => run('sage', s, draw(easy), draw((j) => (levelOf(j) <= 2 ? 0.9 : 0.5)), sageEvents[s]));
  const finals = (runs: ComparedRun[]) => runs.map((r) => new Map(r.outcomes!.at(-1)!.problems.map((p) => [p.id, p.verdict])));
  const beyond = new Set(ids.filter((_, j) => levelOf(j) >= 3));
  const mean = (runs: ComparedRun[], within: Set<string>) => {
    const xs = finals(runs).flatMap((m) => [...m].filter(([id]) => within.has(id)).map(([, v]) => v));
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };

  it('reads an admitted problem\'s level from its statement, else its own field, else unreadable', () => {
    const random = rng(3);
    for (const level of LEVELS) {
      for (let k = 0; k < 20; k++) {
        const p = generateProblem(level, random);
        const read = Number(problemLevel({ id: 'x', source: 'challenger', format: 'qa', kind: 'math', statement: p.question, answer: p.answer, raw: {} }));
        // Level 2's sums and differences of numbers up to 9 are level 1's content; from level 2's products on, each shape is its level's own.
        if (level >= 3) expect(read).toBe(level);
        else expect(read === level || (level === 2 && read === 1)).toBe(true);
      }
    }
    const problem = (e: BankEvent) => (e as Extract<BankEvent, { type: 'admit' }>).entry.problem;
    expect(problemLevel(problem(sageEvents[0]![2]!))).toBe(UNREADABLE);
    expect(problemLevel(problem(sageEvents[0]![3]!))).toBe('2');
    expect(levelSpan(['3', '4', '5'])).toBe('3-5');
    expect(levelSpan(['2', '4'])).toBe('2,4');
  });

  it('pools the levels beyond the seeds, places each method between the baseline and the ceiling, and counts the bank\'s levels', () => {
    const [s, r, c] = summarize([...sage, ...rlvr, ...ceiling], 'rlvr', { ceiling: CEILING.name, seedLevels: ['1', '2'] });
    expect([s!.method, r!.method, c!.method]).toEqual(['sage', 'rlvr', CEILING.name]);
    expect(s!.beyondSeeds).toBe('3-4');
    expect(Object.keys(s!.final.perLevel)).toEqual(['1', '2', '3', '4', '3-4']);
    expect(s!.final.perLevel['3-4']!.mean).toBeCloseTo(mean(sage, beyond), 12);
    expect(s!.paired!.perLevel['3-4']!.vsBaseline).toEqual(pairedDifference(finals(sage), finals(rlvr), beyond));
    expect(s!.paired!.perLevel['3-4']!.vsBaseline!.estimate).toBeCloseTo(mean(sage, beyond) - mean(rlvr, beyond), 12);
    // The share of the gap: where the ceiling is clearly above the baseline (levels 3-4 by construction), the paired bootstrap of the ratio.
    expect(c!.paired!.perLevel['3-4']!.vsBaseline!.lo).toBeGreaterThan(0);
    expect(s!.gap!.perLevel['3-4']).toEqual(gapShare(finals(sage), finals(rlvr), finals(ceiling), beyond));
    expect(s!.gap!.perLevel['3-4']!.estimate).toBeCloseTo((mean(sage, beyond) - mean(rlvr, beyond)) / (mean(ceiling, beyond) - mean(rlvr, beyond)), 12);
    // Where it is not (levels 1-2: both drawn alike), no share.
    for (const l of ['1', '2']) if (!(c!.paired!.perLevel[l]!.vsBaseline!.lo > 0)) expect(s!.gap!.perLevel[l]).toBeNull();
    expect(r!.gap).toBeNull();
    expect(c!.gap).toBeNull();
    // The bank: seed 0 admitted levels 1 (3+4), 3 (12*3+5) and 2 (by its field) and an unreadable one in its 2 steps (the step-2 one is beyond them); seed 1 one of level 4.
    expect(s!.admittedLevels).toEqual({ '1': meanSe([1, 0]), '2': meanSe([1, 0]), '3': meanSe([1, 0]), '4': meanSe([0, 1]), [UNREADABLE]: meanSe([1, 0]) });
    expect(r!.admittedLevels!['3']).toEqual(meanSe([0, 0]));

    const table = compareTable([s!, r!, c!]);
    expect(table).toContain(`| sage | 3-4 (beyond the seeds) | 6 |`);
    expect(table).toContain(`Between rlvr and the ceiling (${CEILING.label})`);
    expect(table).toContain(`| ${CEILING.name} − rlvr (points) | ${intervalText(c!.paired!.own.vsBaseline!)} |`);
    const share = s!.gap!.perLevel['3-4']!;
    expect(table).toContain(`sage closes ${shareText({ ...share, insideNoise: false })} of the gap between rlvr and the ceiling on levels 3-4 (beyond the seeds)${share.insideNoise ? ', inside the noise' : ''}.`);
    expect(table).toContain(`${CEILING.name}: ${CEILING.label}.`);
    expect(table).toMatch(/\| method \| admitted \| level 1 \| level 2 \| level 3 \| level 4 \| unreadable \|/);
    expect(table).toContain('| sage | 0.0 ± 0.0 | 0.5 ± 0.5 | 0.5 ± 0.5 | 0.5 ± 0.5 | 0.5 ± 0.5 | 0.5 ± 0.5 |');
    // The chart: the ceiling dashed in each panel, its legend saying what it is.
    const svg = compareChart([s!, r!, c!]);
    expect(svg.match(/stroke-dasharray="6 4"/g)).toHaveLength(3);
    expect(svg).toContain('(what a perfect Challenger could give)');
    expect(svg).not.toContain('NaN');
    // Without a ceiling or seed levels: no pooled level, no gap, no ceiling note.
    const [plain] = summarize([...sage, ...rlvr], 'rlvr');
    expect(plain!.beyondSeeds).toBeNull();
    expect(plain!.gap).toBeNull();
    expect(compareTable([plain!])).not.toContain('ceiling');
  });

  it('reports the Solver alone per level beside the own mode, for a method with plans', () => {
    // SAGE's own mode (with plans) right on levels 1-2 only; its Solver alone right beyond them too.
    const planned = (step: number, bits: readonly number[]): ValidationOutcomes => ({ ...line(step, bits), mode: 'planned' });
    const withPlans = [0, 1].map((seed) => {
      const [s0, sf, p0, pf] = [draw(easy), draw((j) => (levelOf(j) <= 2 ? 0.9 : 0.6)), draw(easy), draw((j) => (levelOf(j) <= 2 ? 0.9 : 0.05))];
      const v = (step: number, solver: number[], own: number[]): ValidationResult => ({ ...result(step, solver), planned: { ...result(step, own), planShown: 0.5 } });
      return {
        method: 'sage', seed,
        records: [{ kind: 'validation', step: 0, validation: v(0, s0, p0) }, step(0, 0), step(1, 0, v(2, sf, pf))],
        outcomes: [line(0, s0), planned(0, p0), line(2, sf), planned(2, pf)],
      } as ComparedRun;
    });
    const [s, r] = summarize([...withPlans, ...rlvr], 'rlvr', { seedLevels: ['1', '2'] });
    const finalsOf = (runs: ComparedRun[], mode: 'solver' | 'planned') => runs.map((x) => new Map(x.outcomes!.filter((o) => o.mode === mode).at(-1)!.problems.map((p) => [p.id, p.verdict])));
    expect(s!.paired!.perLevelSolver!['3-4']!.vsBaseline).toEqual(pairedDifference(finalsOf(withPlans, 'solver'), finals(rlvr), beyond));
    expect(s!.paired!.perLevel['3-4']!.vsBaseline).toEqual(pairedDifference(finalsOf(withPlans, 'planned'), finals(rlvr), beyond));
    const solverBeyond = finalsOf(withPlans, 'solver').map((m) => [...m].filter(([id]) => beyond.has(id)).reduce((a, [, v]) => a + v, 0) / beyond.size);
    expect(s!.final.perLevelSolver['3-4']).toEqual(meanSe(solverBeyond));
    const table = compareTable([s!, r!]);
    expect(table).toContain('Per level, the Solver alone, for the methods whose own mode has plans:');
    expect(table).toContain(`| sage | 3-4 (beyond the seeds) | 6 | ${(100 * s!.final.perLevelSolver['3-4']!.mean).toFixed(1)} ± ${(100 * s!.final.perLevelSolver['3-4']!.se!).toFixed(1)} | ${intervalText(s!.paired!.perLevelSolver!['3-4']!.gain!)} | ${intervalText(s!.paired!.perLevelSolver!['3-4']!.vsBaseline!)} |`);
    // Without plans the own mode is the Solver alone: no bootstraps of it per level again.
    expect(r!.paired!.perLevelSolver).toBeNull();
    // Without plans, no such table (the own mode is the Solver alone).
    expect(compareTable(summarize([...sage, ...rlvr], 'rlvr', { seedLevels: ['1', '2'] }))).not.toContain('the Solver alone, for the methods');
  });

  it('says what the plans do: right with a shown plan against the Solver alone on the same problem-runs, agreement where refused, and own − Solver alone', () => {
    // Three seeds; a plan shown at random; shown plans mostly wrong, and one refused problem where the modes disagree.
    const runs = [0, 1, 2].map((seed) => {
      const [s0, sf] = [draw(easy), draw((j) => (levelOf(j) <= 2 ? 0.9 : 0.6))];
      const shown = ids.map(() => random() < 0.5);
      const own = sf.map((v, j) => (shown[j] ? (random() < 0.2 ? 1 : 0) : seed === 0 && j === ids.findIndex((_, k) => !shown[k]) ? 1 - v : v));
      const planned = (step: number, bits: readonly number[], plan: readonly boolean[]): ValidationOutcomes => ({ step, mode: 'planned', problems: line(step, bits).problems.map((p, j) => ({ ...p, planShown: plan[j]! })) });
      const v = (step: number, solver: number[], o: number[]): ValidationResult => ({ ...result(step, solver), planned: { ...result(step, o), planShown: 0.5 } });
      return {
        method: 'sage', seed, shown, own, solver: sf,
        run: { method: 'sage', seed, records: [{ kind: 'validation', step: 0, validation: v(0, s0, s0) }, step(0, 0), step(1, 0, v(2, sf, own))], outcomes: [line(0, s0), planned(0, s0, ids.map(() => false)), line(2, sf), planned(2, own, shown)] } as ComparedRun,
      };
    });
    const [s, r] = summarize([...runs.map((x) => x.run), ...rlvr], 'rlvr', { seedLevels: ['1', '2'] });
    // By hand, over every problem of every run.
    const cells = runs.flatMap((x) => ids.map((_, j) => ({ shown: x.shown[j]!, own: x.own[j]!, alone: x.solver[j]! })));
    const shown = cells.filter((c) => c.shown);
    const refused = cells.filter((c) => !c.shown);
    expect(s!.plans).toMatchObject({
      problems: 3 * n, shown: shown.length, rightWithPlan: shown.filter((c) => c.own).length, rightAlone: shown.filter((c) => c.alone).length,
      refused: refused.length, refusedAgree: refused.length - 1,
    });
    const map = (bits: readonly number[]) => new Map(bits.map((v, j) => [ids[j]!, v]));
    expect(s!.plans!.all).toEqual(pairedDifference(runs.map((x) => map(x.own)), runs.map((x) => map(x.solver)), undefined, { pairSeeds: true }));
    expect(s!.plans!.all!.estimate).toBeCloseTo(cells.reduce((a, c) => a + c.own - c.alone, 0) / cells.length, 12);
    expect(s!.plans!.beyond).toEqual(pairedDifference(runs.map((x) => map(x.own)), runs.map((x) => map(x.solver)), beyond, { pairSeeds: true }));
    // RLVR has no plans: no row.
    expect(r!.plans).toBeNull();
    const table = compareTable([s!, r!]);
    const pc = (k: number, m: number) => `${k} (${(100 * k / m).toFixed(1)}%)`;
    expect(table).toContain(`| sage | ${shown.length} of ${3 * n} | ${pc(s!.plans!.rightWithPlan, shown.length)} | ${pc(s!.plans!.rightAlone, shown.length)} | ${pc(refused.length - 1, refused.length)} | ${intervalText(s!.plans!.all!)} | ${intervalText(s!.plans!.beyond!)} |`);
    expect(table).toContain('| method | plans shown | right with the plan | Solver alone on those | agree where refused | own − Solver alone | own − Solver alone, levels 3-4 |');
    expect(table).not.toMatch(/\| rlvr \| \d+ of/);
  });

  it('writes a share in percent, infinite where a resample\'s gap was 0', () => {
    const i = { estimate: 0.4, lo: -0.1, hi: 0.85, se: 0.2, insideNoise: true, problems: 600, seeds: [5, 5, 5], seedsResampled: true, seedsPaired: false, resamples: 10_000 };
    expect(shareText(i)).toBe('40% [-10%, 85%] inside the noise');
    expect(shareText({ ...i, lo: 0.1, hi: Infinity, insideNoise: false })).toBe('40% [10%, +∞]');
  });
});
