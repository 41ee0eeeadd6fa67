/**
 * The loop's tunable settings as data: each with its default, its range and one line of
 * explanation, checked by one function for the CLI's --config file, the engine's run request
 * and the lab's settings panel alike. A bad value is refused with the setting named.
 */
import { ADVANTAGE_NAMES } from './advantages';
import { DEFAULT_LOOP, TRANSCRIPT_MODES, type LoopSettings } from './loopContract';
import { DIFFICULTY_NAMES } from './rewards';
import { CHALLENGER_WARMUP_NAMES, SOLVER_TARGET_NAMES, type ChallengerWarmup, type SolverTarget } from './warmup';

/** A whole run's settings: the loop's, and the run's own (warm-up, validation, stopping). */
export interface RunSettings extends LoopSettings {
  /** Loop steps in this run (more may follow on --resume). */
  steps: number;
  /** SFT steps of the warm-up before the first loop step (0: none, e.g. a pretrained model). */
  warmupSteps: number;
  /** The Solver's share of the warm-up's pairs (its pairs repeated to reach it). */
  warmupSolverShare: number;
  /** Peak learning rate of the warm-up's SFT. */
  warmupLr: number;
  /** Per seed, plan variants taught to the Critic in the warm-up (WarmupOptions.planVariants). */
  warmupPlanVariants: number;
  /** Per math seed, answer pairs taught to the Judge in the warm-up (WarmupOptions.answerPairs). */
  warmupAnswerPairs: number;
  /** The share of the warm-up's examples that are documents of the arithmetic corpus, rehearsed (rehearsalDocuments). */
  warmupRehearsal: number;
  /** Problems of the arithmetic corpus, levels 1-5, taught to the Solver in the warm-up beside the seeds (corpusProblems). */
  warmupCorpusProblems: number;
  /** How the warm-up teaches the Challenger (CHALLENGER_WARMUPS). */
  challengerWarmup: ChallengerWarmup;
  /** What the warm-up's Solver targets work before the answer (SOLVER_TARGETS). */
  warmupSolverTarget: SolverTarget;
  /** Validate every this many steps (and before the first). */
  evalEvery: number;
  /** Stop after this many evaluations without a new best. */
  patience: number;
  /** Held-out problems per evaluation: the same ones every time, spread over sources and levels. */
  validationLimit: number;
  /** Token-bigram similarity at which a proposed problem is a near-duplicate. */
  nearDuplicate: number;
}

export type MaxNewTokens = LoopSettings['maxNewTokens'];

interface NumberSpec {
  integer: boolean;
  min: number;
  /** The minimum itself is not allowed. */
  minExclusive?: boolean;
  max?: number;
  help: string;
}

/** The settings a run may override (the method, templates and run length come separately). */
export const SETTING_SPECS = {
  proposals: { integer: true, min: 1, help: 'problems the Challenger writes per step' },
  references: { integer: true, min: 1, help: 'reference problems from the bank shown to the Challenger (K)' },
  difficultySamples: { integer: true, min: 1, help: 'Solver attempts per new problem; its difficulty is 1 − their pass rate (n)' },
  trainProblems: { integer: true, min: 1, help: 'bank problems the Planner and Solver train on per step' },
  solverSamples: { integer: true, min: 1, help: 'Solver rollouts per training problem' },
  temperature: { integer: false, min: 0, help: 'sampling temperature of every role (0: greedy)' },
  topK: { integer: true, min: 0, help: 'sample among the k most likely tokens (0: all)' },
  topP: { integer: false, min: 0, minExclusive: true, max: 1, help: 'nucleus sampling mass (1: all)' },
  lr: { integer: false, min: 0, minExclusive: true, help: 'learning rate of the policy-gradient update' },
} as const satisfies Record<string, NumberSpec>;

