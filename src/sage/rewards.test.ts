import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REWARDS as C, METHODS } from './config';
import { challengerReward, criticReward, DIFFICULTY_FUNCTIONS, DIFFICULTY_NAMES, gatedPlanScore, groundedCriticReward, groundedPlannerReward, judgedSolverReward, plannerReward, solverReward } from './rewards';
import { ADVANTAGE_NAMES, computeAdvantages, WHITEN_EPS } from './advantages';

describe('rewards (section 4, paper defaults)', () => {
  it('Challenger: thirds for an admitted problem', () => {
    const admitted = (solverPassRate: number) => ({ kind: 'admitted', solverPassRate }) as const;
    expect(challengerReward({ quality: 0.8, format: 1, outcome: admitted(0.4) }, C, 'paper')).toBeCloseTo((0.8 + 0.6 + 1) / 3, 12);
    expect(challengerReward({ quality: 0.7, format: 0.5, outcome: admitted(1) }, C, 'paper')).toBeCloseTo((0.7 + 0 + 0.5) / 3, 12);
  });

  it('Challenger: below alpha the difficulty third is removed, not renormalised; an invalid proposal earns its format third alone', () => {
    expect(challengerReward({ quality: 0.6, format: 1, outcome: { kind: 'below-alpha' } }, C, 'paper')).toBeCloseTo((0.6 + 1) / 3, 12);
    // An unparsable Critic score of a valid problem counts 0.5 for the Challenger, below alpha.
    expect(challengerReward({ quality: null, format: 1, outcome: { kind: 'below-alpha' } }, C, 'paper')).toBeCloseTo(0.5, 12);
    // A wrong claimed answer, failing tests, a duplicate or no problem at all: no quality credit, however well scored.
    expect(challengerReward({ quality: 0.9, format: 1, outcome: { kind: 'invalid' } }, C, 'paper')).toBeCloseTo(1 / 3, 12);
    expect(challengerReward({ quality: null, format: 0, outcome: { kind: 'invalid' } }, C, 'paper')).toBe(0);
    expect(challengerReward({ quality: 0.9, format: 1, outcome: { kind: 'invalid' } }, { ...C, invalidPenalty: 0.5 }, 'paper')).toBeCloseTo(1 / 3 - 0.5, 12);
  });

  it('Challenger: no rejected proposal earns more than any admitted one with the same format score (random scores, formats and difficulty terms)', () => {
    const unit = fc.double({ min: 0, max: 1, noNaN: true });
    const score = fc.option(unit, { nil: null });
    fc.assert(
      fc.property(unit, score, score, unit, unit, fc.constantFrom('below-alpha', 'invalid'), fc.constantFrom(...DIFFICULTY_NAMES), (format, admittedQ, rejectedQ, passRate, penalty, kind, difficulty) => {
        const config = { ...C, invalidPenalty: penalty };
        // Admitted means s_q ≥ alpha; below alpha means s_q < alpha (an unparsable score counts 0.5).
        const aq = Math.max(admittedQ ?? 1, C.alpha);
        const rq = kind === 'below-alpha' ? (rejectedQ === null ? null : Math.min(rejectedQ, C.alpha - 1e-9)) : rejectedQ;
        const admitted = challengerReward({ quality: aq, format, outcome: { kind: 'admitted', solverPassRate: passRate } }, config, difficulty);
        const rejected = challengerReward({ quality: rq, format, outcome: { kind } }, config, difficulty);
        return rejected <= admitted;
      }),
      { numRuns: 2000 },
    );
  });

  it('Challenger difficulty: the paper\'s 1 − pass rate, or the band, which pays nothing for a problem every attempt solves or none does', () => {
    expect(DIFFICULTY_NAMES).toEqual(['paper', 'band']);
    const unit = fc.double({ min: 0, max: 1, noNaN: true });
    const admitted = (solverPassRate: number) => ({ kind: 'admitted', solverPassRate }) as const;
    fc.assert(
      fc.property(unit, unit, unit, (quality, format, passRate) => {
        const reward = (difficulty: (typeof DIFFICULTY_NAMES)[number], rate = passRate) => challengerReward({ quality, format, outcome: admitted(rate) }, C, difficulty);
        const rest = C.challenger.quality * quality + C.challenger.format * format;
        // 'paper' is the literal formula; 'band' agrees with it strictly inside (0, 1).
        expect(reward('paper')).toBeCloseTo(rest + C.challenger.difficulty * (1 - passRate), 12);
        expect(reward('band')).toBeCloseTo(passRate > 0 && passRate < 1 ? reward('paper') : rest, 12);
        // Under the band, a problem nobody solves earns no difficulty credit (as one solved every time); one solved sometimes does.
        expect(reward('band', 0)).toBeCloseTo(rest, 12);
        expect(reward('band', 1)).toBeCloseTo(rest, 12);
        expect(DIFFICULTY_FUNCTIONS.band(passRate) > 0).toBe(passRate > 0 && passRate < 1);
        // Under the paper's, nobody solving it pays the most.
        expect(reward('paper', 0)).toBeGreaterThanOrEqual(reward('paper'));
      }),
      { numRuns: 1000 },
    );
  });

  it('Planner: lambda_plan · s_p + lambda_f · r_f, unparsable s_p as 0.5', () => {
    expect(plannerReward({ planScore: 1, format: 1 }, C)).toBeCloseTo(1, 12);
    expect(plannerReward({ planScore: 0.5, format: 0 }, C)).toBeCloseTo(0.4, 12);
    expect(plannerReward({ planScore: null, format: 1 }, C)).toBeCloseTo(0.6, 12);
  });

  it('Solver: 0.2 s̃_p + 0.6 s_gt + 0.2 r_f with the plan gated at beta', () => {
    expect(solverReward({ planScore: 0.9, correct: 1, format: 1 }, C)).toBeCloseTo(0.18 + 0.6 + 0.2, 12);
    expect(gatedPlanScore(0.29, C)).toBe(0);
    expect(gatedPlanScore(0.3, C)).toBe(0.3);
    expect(solverReward({ planScore: 0.29, correct: 0.5, format: 1 }, C)).toBeCloseTo(0.3 + 0.2, 12);
    expect(solverReward({ planScore: null, correct: 0, format: 0 }, C)).toBeCloseTo(0.2 * 0.5, 12);
    expect(solverReward({ planScore: undefined, correct: 1, format: 0 }, C)).toBeCloseTo(0.6, 12);
  });

  it('MAE Solver: 0.5 judge + 0.5 format; Critic: its format alone', () => {
    expect(judgedSolverReward({ judgeScore: 0.8, format: 1 }, C)).toBeCloseTo(0.9, 12);
    expect(judgedSolverReward({ judgeScore: null, format: 0 }, C)).toBeCloseTo(0.25, 12);
    expect(criticReward({ format: 0.75 })).toBe(0.75);
  });

  it('presets differ only in data: ablations change one field of SAGE', () => {
    expect(METHODS['sage-no-quality-filter'].rewards.alpha).toBe(0);
    expect(METHODS['sage-no-plan-gate'].rewards.beta).toBe(0);
    expect(METHODS['sage-freeze-critic'].trained).toEqual(['challenger', 'planner', 'solver']);
    expect(METHODS.mae.roles).not.toContain('planner');
    expect(METHODS.rlvr).toMatchObject({ roles: ['solver'], evolveBank: false });
    const r = METHODS.rlvr.rewards.solver;
    expect(r.plan + r.correct + r.format).toBeCloseTo(1, 12);
  });
});

