/** The rewards of section 4, one function per role; every constant from RewardConfig. */
import type { RewardConfig } from './config';

/** A Critic score for its consumer: unparsable (null) counts as `unparsableScore`. */
export function scoreOrDefault(score: number | null, c: RewardConfig): number {
  return score ?? c.unparsableScore;
}

/**
 * r_c = ⅓ s_q + ⅓ r_d + ⅓ r_f when s_q ≥ alpha and the validator is usable, otherwise
 * ½ s_q + ½ r_f. r_d = 1 − the Solver's pass rate on the new problem.
 */
export function challengerReward(
  x: { quality: number | null; solverPassRate: number | null; format: number; validatorUsable: boolean },
  c: RewardConfig,
): number {
  const sq = scoreOrDefault(x.quality, c);
  if (sq >= c.alpha && x.validatorUsable && x.solverPassRate !== null) {
    const w = c.challenger;
    return w.quality * sq + w.difficulty * (1 - x.solverPassRate) + w.format * x.format;
  }
  const w = c.challengerFallback;
  return w.quality * sq + w.format * x.format;
}

/** r_p = λ_plan s_p + λ_f r_f. */
export function plannerReward(x: { planScore: number | null; format: number }, c: RewardConfig): number {
  return c.planner.plan * scoreOrDefault(x.planScore, c) + c.planner.format * x.format;
}

/** The plan's score as the Solver's reward sees it: s̃_p = s_p if s_p ≥ beta, else 0. */
export function gatedPlanScore(planScore: number | null, c: RewardConfig): number {
  const sp = scoreOrDefault(planScore, c);
  return sp >= c.beta ? sp : 0;
}

/**
 * r_s = 0.2 s̃_p + 0.6 s_gt + 0.2 r_f, with s_gt the validator's verdict (1/0, or the pass
 * fraction of test cases). Without a plan (no Planner in the method) s̃_p is 0.
 */
export function solverReward(x: { planScore: number | null | undefined; correct: number; format: number }, c: RewardConfig): number {
  const plan = x.planScore === undefined ? 0 : gatedPlanScore(x.planScore, c);
  return c.solver.plan * plan + c.solver.correct * x.correct + c.solver.format * x.format;
}

/** MAE's Solver: r_s = 0.5 s_judge + 0.5 r_f. */
export function judgedSolverReward(x: { judgeScore: number | null; format: number }, c: RewardConfig): number {
  return c.solverJudge.judge * scoreOrDefault(x.judgeScore, c) + c.solverJudge.format * x.format;
}

/** The Critic is rewarded for its format alone: it never judges correctness. */
export function criticReward(x: { format: number }): number {
  return x.format;
}