/** A run's length, validation and early stopping (the CLI has an option for each). */
export const RUN_SPECS = {
  steps: { integer: true, min: 1, help: 'loop steps in this run (a resumed run may add more)' },
  warmupSteps: { integer: true, min: 0, help: 'SFT steps on the seeds rendered into every role before the loop (by default 0 for a checkpoint whose roles were taught; a preset from scratch or a pretrained base warms up)' },
  warmupSolverShare: { integer: false, min: 0, max: 1, help: 'the Solver\'s share of the warm-up\'s pairs, its pairs repeated to reach it (the loop\'s rewards need a Solver that answers some problems)' },
  warmupLr: { integer: false, min: 0, minExclusive: true, help: 'peak learning rate of the warm-up (2e-3 teaches a model from scratch; a pretrained base forgets less at a lower one)' },
  warmupRehearsal: { integer: false, min: 0, max: 0.9, help: 'the share of the warm-up\'s examples that are documents of the arithmetic corpus tiny-arith-base was pretrained on, none stating a held-out expression: rehearsed, so that a base taught the roles\' formats keeps what it knew (0 for a model not pretrained on that corpus)' },
  warmupCorpusProblems: { integer: true, min: 0, help: 'problems of the arithmetic corpus (levels 1-5, in the curriculum\'s styles, none stating a held-out expression) taught to the Solver in the warm-up beside the seeds, so that the answer\'s format follows expressions longer than the seeds\' (0 for a model not pretrained on that corpus)' },
  warmupPlanVariants: { integer: true, min: 0, help: 'per seed, variants with a number changed alike in problem and plan, taught to the Critic as matching beside the plan with a number changed alone, so that matching plans are not strings to memorise (2 per seed did not lift the demo\'s plan AUC)' },
  warmupAnswerPairs: { integer: true, min: 0, help: 'per math seed, pairs teaching the Critic to rate an answer (the Judge of MAE and of the judge reward): the seed\'s worked answer rated 9 beside the same with its final answer changed rated 2 (0: none, as the shipped checkpoints were made, whose Judge writes no rating)' },
  evalEvery: { integer: true, min: 1, help: 'validate every this many steps (and before the first)' },
  patience: { integer: true, min: 1, help: 'stop after this many validations without a new best' },
  validationLimit: { integer: true, min: 1, help: 'held-out problems per validation, the same ones each time' },
  nearDuplicate: { integer: false, min: 0, minExclusive: true, max: 1, help: 'token-bigram similarity at which a new problem is a near-duplicate' },
  seed: { integer: true, min: 0, help: 'seed of the sampling and the data order (and of a preset\'s weights)' },
} as const satisfies Record<string, NumberSpec>;

/** The warm-up's defaults for a model from scratch (warmupRecipe gives a pretrained checkpoint's). */
export const DEFAULT_RUN: Pick<RunSettings, keyof typeof RUN_SPECS | 'challengerWarmup' | 'warmupSolverTarget'> = {
  steps: 20,
  warmupSteps: 400,
  warmupSolverShare: 0.7,
  warmupPlanVariants: 0,
  warmupAnswerPairs: 0,
  warmupRehearsal: 0,
  warmupCorpusProblems: 0,
  warmupLr: 2e-3,
  challengerWarmup: 'seeds',
  warmupSolverTarget: 'answer',
  evalEvery: 5,
  patience: 5,
  validationLimit: 200,
  nearDuplicate: 0.85,
  seed: 0,
};

/** The warm-up settings whose defaults depend on where the model starts. */
export type WarmupRecipe = Pick<RunSettings, 'challengerWarmup' | 'warmupSolverTarget' | 'warmupLr'>;

/**
 * A pretrained checkpoint's warm-up. Its lr is the best of four measured on tiny-arith-base
 * (data/models/README.md, "Warming tiny-arith-base up"): at 2e-3 the base forgot even level 1;
 * at 3e-4 it kept the most in the task's format, though every strength forgot levels 3-5.
 */
const PRETRAINED_WARMUP: WarmupRecipe = { challengerWarmup: 'own', warmupSolverTarget: 'worked', warmupLr: 3e-4 };

/**
 * The warm-up by where the model starts. A preset from scratch learns everything from the
 * seeds: another seed as the Challenger's output, the answer alone, lr 2e-3 (tiny-curriculum's
 * recipe; a model that knows nothing writes nothing of its own to learn from). A checkpoint
 * is taught the roles' formats while its pretraining speaks: the Challenger on problems it
 * writes itself, the Solver's targets worked as a corpus writes them.
 */
