import { describe, expect, it } from 'vitest';
import { DEFAULT_REWARDS as C, METHODS } from './config';
import { challengerReward, criticReward, gatedPlanScore, judgedSolverReward, plannerReward, solverReward } from './rewards';
import { taskRelativeAdvantages, WHITEN_EPS } from './advantages';

describe('rewards (section 4, paper defaults)', () => {
  it('Challenger: thirds with a usable validator and s_q ≥ alpha', () => {
    expect(challengerReward({ quality: 0.8, solverPassRate: 0.4, format: 1, validatorUsable: true }, C)).toBeCloseTo((0.8 + 0.6 + 1) / 3, 12);
    expect(challengerReward({ quality: 0.7, solverPassRate: 1, format: 0.5, validatorUsable: true }, C)).toBeCloseTo((0.7 + 0 + 0.5) / 3, 12);
  });

  it('Challenger: halves below alpha, with an unusable validator, or with no Solver attempts', () => {
    expect(challengerReward({ quality: 0.6, solverPassRate: 0, format: 1, validatorUsable: true }, C)).toBeCloseTo(0.8, 12);
    expect(challengerReward({ quality: 0.9, solverPassRate: 0, format: 1, validatorUsable: false }, C)).toBeCloseTo(0.95, 12);
    expect(challengerReward({ quality: 0.9, solverPassRate: null, format: 0, validatorUsable: true }, C)).toBeCloseTo(0.45, 12);
  });

  it('Challenger: an unparsable quality score counts as 0.5, below alpha', () => {
    expect(challengerReward({ quality: null, solverPassRate: 0, format: 1, validatorUsable: true }, C)).toBeCloseTo(0.75, 12);
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

describe('Task-Relative REINFORCE++ advantages', () => {
  it('whitens each (role, task) group separately with the unbiased std', () => {
    const rollouts = [
      { group: 'solver/math', reward: 1 },
      { group: 'solver/math', reward: 0 },
      { group: 'solver/math', reward: 0.5 },
      { group: 'critic/problem', reward: 10 },
      { group: 'critic/problem', reward: 20 },
    ];
    const { advantages, groups } = taskRelativeAdvantages(rollouts);
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
    const { advantages } = taskRelativeAdvantages([
      { group: 'a', reward: 0.3 },
      { group: 'b', reward: 0.7 },
      { group: 'b', reward: 0.7 },
      { group: 'c', reward: 0.1 + 0.2 },
      { group: 'c', reward: 0.3 },
    ]);
    expect([...advantages]).toEqual([0, 0, 0, 0, 0]);
  });

  it('refuses a non-finite reward', () => {
    expect(() => taskRelativeAdvantages([{ group: 'a', reward: Number.NaN }])).toThrow(/reward NaN/);
  });
});
