import { describe, expect, it } from 'vitest';
import { rng } from '../util/random';
import { CEILING, type RunOutcomes } from './compare';
import { goalVerdict, namedLevelDifference, namedLevelShare, parsePrimary, pilotSection, pilotVerdict, planSection, PILOT_BAR, PRIMARY_GOAL, type ComparisonPlan, type PilotRecord } from './namedLevels';
import { gapShare, pairedDifference, type Interval } from './pairedStats';

/** 60 problems, 20 at each of levels 3, 4, 5. */
const ids = Array.from({ length: 60 }, (_, j) => `q${j}`);
const levelOf = (j: number) => String(3 + Math.floor(j / 20));
const levels = new Map(ids.map((id, j) => [id, levelOf(j)]));

/** A run from one start (right on the first 6 problems) whose final is right on each problem with its level's odds. */
function run(seed: number, odds: Record<string, number>, random: () => number): RunOutcomes {
  const start = new Map(ids.map((id, j) => [id, j < 6 ? 1 : 0]));
  const final = new Map(ids.map((id, j) => [id, random() < odds[levelOf(j)]! ? 1 : 0]));
  return { start: { own: start, solver: start }, final: { own: final, solver: final }, levels, seed };
}

/** An interval of 240 problems and five seeds a side, its standard error a quarter of its width. */
const interval = (estimate: number, lo: number, hi: number): Interval => ({ estimate, lo, hi, se: (hi - lo) / 4, insideNoise: lo <= 0 && hi >= 0, problems: 240, seeds: [5, 5], seedsResampled: true, seedsPaired: true, resamples: 10_000 });

const mean = (runs: RunOutcomes[], within: (j: number) => boolean) => {
  const xs = runs.flatMap((r) => ids.filter((_, j) => within(j)).map((id) => r.final.solver.get(id)!));
  return xs.reduce((a, b) => a + b, 0) / xs.length;
};

describe('A − B on the named levels', () => {
  const random = rng(21);
  const rlvr = [0, 1, 2].map((s) => run(s, { '3': 0.2, '4': 0.1, '5': 0.05 }, random));
  const ceiling = [0, 1, 2].map((s) => run(s, { '3': 0.6, '4': 0.4, '5': 0.2 }, random));

  it('is the paired bootstrap of the finals, the Solver alone, per level and pooled over the named levels only', () => {
    const f = namedLevelDifference(ceiling, rlvr, ['3', '4']);
    const named = (j: number) => levelOf(j) !== '5';
    expect(f.pooled!.estimate).toBeCloseTo(mean(ceiling, named) - mean(rlvr, named), 12);
    expect(f.pooled).toMatchObject({ problems: 40, seeds: [3, 3], seedsPaired: true, resamples: 10_000 });
    expect(f.perLevel['4']!.estimate).toBeCloseTo(mean(ceiling, (j) => levelOf(j) === '4') - mean(rlvr, (j) => levelOf(j) === '4'), 12);
    expect(Object.keys(f.perLevel)).toEqual(['3', '4']);
    // The same draws as pairedDifference over the named problems with the seeds drawn together.
    const within = new Set(ids.filter((_, j) => named(j)));
    expect(f.pooled).toEqual(pairedDifference(ceiling.map((r) => r.final.solver), rlvr.map((r) => r.final.solver), within, { pairSeeds: true }));
    // No levels named: every held-out problem.
    expect(namedLevelDifference(ceiling, rlvr, []).pooled!.problems).toBe(60);
    // A level no problem has: no figure.
    expect(namedLevelDifference(ceiling, rlvr, ['9']).pooled).toBeNull();
  });

  it('lines the seeds up whatever order the runs come in', () => {
    expect(namedLevelDifference([...ceiling].reverse(), rlvr, ['3'])).toEqual(namedLevelDifference(ceiling, rlvr, ['3']));
  });

  it('gives the share of ceiling − B that A − B closes on the named levels, the three drawn as one bootstrap', () => {
    const method = [0, 1, 2].map((s) => run(s, { '3': 0.4, '4': 0.3, '5': 0.2 }, random));
    const named = (j: number) => levelOf(j) !== '5';
    const share = namedLevelShare(method, rlvr, ceiling, ['3', '4'])!;
    expect(share.estimate).toBeCloseTo((mean(method, named) - mean(rlvr, named)) / (mean(ceiling, named) - mean(rlvr, named)), 12);
    expect(share).toMatchObject({ problems: 40, seeds: [3, 3, 3], seedsPaired: true, resamples: 10_000 });
    expect(share.lo).toBeLessThan(share.estimate);
    expect(share.hi).toBeGreaterThan(share.estimate);
    const within = new Set(ids.filter((_, j) => named(j)));
    const finals = (runs: RunOutcomes[]) => runs.map((r) => r.final.solver);
    expect(share).toEqual(gapShare(finals(method), finals(rlvr), finals(ceiling), within, { pairSeeds: true }));
    // Runs in another order, the same draws; the ceiling itself closes all of it, RLVR none.
    expect(namedLevelShare([...method].reverse(), rlvr, [...ceiling].reverse(), ['3', '4'])).toEqual(share);
    expect(namedLevelShare(ceiling, rlvr, ceiling, ['3', '4'])).toMatchObject({ estimate: 1, lo: 1, hi: 1 });
    expect(namedLevelShare(rlvr, rlvr, ceiling, ['3', '4'])).toMatchObject({ estimate: 0, lo: 0, hi: 0 });
    expect(namedLevelShare(method, rlvr, ceiling, ['9'])).toBeNull();
  });
});

