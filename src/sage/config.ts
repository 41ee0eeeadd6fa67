/**
 * Methods as data: a method is a set of roles, reward weights and which roles train, so an
 * ablation is a changed field, not a code path. Every constant of section 4 lives here.
 */

export const ROLES = ['challenger', 'planner', 'solver', 'critic'] as const;
export type RoleName = (typeof ROLES)[number];

export interface RewardConfig {
  /** Quality threshold: a problem is admitted, and earns the difficulty term, only if s_q ≥ alpha. */
  alpha: number;
  /** Plan gate: the Solver sees the plan, and is rewarded for it, only if s_p ≥ beta. */
  beta: number;
  /** r_s = plan·s̃_p + correct·s_gt + format·r_f. */
  solver: { plan: number; correct: number; format: number };
  /** MAE: r_s = judge·s_judge + format·r_f (used when the method's solverReward is 'judge'). */
  solverJudge: { judge: number; format: number };
  /** r_c of an admitted problem (s_q ≥ alpha, a usable validator, not a duplicate). */
  challenger: { quality: number; difficulty: number; format: number };
  /**
   * r_c below alpha: the difficulty term removed, the weights not renormalised. An invalid
   * proposal (unparsable, an unusable validator, a duplicate) earns only `format` · r_f −
   * `invalidPenalty`: no quality or difficulty credit.
   */
  challengerFallback: { quality: number; format: number };
  /** Subtracted from an invalid proposal's reward (AZR-style; 0: its format share alone). */
  invalidPenalty: number;
  /** r_p = plan·s_p + format·r_f. */
  planner: { plan: number; format: number };
  /** What an unparsable Critic score counts as for its consumer. */
  unparsableScore: number;
  /** The Critic's plan reward under the grounded lever: agreement·(1 − |s_p − o|) + format·r_f (groundedCriticReward). */
  criticGrounded: { agreement: number; format: number };
}

export interface MethodConfig {
  name: string;
  /** One line for the settings panel. */
  summary: string;
  /** Roles that generate in a step. */
  roles: readonly RoleName[];
  /** Roles whose rollouts enter the policy-gradient update. */
  trained: readonly RoleName[];
  /** 'sage': validators decide the Solver's correctness; 'judge': MAE's judge scores answers. */
  solverReward: 'sage' | 'judge';
  /** New problems from the Challenger enter the bank (false: train on the seeds only). */
  evolveBank: boolean;
  /**
   * MAE: no validator anywhere. A proposal is banked on the Judge's quality score alone (taken
   * on trust, nothing computed or run), its difficulty is 1 − the Judge's mean score of the
   * Solver's attempts, and the Solver is rewarded by the Judge (solverReward 'judge').
   */
  validatorFree: boolean;
  /**
   * A new math problem's reference answer: 'claimed', the Challenger's, checked against what
   * the environment computes where it can read the statement (a wrong claim rejects the
   * problem; the paper's SAGE); 'computed', the environment's value wherever it can read the
   * statement, the claim unchecked (AZR's executor computing a program's output); 'verified',
   * only statements the environment reads whole (a curriculum style, its words and expression
   * agreeing) enter, answered by it: an incoherent statement ("Di adds 2 to 4: 0+4=?") or one
   * it cannot read at all ("Di takes 8 Hos and yset?", claimed 34) is refused, as AZR refuses a
   * program that does not run.
   */
  answers: AnswerSource;
  /**
   * The Critic's reward: 'format', for its format alone (the paper's: it never judges
   * correctness); 'grounded-plans', its plan scores also for agreeing with what the environment
   * computes of the plan (whether it yields the problem's answer), so that the plan gate and the
   * Planner's reward carry information the loop can learn.
   */
  criticReward: 'format' | 'grounded-plans';
  /**
   * The Planner's plan term: 'critic', the Critic's score of the plan (the paper's); 'grounded',
   * where the environment can check the problem (math with a reference answer), 1 when it
   * computes the answer from the plan and 0 otherwise (an unreadable plan included), the
   * Critic's score elsewhere: a wrong plan the Critic likes no longer pays as a right one.
   */
  plannerReward: 'critic' | 'grounded';
  rewards: RewardConfig;
}

export type AnswerSource = 'claimed' | 'computed' | 'verified';

export const DEFAULT_REWARDS: RewardConfig = {
  alpha: 0.7,
  beta: 0.3,
  solver: { plan: 0.2, correct: 0.6, format: 0.2 },
  solverJudge: { judge: 0.5, format: 0.5 },
  challenger: { quality: 1 / 3, difficulty: 1 / 3, format: 1 / 3 },
  challengerFallback: { quality: 1 / 3, format: 1 / 3 },
  invalidPenalty: 0,
  planner: { plan: 0.8, format: 0.2 },
  unparsableScore: 0.5,
  criticGrounded: { agreement: 0.8, format: 0.2 },
};