export function warmupRecipe(fromScratch: boolean): WarmupRecipe {
  return fromScratch ? { challengerWarmup: DEFAULT_RUN.challengerWarmup, warmupSolverTarget: DEFAULT_RUN.warmupSolverTarget, warmupLr: DEFAULT_RUN.warmupLr } : PRETRAINED_WARMUP;
}

/** The recipe as one line, for the CLI. */
export function describeWarmup(r: WarmupRecipe, fromScratch: boolean): string {
  return `warm-up for ${fromScratch ? 'a model from scratch' : 'a checkpoint'}: Challenger ${r.challengerWarmup}, Solver targets ${r.warmupSolverTarget}, lr ${r.warmupLr}`;
}

/**
 * Defaults that depend on the model: a model trained here from scratch (compact templates)
 * keeps the loop's defaults, made for a byte-level model of a few hundred positions; a
 * pretrained instruction-tuned model (instruct templates) gets the learning rates verl, TRL,
 * MAE and AZR use (1e-6 in full; 1e-5 for a LoRA adapter, which starts at zero and moves less)
 * and token limits that let it reason before it answers.
 */
export interface ModelDefaults {
  kind: 'from scratch' | 'pretrained';
  /** One line: which set applies and why. */
  why: string;
  lr: number;
  maxNewTokens: MaxNewTokens;
}

export const PRETRAINED_MAX_NEW_TOKENS: MaxNewTokens = { challenger: 384, planner: 256, solver: 512, critic: 32 };

export function modelDefaults(templates: 'compact' | 'instruct', lora: boolean): ModelDefaults {
  if (templates === 'compact') {
    return { kind: 'from scratch', why: 'compact prompts: a model trained from scratch', lr: DEFAULT_LOOP.lr, maxNewTokens: DEFAULT_LOOP.maxNewTokens };
  }
  return {
    kind: 'pretrained',
    why: `instruct prompts: a pretrained model${lora ? ', trained through a LoRA adapter' : ', trained in full'}`,
    lr: lora ? 1e-5 : 1e-6,
    maxNewTokens: PRETRAINED_MAX_NEW_TOKENS,
  };
}

/** The defaults as one line, for --help, the CLI's first lines and the lab. */
export function describeDefaults(d: ModelDefaults): string {
  const t = d.maxNewTokens;
  return `defaults for ${d.why}: lr ${d.lr}, token limits Challenger ${t.challenger}, Planner ${t.planner}, Solver ${t.solver}, Critic ${t.critic}`;
}

/**
 * Settings that are not numbers: the token limits per role, the advantage estimator, dropping
 * zero-spread groups, which transcripts to keep, the Challenger's difficulty term, the Solver's
 * seeds kept at RLVR's count, how the warm-up teaches the Challenger and writes the Solver's targets.
 */
const OTHER_SETTINGS = ['maxNewTokens', 'advantage', 'dropZeroSpread', 'transcripts', 'difficulty', 'seedParity', 'challengerWarmup', 'warmupSolverTarget'] as const;

/** What each way of writing the warm-up's Solver targets does (SOLVER_TARGETS), for --help and the lab. */
export const SOLVER_TARGET_HELP = "what the warm-up's Solver targets work before the answer: answer, a seed's worked solution when it has one, else nothing (the shipped tiny-curriculum's); worked, also a curriculum seed's expression and value as an arithmetic corpus writes them (2+3 = 5), which a pretrained model computes; inline, the expression with the answer tag opening at its = (2+3 = <answer>5</answer>)";