describe('advantage estimators', () => {
  it('task-whiten (Task-Relative REINFORCE++) whitens each (role, task) group separately with the unbiased std', () => {
    const rollouts = [
      { task: 'solver/math', prompt: 'p1', reward: 1 },
      { task: 'solver/math', prompt: 'p1', reward: 0 },
      { task: 'solver/math', prompt: 'p2', reward: 0.5 },
      { task: 'critic/problem', prompt: 'q1', reward: 10 },
      { task: 'critic/problem', prompt: 'q2', reward: 20 },
    ];
    const { advantages, groups } = computeAdvantages(rollouts);
    const std = Math.sqrt((0.25 + 0.25 + 0) / 2);
    expect(advantages[0]).toBeCloseTo(0.5 / (std + WHITEN_EPS), 12);
    expect(advantages[1]).toBeCloseTo(-0.5 / (std + WHITEN_EPS), 12);
    expect(advantages[2]).toBe(0);
    expect(advantages[3]).toBeCloseTo(-5 / (Math.sqrt(50) + WHITEN_EPS), 12);
    expect(groups.map((g) => [g.group, g.count])).toEqual([['solver/math', 3], ['critic/problem', 2]]);
    // Within each group the advantages sum to zero with unit sample variance.
    expect(advantages[0]! + advantages[1]! + advantages[2]!).toBeCloseTo(0, 12);
  });

  it('gives zero, not NaN, for a group of one or of identical rewards', () => {
    for (const name of ADVANTAGE_NAMES) {
      const { advantages } = computeAdvantages(
        [
          { task: 'a', prompt: 'x', reward: 0.3 },
          { task: 'b', prompt: 'y', reward: 0.7 },
          { task: 'b', prompt: 'y', reward: 0.7 },
          { task: 'c', prompt: 'z', reward: 0.1 + 0.2 },
          { task: 'c', prompt: 'z', reward: 0.3 },
        ],
        name,
      );
      expect([...advantages], name).toEqual([0, 0, 0, 0, 0]);
    }
  });

  it('GRPO, RLOO and Dr. GRPO baseline each sample against the other samples of its prompt', () => {
    // Two prompts of one task, three samples and two.
    const rollouts = [1, 0, 0.5, 0.2, 0.6].map((reward, i) => ({ task: 'solver/math', prompt: i < 3 ? 'p' : 'q', reward }));
    const std = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + (x - xs.reduce((a, b) => a + b) / xs.length) ** 2, 0) / (xs.length - 1));
    const grpo = computeAdvantages(rollouts, 'grpo').advantages;
    expect(grpo[0]).toBeCloseTo(0.5 / (std([1, 0, 0.5]) + WHITEN_EPS), 12);
    expect(grpo[4]).toBeCloseTo(0.2 / (std([0.2, 0.6]) + WHITEN_EPS), 12);
    const rloo = computeAdvantages(rollouts, 'rloo').advantages;
    expect([...rloo].map((x) => Number(x.toFixed(12)))).toEqual([1 - 0.25, 0 - 0.75, 0.5 - 0.5, 0.2 - 0.6, 0.6 - 0.2].map((x) => Number(x.toFixed(12))));
    const dr = computeAdvantages(rollouts, 'dr-grpo').advantages;
    expect([...dr].map((x) => Number(x.toFixed(12)))).toEqual([0.5, -0.5, 0, -0.2, 0.2].map((x) => Number(x.toFixed(12))));
    // task-whiten pools both prompts.
    const all = [1, 0, 0.5, 0.2, 0.6];
    expect(computeAdvantages(rollouts).advantages[0]).toBeCloseTo((1 - 0.46) / (std(all) + WHITEN_EPS), 12);
  });

  it('counts the zero-spread groups per task, and drops them on request', () => {
    const rollouts = [
      { task: 'solver/math', prompt: 'p', reward: 1 },
      { task: 'solver/math', prompt: 'p', reward: 1 },
      { task: 'solver/math', prompt: 'q', reward: 0 },
      { task: 'solver/math', prompt: 'q', reward: 1 },
      { task: 'critic/math', prompt: 'r', reward: 1 },
    ];
    const kept = computeAdvantages(rollouts, 'grpo');
    expect(kept.spread).toEqual({ 'solver/math': { groups: 2, zero: 1 }, 'critic/math': { groups: 1, zero: 1 } });
    expect(kept.kept).toEqual([true, true, true, true, true]);
    const dropped = computeAdvantages(rollouts, 'grpo', { dropZeroSpread: true });
    expect(dropped.kept).toEqual([false, false, true, true, false]);
    expect([...dropped.advantages]).toEqual([...kept.advantages]);
  });

  it('refuses a non-finite reward', () => {
    expect(() => computeAdvantages([{ task: 'a', prompt: 'x', reward: Number.NaN }])).toThrow(/reward NaN/);
  });
});

