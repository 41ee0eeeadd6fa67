/**
 * How the lab shows the loop's settings to a person: each one's label in words (the
 * identifier, which the CLI's --config and the run's record use, beside it), its group, and
 * whether it is shown at once or folded under the group's other settings. The numbers'
 * explanations are the settings' own (SETTING_SPECS, RUN_SPECS); the choices' are here.
 */
import { CHALLENGER_WARMUP_HELP, RUN_SPECS, SETTING_SPECS, SOLVER_TARGET_HELP } from '../../sage/settings';
import type { ChoiceSetting, NumericSetting } from '../runSlices';

export type ShownSetting = NumericSetting | ChoiceSetting;

export type GroupName = 'run' | 'warmup' | 'sampling' | 'rewards' | 'update';

/** The groups in the order a first reader needs them, each with one line on what it governs. */
export const SETTING_GROUPS: readonly { name: GroupName; title: string; about: string }[] = [
  { name: 'run', title: 'Run', about: 'how long the run lasts and how it is validated' },
  { name: 'warmup', title: 'Warm-up', about: 'supervised steps on the seeds before the loop: a model from scratch only (a checkpoint starts at 0)' },
  { name: 'sampling', title: 'Sampling', about: 'how every role draws its tokens' },
  { name: 'rewards', title: 'Problems and rewards', about: 'what the Challenger writes, what enters the bank, and what it is paid' },
  { name: 'update', title: 'Update', about: 'the policy-gradient step that follows the rewards' },
];

interface Entry {
  label: string;
  group: GroupName;
  /** Shown at once; the others fold under "more" in their group. */
  common?: true;
}

/** Every setting the panel shows, in its group's order (a Record: a new setting without a place does not compile). */
export const SETTING_ENTRIES: Record<ShownSetting, Entry> = {
  steps: { label: 'Loop steps', group: 'run', common: true },
  evalEvery: { label: 'Validate every … steps', group: 'run', common: true },
  validationLimit: { label: 'Held-out problems per validation', group: 'run', common: true },
  seed: { label: 'Random seed', group: 'run', common: true },
  patience: { label: 'Early-stop patience (validations)', group: 'run' },
  transcripts: { label: 'Transcripts kept', group: 'run' },
  warmupSteps: { label: 'Warm-up steps', group: 'warmup', common: true },
  warmupLr: { label: 'Warm-up learning rate', group: 'warmup', common: true },
  warmupSolverShare: { label: 'Solver’s share of the warm-up', group: 'warmup' },
  challengerWarmup: { label: 'Challenger warm-up', group: 'warmup' },
  warmupSolverTarget: { label: 'Solver warm-up targets', group: 'warmup' },
  warmupPlanVariants: { label: 'Plan variants per seed', group: 'warmup' },
  warmupAnswerPairs: { label: 'Judge answer pairs per seed', group: 'warmup' },
  warmupRehearsal: { label: 'Corpus rehearsal share', group: 'warmup' },
  warmupCorpusProblems: { label: 'Corpus problems for the Solver', group: 'warmup' },
  temperature: { label: 'Temperature', group: 'sampling', common: true },
  topK: { label: 'Top-k', group: 'sampling' },
  topP: { label: 'Top-p (nucleus)', group: 'sampling' },
  proposals: { label: 'New problems per step', group: 'rewards', common: true },
  difficulty: { label: 'Difficulty reward', group: 'rewards', common: true },
  difficultySamples: { label: 'Solver attempts per new problem', group: 'rewards' },
  references: { label: 'Reference problems shown', group: 'rewards' },
  nearDuplicate: { label: 'Near-duplicate similarity', group: 'rewards' },
  lr: { label: 'Learning rate', group: 'update', common: true },
  advantage: { label: 'Advantage estimator', group: 'update', common: true },
  trainProblems: { label: 'Training problems per step', group: 'update' },
  solverSamples: { label: 'Solver rollouts per problem', group: 'update' },
  dropZeroSpread: { label: 'Drop zero-spread groups', group: 'update' },
  seedParity: { label: 'Seed parity with RLVR', group: 'update' },
};

const CHOICE_HELP: Record<ChoiceSetting, string> = {
  advantage: 'how rewards become advantages: task-whiten is SAGE’s (Task-Relative REINFORCE++); the others baseline each problem’s samples',
  dropZeroSpread: 'leave groups whose rewards are all equal out of the update (DAPO’s dynamic sampling)',
  transcripts: 'transcripts kept per step: one of each role and template drawn at random, or every rollout with its reward and advantage',
  difficulty: 'the Challenger’s difficulty term: paper, 1 − the Solver’s pass rate (a problem nobody solves pays the most); band, AZR’s: 0 when every attempt or none passes',
  challengerWarmup: CHALLENGER_WARMUP_HELP,
  warmupSolverTarget: SOLVER_TARGET_HELP,
  seedParity: 'train the Solver on as many seeds a step as RLVR, the generated problems added on top rather than taking seeds’ places',
};

const NUMBER_SPECS: Record<string, { help: string }> = { ...SETTING_SPECS, ...RUN_SPECS };

/** One setting's explanation. */
export function settingHelp(name: ShownSetting): string {
  return name in CHOICE_HELP ? CHOICE_HELP[name as ChoiceSetting] : NUMBER_SPECS[name]!.help;
}

/** A group's settings: those shown at once, then those folded, each in the table's order. */
export function groupSettings(group: GroupName): { shown: ShownSetting[]; folded: ShownSetting[] } {
  const names = (Object.keys(SETTING_ENTRIES) as ShownSetting[]).filter((n) => SETTING_ENTRIES[n].group === group);
  return { shown: names.filter((n) => SETTING_ENTRIES[n].common), folded: names.filter((n) => !SETTING_ENTRIES[n].common) };
}
