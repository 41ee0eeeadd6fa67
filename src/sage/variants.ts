/**
 * The step's variants, one small named function each in a registry, as the advantage
 * estimators (advantages.ts) and the difficulty terms and Planner rewards (rewards.ts) are, and
 * as verl's core_algos.py has them: a method field or a setting names the variant, so the step
 * reads as the paper's algorithm and a new variant is a new entry here, not a branch there.
 *   JUDGING              who tells right from wrong: the validators, or validator-free (MAE) the Judge
 *   SOLVER_REWARDS       the Solver's reward: the paper's from the validators, or MAE's from the Judge
 *   CRITIC_PLAN_REWARDS  the Critic's reward for a plan's score: its format alone, or grounded in
 *                        what the environment computes of the plan
 *   TRAINING_DRAWS       the training batch: from the bank, the seeds alone (RLVR), or seed parity
 */
import type { Problem } from '../data/problem';
import type { BankEntry, Origin, ProblemBank, RejectReason, SamplingMode } from './bank';
import type { AnswerSource, MethodConfig, RewardConfig } from './config';
import type { Completion, LoopSettings, Phase, Validators } from './loopContract';
import type { Parsed } from './parse';
import { criticReward, groundedCriticReward, judgedSolverReward, scoreOrDefault, solverReward } from './rewards';
import { unverifiedProblem } from './validators';
import type { CriticTemplate } from './templates';

/** What a rollout is about: its problem's task kind (its advantage group is role/kind) and where the problem came from. */
export interface About {
  kind: Problem['kind'];
  origin: Origin;
}

/** A Challenger's proposal (admitted or not) is a generated problem. */
export const generated = (kind: Problem['kind']): About => ({ kind, origin: 'generated' });


/** A Critic rollout's reward, and what the environment says of the item where that reward reads it. */
export interface CriticJudgement {
  reward: number;
  verdict?: string;
}

/** The reward of the Critic's output on item `item`, from its score (null: unparsable) and its format (0 when the score does not parse). */
export type CriticRewarding = (x: { score: number | null; format: number }, item: number) => CriticJudgement;

/** The Critic's reward when it never judges correctness: its format alone. */
export const criticFormatOnly = (x: { format: number }): CriticJudgement => ({ reward: criticReward(x) });

/** What a variant may ask of the step in flight. */
export interface StepActions {
  /** The Critic's scores of the items (null: unparsable), each kept as a Critic rollout of the step. */
  critic(template: CriticTemplate, items: Record<string, string>[], about: About[], phase: number, rewarding?: CriticRewarding): Promise<(number | null)[]>;
  /** A call to the validators, its time counted as theirs. */
  validate<T>(f: (v: Validators) => Promise<T>): Promise<T>;
  phase(phase: Phase): Promise<void>;
}

/** A well-formed proposal, as it is checked. */
export interface ProposalToCheck {
  parsed: Parsed;
  kind: Problem['kind'];
  id: string;
}

export type Checked = { problem: Problem } | { unusable: string };

export interface Judging {
  /** Why the bank rejects a well-formed proposal that yields no usable problem. */
  unusable: RejectReason;
  /** Each proposal as a problem that can be checked, or why its validator is unusable. */
  check(act: StepActions, proposals: readonly ProposalToCheck[], answers: AnswerSource): Promise<Checked[]>;
  /** Each attempt at a new problem marked in [0, 1]: the pass rate of its difficulty. */
  grade(act: StepActions, attempts: readonly Problem[], outputs: readonly Completion[], c: RewardConfig): Promise<number[]>;
  /**
   * Each training rollout of the Solver marked in [0, 1], for its problem's pass rate in the
   * bank, from the validators' verdicts (`correct`) or the Judge's scores (`judged`).
   */
  passed(correct: readonly (number | null)[], judged: readonly (number | null)[], c: RewardConfig): number[];
}