describe('the pilot\'s verdict', () => {
  it('clears with at least 10 points pooled and an interval above 0', () => {
    expect(pilotVerdict(interval(0.125, 0.06, 0.19))).toEqual({ clears: true, reason: '+12.5 points pooled, the interval [+6.0, +19.0] above 0' });
    expect(pilotVerdict(interval(0.1, 0.001, 0.2)).clears).toBe(true);
  });

  it('fails short of 10 points, or with an interval covering 0, and says which', () => {
    expect(pilotVerdict(interval(0.03, -0.003, 0.06))).toEqual({ clears: false, reason: '+3.0 points pooled, short of 10; the interval [-0.3, +6.0] covers 0' });
    expect(pilotVerdict(interval(0.05, 0.01, 0.09))).toEqual({ clears: false, reason: '+5.0 points pooled, short of 10' });
    expect(pilotVerdict(interval(0.14, -0.01, 0.3))).toEqual({ clears: false, reason: 'the interval [-1.0, +30.0] covers 0' });
    expect(pilotVerdict(null).clears).toBe(false);
  });

  it('on synthetic runs: a wide gap clears, the same runs against themselves do not', () => {
    const random = rng(8);
    const rlvr = [0, 1, 2, 3, 4].map((s) => run(s, { '3': 0.1, '4': 0.05, '5': 0 }, random));
    const wide = [0, 1, 2, 3, 4].map((s) => run(s, { '3': 0.5, '4': 0.35, '5': 0.2 }, random));
    expect(pilotVerdict(namedLevelDifference(wide, rlvr, ['3', '4', '5']).pooled).clears).toBe(true);
    const same = pilotVerdict(namedLevelDifference(rlvr, rlvr, ['3', '4', '5']).pooled);
    expect(same).toEqual({ clears: false, reason: '+0.0 points pooled, short of 10; the interval [+0.0, +0.0] covers 0' });
  });

  it('is written out with the bar, per level and pooled, cleared or failed', () => {
    const record: PilotRecord = {
      kind: 'pilot', levels: ['3', '4'], bar: PILOT_BAR.text, model: 'm', steps: 30, seeds: [1000, 1001], methods: ['rlvr', CEILING.name],
      seedProblems: 's', ceilingSeeds: 'c', validation: 'v', validationLimit: 400, resamples: 10_000, startedAt: '2026-11-27T23:00:00Z',
      result: { ...pilotVerdict(interval(0.03, -0.003, 0.06)), pooled: interval(0.03, -0.003, 0.06), perLevel: { '3': interval(0.05, 0, 0.1), '4': null }, finishedAt: 'x' },
    };
    const text = pilotSection(record).join('\n');
    expect(text).toContain('seeds 1000-1001, on the levels 3-4 named at its start (2026-11-27T23:00:00Z)');
    expect(text).toContain('- pooled: +3.0 [-0.3, +6.0], inside the noise (240 problems, 5 and 5 seeds, paired, 10,000 resamples)');
    expect(text).toContain("- level 4: no problem of it in both methods' outcomes");
    expect(text).toContain(`**Fails the bar** (${PILOT_BAR.text}): +3.0 points pooled, short of 10; the interval [-0.3, +6.0] covers 0.`);
    expect(pilotSection({ ...record, result: null }).join('\n')).toContain('Not finished: no verdict yet.');
  });
});

