/**
 * What the loop works over and with: the model it asks for generations and updates, the
 * validators that tell right from wrong, its settings and their defaults, and the phases of a
 * step. Apart from the step itself (loop.ts), so that the step's named variants and the
 * validators can speak of them without importing the step.
 */
import type { Problem } from '../data/problem';
import type { PolicyStepResult, Rollout } from '../train/policy';
import type { AdvantageName } from './advantages';
import type { SamplingMode } from './bank';
import type { AnswerSource, MethodConfig } from './config';
import type { DifficultyName } from './rewards';
import type { Templates } from './templates';

export interface GenerationRequest {
  prompts: string[];
  maxNewTokens: number;
  /** 0: greedy. */
  temperature: number;
  topK: number;
  topP: number;
  seed: number;
  stop: string[];
}

export interface Completion {
  text: string;
  promptIds: number[];
  completionIds: number[];
  /** Log-probs of the completion tokens at the sampling temperature (softmax(z / T), not truncated): the PPO ratio's denominator. */
  modelLogprobs: number[];
  /** True when the completion ran into its token limit (no stop string, no EOS): cut off. */
  truncated?: boolean;
}

/** One generation a run makes: its rows, how many distinct prompts among them, and a prompt as long as its longest. */
export interface GenerationHint {
  rows: number;
  distinct: number;
  prompt: string;
}

/** What a run will ask of the model, for tuning its kernels before the first step. */
export interface RunShapeHints {
  /** Every phase's generation and validation's. */
  generations: GenerationHint[];
  /** Whether the run updates the model. */
  trains: boolean;
}

/** What the loop needs of the engine: batched generation and one policy-gradient update. */
export interface LoopModel {
  generate(request: GenerationRequest): Promise<Completion[]>;
  /** One update at learning rate `lr`, log-probs under softmax(z / temperature): the distribution the rollouts were sampled from. */
  train(rollouts: Rollout[], update: { lr: number; temperature: number }): Promise<PolicyStepResult>;
  /** Tunes the kernels of every shape the run can use before it starts; returns how many were tuned. */
  prepare?(hints: RunShapeHints, onProgress: (done: number, total: number) => void): Promise<number>;
}

/** Decides right and wrong without a human. */
export interface Validators {
  /** The Solver's answer judged: 1/0, or the pass fraction of the problem's tests. */
  judge(problem: Problem, response: string): Promise<number>;
  /** A Challenger's output as a checkable Problem, or why its validator is not usable. */
  propose(fields: Readonly<Record<string, string>>, kind: Problem['kind'], id: string, answers?: AnswerSource): Promise<{ problem: Problem } | { unusable: string }>;
}

export interface LoopSettings {
  method: MethodConfig;
  templates: Templates;
  seed: number;
  /** Problems the Challenger writes per step. */
  proposals: number;
  /** Reference problems shown to the Challenger (K). */
  references: number;
  /** Solver attempts per new problem, for its difficulty (n). */
  difficultySamples: number;
  /** Bank problems trained on per step. */
  trainProblems: number;
  /** Solver rollouts per training problem. */
  solverSamples: number;
  temperature: number;
  topK: number;
  topP: number;
  maxNewTokens: Record<'challenger' | 'planner' | 'solver' | 'critic', number>;
  lr: number;
  sampling: SamplingMode;
  /** How rewards become advantages (see ADVANTAGE_ESTIMATORS); SAGE's is task-whiten. */
  advantage: AdvantageName;
  /** Leave groups whose rewards have no spread out of the update (DAPO's dynamic sampling). */
  dropZeroSpread: boolean;
  /**
   * Transcripts kept per step: 'sample', one rollout of each role and template drawn uniformly
   * (seeded by the run's seed and the step); 'all', every rollout (to audit a reward across all
   * of a step's outputs).
   */
  transcripts: TranscriptMode;
  /** The Challenger's difficulty term from the Solver's pass rate (see DIFFICULTY_FUNCTIONS): the paper's 1 − pass rate, or AZR's band. */
  difficulty: DifficultyName;
  /**
   * Train the Solver on as many seeds a step as RLVR with the same settings (trainProblems),
   * the generated problems of the usual draw added on top; off, generated problems take seeds'
   * places in a batch of trainProblems.
   */
  seedParity: boolean;
}

export const TRANSCRIPT_MODES = ['sample', 'all'] as const;
export type TranscriptMode = (typeof TRANSCRIPT_MODES)[number];

export const DEFAULT_LOOP: Omit<LoopSettings, 'method' | 'templates'> = {
  seed: 0,
  proposals: 8,
  references: 3,
  difficultySamples: 5,
  trainProblems: 8,
  solverSamples: 4,
  temperature: 1,
  topK: 0,
  topP: 1,
  // A byte-level model spends a token per byte: `<score>10</score>` alone is 17.
  maxNewTokens: { challenger: 96, planner: 48, solver: 48, critic: 24 },
  lr: 1e-4,
  // Half of each training batch from the 16 newest admitted problems (once there are any):
  // drawn uniformly from 500 seeds and a handful of new problems, generated ones rarely reached the Solver.
  sampling: { kind: 'newest-mix', newestShare: 0.5, newest: 16 },
  advantage: 'task-whiten',
  dropZeroSpread: false,
  transcripts: 'sample',
  difficulty: 'paper',
  seedParity: false,
};

export type Phase = 'propose' | 'score-problems' | 'difficulty' | 'admit' | 'plan' | 'score-plans' | 'solve' | 'judge-answers' | 'validate' | 'update';