export const JUDGING = {
  validators: {
    unusable: 'validator',
    check: (act, proposals, answers) => act.validate((v) => Promise.all(proposals.map((p) => v.propose(p.parsed.fields, p.kind, p.id, answers)))),
    grade: (act, attempts, outputs) => act.validate((v) => Promise.all(outputs.map((c, k) => v.judge(attempts[k]!, c.text)))),
    // Every problem has a reference here: only a validator-free run takes seeds without one.
    passed: (correct) => correct.map((c) => c!),
  },
  // Nothing is computed or run: a well-formed proposal is taken on trust, so one that yields no
  // problem is not of its kind's form (unparsable), and the Judge's scores stand for verdicts.
  judge: {
    unusable: 'unparsable',
    check: async (_, proposals) => proposals.map((p) => unverifiedProblem(p.parsed.fields, p.kind, p.id)),
    grade: async (act, attempts, outputs, c) => {
      const scores = await act.critic('criticAnswer', attempts.map((p, k) => ({ problem: p.statement, answer: outputs[k]!.text })), attempts.map((p) => generated(p.kind)), 8);
      return scores.map((x) => scoreOrDefault(x, c));
    },
    passed: (_, judged, c) => judged.map((x) => scoreOrDefault(x, c)),
  },
} as const satisfies Record<string, Judging>;

/** The method's judging: the Judge's where the method has no validator (MAE). */
export function judgingOf(m: MethodConfig): Judging {
  return JUDGING[m.validatorFree ? 'judge' : 'validators'];
}

/** A Solver rollout as its reward reads it; `planScore` undefined: the method has no Planner; `judged` undefined: the Judge was not asked. */
export interface SolverOutcome {
  planScore: number | null | undefined;
  correct: number | null;
  judged: number | null | undefined;
  format: number;
}

export interface SolverRewarding {
  /** The Judge's scores of the answers where the reward reads them; otherwise the Judge is not asked. */
  judge(act: StepActions, items: Record<string, string>[], about: About[]): Promise<(number | null)[]>;
  reward(x: SolverOutcome, c: RewardConfig): number;
}

/** The Solver's rewards by name (MethodConfig.solverReward). */
export const SOLVER_REWARDS: Record<MethodConfig['solverReward'], SolverRewarding> = {
  sage: {
    judge: async () => [],
    reward: (x, c) => solverReward({ planScore: x.planScore, correct: x.correct!, format: x.format }, c),
  },
  // MAE: the Critic, as Judge, also scores answers, and that score is the Solver's reward.
  judge: {
    judge: async (act, items, about) => {
      await act.phase('judge-answers');
      return act.critic('criticAnswer', items, about, 7);
    },
    reward: (x, c) => judgedSolverReward({ judgeScore: x.judged ?? null, format: x.format }, c),
  },
};

/** The Critic's rewards for its plan scores by name (MethodConfig.criticReward); `right`: what the environment computes of the plan (planVerdict). */
export const CRITIC_PLAN_REWARDS: Record<MethodConfig['criticReward'], (x: { score: number | null; right: boolean | null; format: number }, c: RewardConfig) => CriticJudgement> = {
  format: criticFormatOnly,
  'grounded-plans': (x, c) => ({
    reward: groundedCriticReward(x, c),
    ...(x.right === null ? {} : { verdict: x.right ? 'plan computes the answer' : 'plan computes another value' }),
  }),
};

const isSeed = (e: BankEntry) => e.provenance.origin === 'seed';

export interface TrainingDraw {
  /** The most problems a batch of `n` holds. */
  most(n: number): number;
  draw(bank: ProblemBank, n: number, random: () => number, sampling: SamplingMode): BankEntry[];
}

export const TRAINING_DRAWS = {
  bank: { most: (n) => n, draw: (bank, n, random, sampling) => bank.sample(n, random, sampling) },
  // RLVR: a method that writes no problems trains on its seeds alone.
  seeds: { most: (n) => n, draw: (bank, n, random, sampling) => bank.sample(n, random, sampling, isSeed) },
  // The Solver trains on as many seeds as RLVR (drawn as RLVR draws them), the usual draw's generated problems (at most n) on top.
  'seed-parity': {
    most: (n) => 2 * n,
    draw: (bank, n, random, sampling) => [...bank.sample(n, random, sampling).filter((e) => !isSeed(e)), ...bank.sample(n, random, sampling, isSeed)],
  },
} as const satisfies Record<string, TrainingDraw>;

/** The settings' training batch: seed parity only matters where the method grows its bank. */
export function trainingDraw(s: Pick<LoopSettings, 'method' | 'seedParity'>): TrainingDraw {
  return TRAINING_DRAWS[!s.method.evolveBank ? 'seeds' : s.seedParity ? 'seed-parity' : 'bank'];
}