describe('the grounded plan Critic (sage-grounded-plans)', () => {
  it('pays agreement with what the environment computes of the plan, and the format share alone where it cannot tell', () => {
    const g = C.criticGrounded;
    expect(groundedCriticReward({ score: 8 / 9, right: true, format: 1 }, C)).toBeCloseTo(g.agreement * (8 / 9) + g.format, 12);
    expect(groundedCriticReward({ score: 8 / 9, right: false, format: 1 }, C)).toBeCloseTo(g.agreement / 9 + g.format, 12);
    expect(groundedCriticReward({ score: 0.9, right: null, format: 1 }, C)).toBeCloseTo(g.format, 12);
    expect(groundedCriticReward({ score: null, right: true, format: 0 }, C)).toBe(0);
  });

  it('a score nearer the outcome never earns less, and no score of an unreadable plan earns more than a right call', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), fc.double({ min: 0, max: 1, noNaN: true }), (s1, s2, right, format) => {
        const o = right ? 1 : 0;
        const [near, far] = Math.abs(s1 - o) <= Math.abs(s2 - o) ? [s1, s2] : [s2, s1];
        expect(groundedCriticReward({ score: near, right, format }, C)).toBeGreaterThanOrEqual(groundedCriticReward({ score: far, right, format }, C));
        expect(groundedCriticReward({ score: s1, right: null, format }, C)).toBeLessThanOrEqual(groundedCriticReward({ score: o, right, format }, C));
      }),
      { numRuns: 500 },
    );
  });

  it('only the grounded methods reward the Critic and the Planner by it', () => {
    expect(Object.values(METHODS).filter((m) => m.criticReward === 'grounded-plans').map((m) => m.name)).toEqual(['sage-grounded-plans', 'sage-grounded-planner']);
    expect(Object.values(METHODS).filter((m) => m.plannerReward === 'grounded').map((m) => m.name)).toEqual(['sage-grounded-planner']);
  });

  it('a grounded Planner: a right plan always earns more than a wrong or unreadable one, whatever the Critic thinks; an unchecked problem keeps the Critic\'s score', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.option(fc.double({ min: 0, max: 1, noNaN: true })), fc.double({ min: 0, max: 1, noNaN: true }), (s1, s2, s3, format) => {
        const right = groundedPlannerReward({ planScore: s1, right: true, format }, C);
        expect(right).toBeGreaterThan(groundedPlannerReward({ planScore: s2, right: false, format }, C));
        expect(right).toBeGreaterThan(groundedPlannerReward({ planScore: s2, right: null, format }, C));
        expect(groundedPlannerReward({ planScore: s3, right: undefined, format }, C)).toBe(plannerReward({ planScore: s3, format }, C));
      }),
      { numRuns: 500 },
    );
    expect(groundedPlannerReward({ planScore: 1, right: false, format: 1 }, C)).toBeCloseTo(C.planner.format, 12);
  });
});