/** What each way of teaching the Challenger in the warm-up does (CHALLENGER_WARMUPS), for --help and the lab. */
export const CHALLENGER_WARMUP_HELP = "how the warm-up teaches the Challenger: seeds, another seed with its answer (teaches that a harder problem is a seed; the shipped tiny-curriculum's); own, problems the model writes itself before the warm-up, continuing reference seeds in their style, in the Challenger's tags (the format taught, the content its pretraining's); none, no Challenger pairs";
export type SettingName = keyof typeof SETTING_SPECS | keyof typeof RUN_SPECS | (typeof OTHER_SETTINGS)[number];
/** The loop's settings, which a --config file may set. */
export const SETTING_NAMES: readonly SettingName[] = [...(Object.keys(SETTING_SPECS) as (keyof typeof SETTING_SPECS)[]), ...OTHER_SETTINGS];
const ALL_SPECS: Record<string, NumberSpec> = { ...SETTING_SPECS, ...RUN_SPECS };

function rangeText(s: NumberSpec): string {
  const kind = s.integer ? 'an integer' : 'a number';
  const low = `${s.minExclusive ? '>' : '≥'} ${s.min}`;
  return s.max === undefined ? `${kind} ${low}` : `${kind} in ${s.minExclusive ? '(' : '['}${s.min}, ${s.max}]`;
}

/** Why a value is refused for a setting, or null when it is fine. */
export function checkSetting(name: SettingName, value: unknown): string | null {
  if (name === 'maxNewTokens') {
    const roles = Object.keys(DEFAULT_LOOP.maxNewTokens);
    const ok = typeof value === 'object' && value !== null && !Array.isArray(value) && Object.entries(value).every(([k, v]) => roles.includes(k) && Number.isInteger(v) && (v as number) >= 1);
    return ok ? null : `maxNewTokens must map ${roles.join('/')} to integers ≥ 1`;
  }
  if (name === 'advantage') {
    return ADVANTAGE_NAMES.includes(value as never) ? null : `advantage must be one of ${ADVANTAGE_NAMES.join(', ')} (got ${JSON.stringify(value)})`;
  }
  if (name === 'dropZeroSpread' || name === 'seedParity') return typeof value === 'boolean' ? null : `${name} must be true or false (got ${JSON.stringify(value)})`;
  if (name === 'transcripts') return TRANSCRIPT_MODES.includes(value as never) ? null : `transcripts must be one of ${TRANSCRIPT_MODES.join(', ')} (got ${JSON.stringify(value)})`;
  if (name === 'difficulty') return DIFFICULTY_NAMES.includes(value as never) ? null : `difficulty must be one of ${DIFFICULTY_NAMES.join(', ')} (got ${JSON.stringify(value)})`;
  if (name === 'warmupSolverTarget') return SOLVER_TARGET_NAMES.includes(value as never) ? null : `warmupSolverTarget must be one of ${SOLVER_TARGET_NAMES.join(', ')} (got ${JSON.stringify(value)})`;
  if (name === 'challengerWarmup') return CHALLENGER_WARMUP_NAMES.includes(value as never) ? null : `challengerWarmup must be one of ${CHALLENGER_WARMUP_NAMES.join(', ')} (got ${JSON.stringify(value)})`;
  const s = ALL_SPECS[name]!;
  const n = value as number;
  const ok = typeof value === 'number' && Number.isFinite(n) && (!s.integer || Number.isInteger(n)) && (s.minExclusive ? n > s.min : n >= s.min) && (s.max === undefined || n <= s.max);
  return ok ? null : `${name} must be ${rangeText(s)} (got ${JSON.stringify(value)})`;
}

/**
 * Overrides from a JSON object: known settings only (with `run`, the run's length and
 * validation too), each checked; maxNewTokens may name some roles, the others keep their
 * defaults. Throws with the first problem named.
 */
export function parseSettings(raw: unknown, o: { run?: boolean } = {}): Partial<Omit<RunSettings, 'method' | 'templates'>> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('expected a JSON object of settings');
  const names: readonly string[] = o.run ? [...SETTING_NAMES, ...Object.keys(RUN_SPECS)] : SETTING_NAMES;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (!names.includes(key)) throw new Error(`unknown setting "${key}" (settings: ${names.join(', ')})`);
    const error = checkSetting(key as SettingName, value);
    if (error) throw new Error(error);
    out[key] = key === 'maxNewTokens' ? { ...DEFAULT_LOOP.maxNewTokens, ...(value as Partial<MaxNewTokens>) } : value;
  }
  return out;
}