const SAGE: MethodConfig = {
  name: 'sage',
  summary: 'SAGE: Challenger, Planner, Solver and Critic, all trained',
  roles: ROLES,
  trained: ROLES,
  solverReward: 'sage',
  evolveBank: true,
  validatorFree: false,
  answers: 'claimed',
  criticReward: 'format',
  plannerReward: 'critic',
  rewards: DEFAULT_REWARDS,
};

/** SAGE with one role generating as usual but left out of the update. */
function frozen(role: RoleName): MethodConfig {
  return { ...SAGE, name: `sage-freeze-${role}`, summary: `SAGE with the ${role}'s training frozen`, trained: ROLES.filter((r) => r !== role) };
}

/** The method presets of the lab and `npm run evolve --method`. */
export const METHODS = {
  sage: SAGE,
  mae: {
    name: 'mae',
    summary: 'MAE: Proposer, Solver and Judge (the Critic scores problems and answers), no Planner, no validator',
    roles: ['challenger', 'solver', 'critic'],
    trained: ['challenger', 'solver', 'critic'],
    solverReward: 'judge',
    evolveBank: true,
    validatorFree: true,
    answers: 'claimed',
    criticReward: 'format',
    plannerReward: 'critic',
    rewards: DEFAULT_REWARDS,
  },
  rlvr: {
    name: 'rlvr',
    summary: 'RLVR baseline: the Solver alone on the seeds, rewarded by the validators',
    roles: ['solver'],
    trained: ['solver'],
    solverReward: 'sage',
    evolveBank: false,
    validatorFree: false,
    answers: 'claimed',
    criticReward: 'format',
    plannerReward: 'critic',
    // No plan: correctness and format keep SAGE's 3 : 1 ratio.
    rewards: { ...DEFAULT_REWARDS, solver: { plan: 0, correct: 0.75, format: 0.25 } },
  },
  'sage-no-quality-filter': {
    ...SAGE,
    name: 'sage-no-quality-filter',
    summary: 'SAGE without the quality filter (alpha = 0)',
    rewards: { ...DEFAULT_REWARDS, alpha: 0 },
  },
  'sage-no-plan-gate': {
    ...SAGE,
    name: 'sage-no-plan-gate',
    summary: 'SAGE without the plan gate (beta = 0: every plan reaches the Solver)',
    rewards: { ...DEFAULT_REWARDS, beta: 0 },
  },
  'sage-computed-answers': {
    ...SAGE,
    name: 'sage-computed-answers',
    summary: 'SAGE with new problems answered by the environment where it reads the statement (AZR-style), not by the Challenger\'s claim',
    answers: 'computed',
  },
  'sage-verified-problems': {
    ...SAGE,
    name: 'sage-verified-problems',
    summary: 'SAGE admitting only new problems the environment reads whole (a curriculum style), answered by it: no incoherent or unreadable statement reaches the bank',
    answers: 'verified',
  },
  'sage-grounded-plans': {
    ...SAGE,
    name: 'sage-grounded-plans',
    summary: 'SAGE with the Critic\'s plan scores rewarded for agreeing with the environment (does the plan compute the problem\'s answer?)',
    criticReward: 'grounded-plans',
  },
  'sage-grounded-planner': {
    ...SAGE,
    name: 'sage-grounded-planner',
    summary: 'SAGE with plans grounded in the environment: the Planner rewarded when its plan computes the problem\'s answer, the Critic for agreeing',
    criticReward: 'grounded-plans',
    plannerReward: 'grounded',
  },
  'sage-freeze-challenger': frozen('challenger'),
  'sage-freeze-planner': frozen('planner'),
  'sage-freeze-solver': frozen('solver'),
  'sage-freeze-critic': frozen('critic'),
} as const satisfies Record<string, MethodConfig>;

export type MethodName = keyof typeof METHODS;

/** The method a run uses unless one is chosen: the CLIs', the page's and a record's that names none. */
export const DEFAULT_METHOD = 'sage' satisfies MethodName;

/**
 * The methods a comparison runs unless told otherwise (`npm run compare` and the page's Runs
 * panel): SAGE, its RLVR baseline, SAGE without its quality filter, and MAE.
 */
export const COMPARED_METHODS: readonly MethodName[] = ['sage', 'rlvr', 'sage-no-quality-filter', 'mae'];