describe('the primary comparison', () => {
  const entries = ['sage', 'rlvr', 'sage-verified-problems'];

  it('reads A:B of two methods, each refusal one line', () => {
    expect(parsePrimary('sage-verified-problems:rlvr', entries)).toEqual({ a: 'sage-verified-problems', b: 'rlvr' });
    expect(parsePrimary('sage', entries)).toBe('--primary sage: expected METHOD:BASELINE, e.g. sage-verified-problems:rlvr');
    expect(parsePrimary('sage:mae', entries)).toBe('--primary sage:mae: no method mae (one of sage, rlvr, sage-verified-problems)');
    expect(parsePrimary('rlvr:rlvr', entries)).toBe('--primary rlvr:rlvr: a method against itself');
    expect(parsePrimary('a:b:c', entries)).toMatch(/expected METHOD:BASELINE/);
  });

  const plan: ComparisonPlan = { kind: 'comparison', primary: 'sage:rlvr', levels: ['3', '4', '5'], pilot: null, methods: ['sage', 'rlvr'], seeds: [0, 1], steps: 60, model: 'm', resamples: 10_000, recordedAt: 'T', runsBefore: 0 };
  /** sage − rlvr on the plan's levels from two seeds of synthetic runs, sage ahead at every level. */
  const random = rng(2);
  const figures = namedLevelDifference(
    [0, 1].map((s) => run(s, { '3': 0.5, '4': 0.3, '5': 0.1 }, random)),
    [0, 1].map((s) => run(s, { '3': 0.2, '4': 0.1, '5': 0 }, random)),
    plan.levels,
  );

  it('comes first in the report, named before the runs or said to be not; all else exploratory', () => {
    const text = planSection(plan, null, figures).join('\n');
    expect(text.indexOf('**Primary comparison**')).toBeLessThan(text.indexOf('## Exploratory'));
    expect(text).toContain('**Primary comparison**, named before the runs started (T): sage − rlvr, the Solver alone, final, levels 3-5 pooled: +');
    expect(text).toContain('Per named level (exploratory): 3: +');
    expect(text).toContain('**Pilot:** none stated');
    expect(planSection({ ...plan, runsBefore: 3 }, null, figures).join('\n')).toContain('named after 3 runs had started (not before the runs: read it as exploratory too)');
    expect(planSection(null, null, null).join('\n')).toContain('**Primary comparison:** none named before the runs started');
  });

  it('is read against the ceiling\'s headroom: met with the interval above 0 and at least half of the gap', () => {
    const gap = { source: 'the pilot\'s gap', gap: interval(0.465, 0.383, 0.544) };
    expect(goalVerdict(interval(0.246, 0.171, 0.322), gap)).toBe(
      "against the pilot's gap of +46.5 [+38.3, +54.4], half +23.3: met, the estimate +24.6 is 53% of it; the interval's low end +17.1 is below half",
    );
    expect(goalVerdict(interval(0.3, 0.25, 0.35), gap)).toMatch(/: met, the estimate \+30\.0 is 65% of it; the whole interval is above half$/);
    expect(goalVerdict(interval(0.2, 0.1, 0.3), gap)).toMatch(/: not met, the estimate \+20\.0 is 43% of it \(short of half\)$/);
    expect(goalVerdict(interval(0.3, -0.01, 0.6), gap)).toMatch(/: not met, .* \(the interval covers 0\)$/);
    expect(goalVerdict(interval(0.3, 0.2, 0.4), { source: 'x', gap: interval(-0.02, -0.05, 0.01) })).toBe('against x of -2.0 [-5.0, +1.0], half -1.0: no headroom there to close');
    expect(goalVerdict(interval(0.3, 0.2, 0.4), { source: 'x', gap: null })).toMatch(/no figure/);
    // The comparison's own gap also gives the share drawn with it as one bootstrap, met or not.
    const share = { ...interval(0.53, 0.37, 0.69), seeds: [5, 5, 5] };
    expect(goalVerdict(interval(0.246, 0.171, 0.322), { ...gap, share })).toMatch(/is below half \(drawn as one bootstrap with the gap, the share closed is 53% \[37%, 69%\]\)$/);
    expect(goalVerdict(interval(0.2, 0.1, 0.3), { ...gap, share })).toMatch(/\(short of half\) \(drawn as one bootstrap with the gap, the share closed is 53% \[37%, 69%\]\)$/);
    // At exactly half, the goal is met: "at least half".
    expect(goalVerdict(interval(0.2, 0.1, 0.3), { source: 'x', gap: interval(0.4, 0.3, 0.5) })).toMatch(/: met, the estimate \+20\.0 is 50% of it/);
  });

  it('states the goal after the primary figure, one verdict a headroom, only where there is a headroom', () => {
    const heads = [{ source: 'the pilot\'s gap', gap: interval(0.465, 0.383, 0.544) }, { source: 'this comparison\'s own gap', gap: interval(0.3, 0.2, 0.4) }];
    const text = planSection(plan, null, figures, heads).join('\n');
    const goal = text.split('\n').find((l) => l.startsWith('**Goal**'))!;
    expect(goal).toBe(`**Goal** (${PRIMARY_GOAL.text}): ${heads.map((h) => goalVerdict(figures.pooled!, h)).join('; ')}.`);
    expect(text.indexOf('**Primary comparison**')).toBeLessThan(text.indexOf('**Goal**'));
    expect(text.indexOf('**Goal**')).toBeLessThan(text.indexOf('## Exploratory'));
    expect(planSection(plan, null, figures).join('\n')).not.toContain('**Goal**');
    expect(planSection(plan, null, null, heads).join('\n')).not.toContain('**Goal**');
  });
});
