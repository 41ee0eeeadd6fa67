/** The rewards of section 4, one function per role; every constant from RewardConfig. */
import type { MethodConfig, RewardConfig } from './config';

/** A Critic score for its consumer: unparsable (null) counts as `unparsableScore`. */
export function scoreOrDefault(score: number | null, c: RewardConfig): number {
  return score ?? c.unparsableScore;
}

/**
 * What became of a proposal, for its reward: admitted (s_q ≥ alpha, a usable validator, not a
 * duplicate); below alpha (otherwise valid); invalid (unparsable, an unusable validator — a
 * claimed answer that is wrong, tests failing on the proposal's own solution — or a duplicate).
 */
export type ProposalOutcome = { kind: 'admitted'; solverPassRate: number } | { kind: 'below-alpha' } | { kind: 'invalid' };

/**
 * The Challenger's difficulty term r_d from the Solver's pass rate on an admitted problem, by
 * name (LoopSettings.difficulty), one small function each as the advantage estimators:
 *   paper  1 − pass rate, the paper's literal formula: a problem nobody solves (an unreadable
 *          statement banked on a wrong claim included) pays the most.
 *   band   AZR's learnability band: 0 when every attempt passes or none does (nothing to
 *          learn from either), else 1 − pass rate.
 */
export const DIFFICULTY_FUNCTIONS = {
  paper: (passRate) => 1 - passRate,
  band: (passRate) => (passRate <= 0 || passRate >= 1 ? 0 : 1 - passRate),
} as const satisfies Record<string, (passRate: number) => number>;

export type DifficultyName = keyof typeof DIFFICULTY_FUNCTIONS;
export const DIFFICULTY_NAMES = Object.keys(DIFFICULTY_FUNCTIONS) as DifficultyName[];

/**
 * The paper's Challenger reward: admitted, r_c = ⅓ s_q + ⅓ r_d + ⅓ r_f with r_d the named
 * difficulty of the Solver's pass rate (the paper's: 1 − it); below alpha the difficulty term
 * is removed (⅓ s_q + ⅓ r_f, not renormalised); an invalid proposal earns no quality or
 * difficulty credit (⅓ r_f − the penalty). So no rejected proposal earns more than an admitted
 * one with the same format score, whichever difficulty.
 */
export function challengerReward(x: { quality: number | null; format: number; outcome: ProposalOutcome }, c: RewardConfig, difficulty: DifficultyName): number {
  const o = x.outcome;
  if (o.kind === 'invalid') return c.challengerFallback.format * x.format - c.invalidPenalty;
  const sq = scoreOrDefault(x.quality, c);
  if (o.kind === 'below-alpha') return c.challengerFallback.quality * sq + c.challengerFallback.format * x.format;
  const w = c.challenger;
  return w.quality * sq + w.difficulty * DIFFICULTY_FUNCTIONS[difficulty](o.solverPassRate) + w.format * x.format;
}

/** r_p = λ_plan s_p + λ_f r_f. */
export function plannerReward(x: { planScore: number | null; format: number }, c: RewardConfig): number {
  return c.planner.plan * scoreOrDefault(x.planScore, c) + c.planner.format * x.format;
}

/**
 * What a Planner reward reads of its plan: the Critic's score, and what the environment computes
 * of the plan (`right`: true, false, null for a missing plan or one it cannot read; undefined
 * where it cannot check the problem at all: a code problem, a question with no answer).
 */
export interface PlanOutcome {
  planScore: number | null;
  right: boolean | null | undefined;
  format: number;
}

/**
 * The Planner's reward under the grounded lever (method `plannerReward` 'grounded'): the plan
 * term is the environment's verdict where it can check the problem (a missing or unreadable plan
 * earns no plan credit either), the Critic's score where it cannot.
 */
export function groundedPlannerReward(x: PlanOutcome, c: RewardConfig): number {
  if (x.right === undefined) return plannerReward(x, c);
  return c.planner.plan * (x.right ? 1 : 0) + c.planner.format * x.format;
}

/** The Planner's rewards by name (MethodConfig.plannerReward): the paper's, from the Critic's score, and the grounded lever's. */
export const PLANNER_REWARDS: Record<MethodConfig['plannerReward'], (x: PlanOutcome, c: RewardConfig) => number> = {
  critic: plannerReward,
  grounded: groundedPlannerReward,
};

/** Whether the plan reaches the Solver: s_p ≥ beta (with beta = 0 every plan does, one scored 1/10 included). */
export function passesPlanGate(planScore: number | null, c: RewardConfig): boolean {
  return scoreOrDefault(planScore, c) >= c.beta;
}

/** The plan's score as the Solver's reward sees it: s̃_p = s_p if s_p ≥ beta, else 0. */
export function gatedPlanScore(planScore: number | null, c: RewardConfig): number {
  return passesPlanGate(planScore, c) ? scoreOrDefault(planScore, c) : 0;
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

/**
 * The Critic's reward for a plan's score under the grounded lever (method `criticReward`
 * 'grounded-plans'): agreement · (1 − |s_p − o|) + format · r_f, with o = 1 when the environment
 * computes the problem's answer from the plan and 0 when it computes another (planVerdict). A
 * plan it cannot read (o null) or an unparsable score keeps the format share alone: the
 * agreement term removed, not renormalised, as r_c below alpha.
 */
export function groundedCriticReward(x: { score: number | null; right: boolean | null; format: number }, c: RewardConfig): number {
  const g = c.criticGrounded;
  const agreement = x.score === null || x.right === null ? 0 : 1 - Math.abs(x.score - (x.right ? 1 : 0));
  return g.agreement * agreement + g.format * x.format;
}
