/**
 * `npm run evolve`: the self-evolution loop headless on Dawn. With no arguments it runs the
 * default: the built-in curriculum, the shipped tiny model (pretrained, its roles warmed up), then SAGE;
 * `--preset tiny` warms one up from scratch first. `--steps 0`
 * only reads and reports the seed and validation files. `--help` lists every option.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { SHIPPED_SPLITS } from '../data/curriculum';
import { describeOverlap, findOverlap, OVERLAP_REASON, overlapSummary, withoutOverlap } from '../data/content';
import type { Problem } from '../data/problem';
import { followPlan, kernelPlan, planRuntimeOptions, type KernelPlan } from '../gpu/kernelPlan';
import { Runtime } from '../gpu/runtime';
import { PROMPT_SETS, rolesTaught, type LabRecord, type PromptSet } from '../model/checkpoint';
import type { BaseDtype, KvDtype } from '../model/memory';
import { PRESETS, type PresetName } from '../model/config';
import { nodePlatform } from '../platform/node';
import { DEFAULT_METHOD, METHODS, type MethodConfig } from '../sage/config';
import { DEFAULT_LOOP, TRANSCRIPT_MODES } from '../sage/loopContract';
import { checkpointStart, fromScratch, recordedSettings, recordedStart, resolveRunSettings, runMethod, type ModelStart, type SettingValues } from '../sage/runSpec';
import { DEFAULT_MODEL, SHIPPED_MODEL_CATALOGUE, SHIPPED_MODELS_DIR } from '../sage/shippedModels';
import { checkReferences, Evolution, type RunEvent } from '../sage/run';
import { CHALLENGER_WARMUP_HELP, DEFAULT_RUN, describeDefaults, describeWarmup, modelDefaults, RUN_SPECS, type RunSettings, SETTING_NAMES, SOLVER_TARGET_HELP, warmupRecipe } from '../sage/settings';
import { ownAccuracy, type Accuracy } from '../sage/validation';
import { CHALLENGER_WARMUP_NAMES, SOLVER_TARGET_NAMES } from '../sage/warmup';
import { chooseTemplates } from '../sage/templates';
import { createValidators } from '../sage/validators';
import { CodeVerifier } from '../verify/python/codeVerifier';
import { NodeSandboxPool } from '../verify/python/nodePool';
import { sessionRunModel, warmupSft } from '../sage/runModel';
import { DEFAULT_POLICY, ModelSession, type ModelSource } from '../train/session';
import { isMain, runCli, UsageError, type CommandLine, type OptionValues } from './options';
import { describeMemory, modelMemory } from '../train/memorySummary';
import { applyLora, describeTraining, KV_CACHE_OPTION, loraFromOptions, LORA_OPTIONS } from './loraOptions';
import { onInterrupt } from './interrupt';
import { checkpointRecord, checkpointTemplates, DEFAULT_CHECKPOINT_EVERY, SHIPPED_MODEL, shippedModelIn, VERL_FILES, logShards, importCheckpointFolder, RUN_FILES, RunFolder } from './runFiles';
import { errorText } from '../util/errorText';
import { sourceCommit } from './provenance';
import type { RunStart } from '../sage/runRecords';
import { readConfig, readSplit } from './runInputs';

export const evolveCli = {
  name: 'evolve',
  summary: 'The SAGE self-evolution loop on one model, headless on the GPU through Dawn.',
  options: {
    seeds: { type: 'string', arg: 'FILE', exists: 'file', help: `seed problems (JSONL: curriculum, GSM8K, MATH, HumanEval, MBPP, Q/A, or questions alone for MAE; default ${SHIPPED_SPLITS.seeds.file})` },
    validation: { type: 'string', arg: 'FILE', exists: 'file', help: `held-out problems for validation, never trained on (default ${SHIPPED_SPLITS.validation.file})` },
    'drop-overlap': { type: 'flag', help: 'drop the validation problems that share their content with a seed (same expression, statement or function; without it such a split is refused)' },
    fields: { type: 'string', arg: 'ROLE=FIELD,…', help: 'field mapping for the seed file instead of detection, e.g. question=q,answer=a' },
    preset: { type: 'string', choices: Object.keys(PRESETS), help: `a model preset trained from scratch, warmed up first (${DEFAULT_RUN.warmupSteps} steps), instead of the shipped model` },
    model: { type: 'string', arg: 'DIR', exists: 'dir', help: `start from this Hugging Face checkpoint folder (default ${SHIPPED_MODEL}: ${SHIPPED_MODEL_CATALOGUE[DEFAULT_MODEL]})` },
    method: { type: 'string', choices: Object.keys(METHODS), help: `method preset (default ${DEFAULT_METHOD}; a resumed run keeps its own)` },
    templates: { type: 'string', choices: PROMPT_SETS, help: 'role prompts: compact for models trained from scratch, instruct for instruction-tuned ones (default: those the checkpoint records in sage_lab.json, the shipped model\'s compact; compact with --preset; instruct for a checkpoint that records none); they also choose the defaults: instruct gives a pretrained model lr 1e-6 (1e-5 with LoRA) and token limits Solver 512, Challenger 384, Planner 256, Critic 32' },
    steps: { type: 'int', min: 0, default: DEFAULT_RUN.steps, help: 'loop steps (0: only read and report the data files, or with --warmup-steps warm up and validate)' },
    'warmup-steps': { type: 'int', min: 0, help: `SFT warm-up steps on the seeds rendered into every role (default ${DEFAULT_RUN.warmupSteps} with --preset or a --model whose sage_lab.json says rolesTaught false, as tiny-arith-base's; else 0 with --model: give it to warm a checkpoint up further)` },
    'warmup-solver-share': { type: 'number', min: 0, max: 1, default: DEFAULT_RUN.warmupSolverShare, help: RUN_SPECS.warmupSolverShare.help },
    'warmup-plan-variants': { type: 'int', min: 0, default: DEFAULT_RUN.warmupPlanVariants, help: RUN_SPECS.warmupPlanVariants.help },
    'warmup-answer-pairs': { type: 'int', min: 0, default: DEFAULT_RUN.warmupAnswerPairs, help: RUN_SPECS.warmupAnswerPairs.help },
    'warmup-rehearsal': { type: 'number', min: 0, max: 0.9, default: DEFAULT_RUN.warmupRehearsal, help: RUN_SPECS.warmupRehearsal.help },
    'warmup-corpus-problems': { type: 'int', min: 0, default: DEFAULT_RUN.warmupCorpusProblems, help: RUN_SPECS.warmupCorpusProblems.help },
    'warmup-lr': { type: 'number', min: 0, minExclusive: true, help: `${RUN_SPECS.warmupLr.help} (default ${warmupRecipe(true).warmupLr} with --preset, ${warmupRecipe(false).warmupLr} from a checkpoint)` },
    'warmup-solver-target': { type: 'string', choices: SOLVER_TARGET_NAMES, help: `${SOLVER_TARGET_HELP} (default ${warmupRecipe(true).warmupSolverTarget} with --preset, ${warmupRecipe(false).warmupSolverTarget} from a checkpoint, or the --config file's)` },
    'challenger-warmup': { type: 'string', choices: CHALLENGER_WARMUP_NAMES, help: `${CHALLENGER_WARMUP_HELP} (default ${warmupRecipe(true).challengerWarmup} with --preset, ${warmupRecipe(false).challengerWarmup} from a checkpoint, or the --config file's)` },
    lr: { type: 'number', min: 0, minExclusive: true, help: `learning rate of the policy-gradient updates (default ${DEFAULT_LOOP.lr} for a model from scratch, 1e-6 for a pretrained one in full, 1e-5 with LoRA; or the --config file's)` },
    'eval-every': { type: 'int', min: 1, default: DEFAULT_RUN.evalEvery, help: 'validate every N steps' },
    patience: { type: 'int', min: 1, default: DEFAULT_RUN.patience, help: 'stop after N validations without a new best' },
    'validation-limit': { type: 'int', min: 1, default: DEFAULT_RUN.validationLimit, help: 'held-out problems per validation (the same ones each time)' },
    seed: { type: 'int', min: 0, default: DEFAULT_RUN.seed, help: 'seed of the weights, the sampling and the data order' },
    config: { type: 'string', arg: 'FILE', exists: 'file', help: `JSON object overriding loop settings (${SETTING_NAMES.join(', ')})` },
    transcripts: { type: 'string', choices: TRANSCRIPT_MODES, help: 'transcripts kept per step: sample (one rollout of each role and template drawn at random, seeded, the default) or all (every rollout, with its reward and advantage)' },
    out: { type: 'string', arg: 'DIR', help: 'run folder (default runs/<method>-<date>)' },
    resume: { type: 'string', arg: 'DIR', exists: 'dir', help: 'continue a run from its folder (its last checkpoint, bank and state)' },
    'checkpoint-every': { type: 'int', min: 1, default: DEFAULT_CHECKPOINT_EVERY, help: 'save last/ (weights, optimizer, the state --resume continues from) every N steps and at the end' },
    ...LORA_OPTIONS,
    'kv-cache': KV_CACHE_OPTION,
    'skip-tuning': { type: 'flag', help: 'measure no kernels: shape classes this machine has not tuned run on their untuned plan (a quick check of a model starts at once; a long run goes slower)' },
    'replay-plan': { type: 'string', arg: 'RUN', exists: 'dir', help: `run on the kernel plan run folder RUN recorded (its ${RUN_FILES.kernels}) instead of this machine's tuning: the same seed and settings make the same outcomes on another machine; a shape class the plan lacks is tuned here and listed under "added" in this run's plan (a resumed run follows its own plan)` },
  },
  notes: [
    'Ctrl-C ends the run when the phase in flight finishes (that step is abandoned, its update not made), saving the last checkpoint and records; a run killed otherwise resumes from its last saved checkpoint.',
    'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader',
    'env SAGE_CACHE_FILE=FILE  the kernel tuning table this machine keeps (default .cache/sage-lab-cache.json)',
  ],
} as const;

type Options = OptionValues<typeof evolveCli.options>;

/** The run setting each option sets: a resumed run keeps the recorded value of every one not given. */
const OPTION_SETTINGS = {
  seed: 'seed',
  lr: 'lr',
  transcripts: 'transcripts',
  'eval-every': 'evalEvery',
  patience: 'patience',
  'validation-limit': 'validationLimit',
  'warmup-steps': 'warmupSteps',
  'warmup-solver-share': 'warmupSolverShare',
  'warmup-plan-variants': 'warmupPlanVariants',
  'warmup-answer-pairs': 'warmupAnswerPairs',
  'warmup-lr': 'warmupLr',
  'warmup-rehearsal': 'warmupRehearsal',
  'warmup-corpus-problems': 'warmupCorpusProblems',
  'challenger-warmup': 'challengerWarmup',
  'warmup-solver-target': 'warmupSolverTarget',
} as const satisfies Partial<Record<keyof Options, keyof RunSettings>>;
/** Settings of the warm-up, which a resumed run did before its first step: another value would not apply. */
const WARMUP_SETTINGS: readonly string[] = ['warmupSteps', 'warmupSolverShare', 'warmupPlanVariants', 'warmupAnswerPairs', 'warmupRehearsal', 'warmupCorpusProblems', 'warmupLr', 'challengerWarmup', 'warmupSolverTarget'];

/** The kernel plan run folder `dir` recorded (null for a run from before plans were recorded); a bad one refused with one line. */
function readPlan(dir: string, option: string): KernelPlan | null {
  try {
    return RunFolder.kernelPlanOf(dir);
  } catch (e) {
    throw new UsageError(`${option} ${dir}: ${errorText(e)}`);
  }
}

/** The line for a recorded value that an option given on resume replaces; null when it is the same. */
function replaces(option: string, value: unknown, recorded: unknown): string | null {
  if (recorded === undefined || isDeepStrictEqual(value, recorded)) return null;
  const show = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));
  return `${option} ${show(value)} replaces the recorded ${show(recorded)}`;
}

/**
 * A run's role prompts: --templates, else a resumed run's own, else those the checkpoint
 * records (the prompts it was trained with), else compact for a preset from scratch and
 * instruct for a checkpoint that records none (see chooseTemplates).
 */
export function runTemplates(given: string | undefined, resumedWith: string | undefined, model: { dir: string; record: LabRecord } | null): PromptSet {
  if (resumedWith) return chooseTemplates({ given: given as PromptSet | undefined, recorded: resumedWith as PromptSet, fromScratch: false });
  return model ? checkpointTemplates(model.record, model.dir, given) : chooseTemplates({ given: given as PromptSet | undefined, fromScratch: true });
}

/**
 * Says before a run how many validation problems share their content with a seed, with
 * examples, and refuses them unless --drop-overlap drops them. A resumed run keeps the
 * problems it began with (its validations stay comparable), so it is only told.
 */
function heldOutSplit(seeds: readonly Problem[], validation: Problem[], drop: boolean, resumed: boolean): Problem[] {
  if (drop && resumed) throw new UsageError('--resume continues the run on the problems it began with: --drop-overlap does not apply');
  const overlap = findOverlap(seeds, validation);
  if (!overlap.length) return validation;
  console.warn(`${overlapSummary(overlap.length, validation.length)}, e.g.:`);
  for (const o of overlap.slice(0, 3)) console.warn(`  ${describeOverlap(o)}`);
  if (resumed) return validation;
  if (!drop) throw new UsageError(`${overlap.length} validation problems share their content with a seed, and ${OVERLAP_REASON}: give --drop-overlap to drop them, or another --validation`);
  const kept = withoutOverlap(validation, overlap);
  if (!kept.length) throw new UsageError('every validation problem shares its content with a seed: nothing is held out');
  console.log(`dropped ${overlap.length} validation problems that share their content with a seed; ${kept.length} remain`);
  return kept;
}

function progressLine(e: RunEvent, total: number, started: number, firstStep: number): string | null {
  const elapsed = (Date.now() - started) / 1000;
  if (e.type === 'tuning') return e.total === 0 ? null : e.done === 0 || e.done === e.total || e.done % 10 === 0 ? `tuning kernels for this run: ${e.done}/${e.total} shapes (kept for later runs)` : null;
  if (e.type === 'own-problems') {
    return `the Challenger's warm-up: ${e.read} of the ${e.written} continuations the model wrote state a problem the environment reads with an answer, e.g. ${e.examples.slice(0, 3).map((x) => JSON.stringify(`${x.question} ${x.answer}`)).join(', ')}`;
  }
  if (e.type === 'rehearsal') return `the warm-up rehearses ${e.documents} arithmetic-corpus documents beside its ${e.pairs} role pairs`;
  if (e.type === 'warmup') return e.step % 25 === 0 || e.step === e.of ? `warm-up ${e.step}/${e.of} · loss ${e.loss.toFixed(3)}` : null;
  if (e.type === 'validation') {
    const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
    const levels = (a: Accuracy) => {
      const ls = Object.entries(a.perLevel).map(([l, t]) => `L${l} ${(100 * t.accuracy).toFixed(0)}%`).join(' ');
      return ls ? ` (${ls})` : '';
    };
    const r = e.result;
    const planned = r.planned ? ` · with plans ${pct(r.planned.accuracy)}${levels(r.planned)}, ${pct(r.planned.planShown)} shown` : '';
    const auc = (x: number | null) => (x === null ? '-' : x.toFixed(2));
    const answers = r.critic?.answerAuc === undefined ? '' : `, answers ${auc(r.critic.answerAuc)}`;
    const critic = r.critic ? ` · Critic AUC problems ${auc(r.critic.problemAuc)}, plans ${auc(r.critic.planAuc)}${answers}` : '';
    return `validation after step ${r.step}: Solver ${pct(r.accuracy)}${levels(r)}${planned}${critic}${e.best ? ' · new best' : ''}`;
  }
  if (e.type === 'step') {
    const m = e.metrics;
    const done = m.step + 1 - firstStep;
    const eta = done > 0 ? ((total - done) * elapsed) / done : 0;
    return (
      `step ${m.step + 1}/${firstStep + total} · bank ${m.bank.size} (+${m.bank.admittedThisStep}) · solver ${m.solverAccuracy === null ? '-' : `${(100 * m.solverAccuracy).toFixed(0)}%`} · ` +
      `loss ${m.loss ? m.loss.loss.toFixed(4) : '-'} · ${m.tokensPerS.toFixed(0)} tok/s · ${m.seconds.total.toFixed(0)} s/step${m.tunedKernels ? ` (${m.tunedKernels} new kernel shapes tuned)` : ''} · ETA ${(eta / 60).toFixed(0)} min`
    );
  }
  if (e.type === 'done') return `done (${e.reason}) after ${e.state.step} steps; best validation ${e.state.best ? `${(100 * ownAccuracy(e.state.best)).toFixed(1)}% after step ${e.state.best.step}` : '-'}`;
  return null;
}

/** What a resumed run's config.json says of how it began: the fields a resume reads. */
export interface Began {
  method?: string;
  seeds?: string;
  validation?: string;
  templates?: string;
  preset?: string | null;
  model?: string | null;
  lora?: unknown;
  baseDtype?: BaseDtype;
  kvCache?: KvDtype;
  settings?: Partial<RunSettings>;
  starts?: RunStart[];
}

/** The checkpoint folder a run starts from: --model, else the shipped one unless --preset or --resume. */
function modelFolder(o: Options): string | undefined {
  // A first run starts from the shipped checkpoint (the tiny preset's warm-up, done): a loop step within minutes.
  return o.model ?? (o.resume || o.preset ? undefined : SHIPPED_MODEL);
}

/** The run's method: --method, else a resumed run's own, else the default. */
export const cliMethod = (o: Options, began: Began): MethodConfig => runMethod(o.method ?? began.method);

/**
 * The run's settings from its command line, resolved as the page's are (resolveRunSettings):
 * `began` is a resumed run's config.json, null for a new run. A resumed run goes on with every
 * setting it recorded (its seed above all), each replaced only by an option given on this
 * command line, or a key of --config, with a line saying so; its warm-up, done, is not replaced.
 */
export function cliRunSettings(o: Options, given: ReadonlySet<keyof Options>, began: Began | null): { settings: RunSettings; templates: PromptSet; start: ModelStart; lora: boolean } {
  const modelDir = modelFolder(o);
  // A checkpoint's record (read once) says its prompts, whether its roles were taught (tiny-arith-base's: not yet) and the settings it is meant for.
  const model = modelDir && !began ? { dir: modelDir, record: checkpointRecord(modelDir) } : null;
  const templates = runTemplates(o.templates, began?.templates, model);
  const start: ModelStart = began ? recordedStart(began) : model ? checkpointStart(rolesTaught(model.record), model.record.settings) : { kind: 'preset' };
  const lora = Boolean(loraFromOptions(o) || o.adapter || began?.lora);
  const choices = { start, templates, lora, recorded: began?.settings };
  const overrides = [
    ...Object.entries(o.config ? readConfig(o.config) : {}).map(([key, value]) => ({ option: `--config ${key}`, key, value })),
    ...Object.entries(OPTION_SETTINGS)
      .filter(([name]) => (began ? given.has(name as keyof Options) : o[name as keyof Options] !== undefined))
      .map(([name, key]) => ({ option: `--${name}`, key, value: o[name as keyof Options] })),
  ];
  if (began) {
    const templatesLine = replaces('--templates', templates, began.templates);
    if (templatesLine) console.log(templatesLine);
    const base = recordedSettings(choices) as unknown as Record<string, unknown>;
    for (const { option, key, value } of overrides) {
      const recorded = base[key];
      const line = replaces(option, value, recorded);
      if (line && WARMUP_SETTINGS.includes(key)) throw new UsageError(`--resume continues the run as it began (${option} ${recorded}, its warm-up done): ${option} ${value} does not apply`);
      if (line) console.log(line);
    }
  }
  const settings = resolveRunSettings({
    ...choices,
    method: cliMethod(o, began ?? {}).name,
    overrides: Object.fromEntries(overrides.map(({ key, value }) => [key, value])) as Partial<SettingValues>,
    // On resume: this many more steps.
    steps: o.steps,
  });
  return { settings, templates, start, lora };
}

async function main(o: Options, given: CommandLine<typeof evolveCli.options>['given']): Promise<void> {
  if ((o.model || o.preset) && o.resume) throw new UsageError(`--${o.model ? 'model' : 'preset'} and --resume are exclusive (a resumed run continues from its own checkpoint)`);
  if (o.model && o.preset) throw new UsageError('--model and --preset are exclusive (a checkpoint, or a preset trained from scratch)');
  const modelDir = modelFolder(o);
  const preset = (o.preset ?? 'tiny') as PresetName;
  const lora = loraFromOptions(o);
  if (o.resume && o['replay-plan']) throw new UsageError('--resume follows the kernel plan the run recorded: --replay-plan does not apply');
  if (o.resume && (lora || o.adapter)) throw new UsageError('--resume continues a run as it trained (a LoRA run with its adapter); --lora-rank and --adapter do not apply');
  // A resumed run's folder, read once: its config, state and bank now, its problems next, its records rewound later.
  const resumeFolder = o.resume ? new RunFolder(o.resume, o['checkpoint-every']) : null;
  const resumed = resumeFolder?.readResume() ?? null;
  // A resumed run goes on as it began: its method, and the problems it was given (kept in its folder).
  const began = (resumed?.config ?? {}) as Began;
  for (const [option, value, recorded] of [['method', o.method, began.method], ['seeds', o.seeds, began.seeds], ['validation', o.validation, began.validation]] as const) {
    if (value !== undefined && recorded !== undefined && value !== recorded) throw new UsageError(`--resume continues the run as it began (--${option} ${recorded}): --${option} ${value} does not apply`);
  }
  const seedFile = o.seeds ?? began.seeds ?? SHIPPED_SPLITS.seeds.file;
  const validationFile = o.validation ?? began.validation ?? SHIPPED_SPLITS.validation.file;
  const { seeds, validation: loaded } = resumeFolder ? resumeFolder.readProblems() : { seeds: await readSplit(seedFile, 'seeds', o.fields), validation: await readSplit(validationFile, 'validation') };
  if (o.resume) console.log(`problems as the run began (${join(o.resume, RUN_FILES.seeds)}, ${RUN_FILES.validation}): ${seeds.length} seeds, ${loaded.length} held out`);
  const validation = heldOutSplit(seeds, loaded, o['drop-overlap'], Boolean(o.resume));
  // --steps 0 reads and reports the files; with an explicit --warm-up it warms the model up (and validates) without a loop step.
  if (o.steps === 0 && o['warmup-steps'] === undefined) return;

  const method = cliMethod(o, began);
  checkReferences(seeds, validation, method);
  const { settings, templates: templateSet, start: modelStart, lora: trainsLora } = cliRunSettings(o, given, resumed ? began : null);
  const baseDtype = (resumed && !given.has('base-dtype') ? (began.baseDtype ?? 'f32') : o['base-dtype']) as BaseDtype;
  const baseDtypeLine = resumed ? replaces('--base-dtype', baseDtype, began.baseDtype) : null;
  if (baseDtypeLine) console.log(baseDtypeLine);
  const kvCache = (resumed && !given.has('kv-cache') ? (began.kvCache ?? 'f32') : o['kv-cache']) as KvDtype;
  const kvCacheLine = resumed ? replaces('--kv-cache', kvCache, began.kvCache) : null;
  if (kvCacheLine) console.log(kvCacheLine);
  const out = o.resume ?? o.out ?? join('runs', `${method.name}-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`);
  // A new run's records would be appended to the old run's and mixed with them.
  const held = o.resume ? null : RunFolder.heldRecord(out);
  if (held) throw new UsageError(`--out ${out} already holds a run (${held}): give another folder, or --resume ${out} to continue it`);
  // The checkpoint is read before anything is written: a bad --model is refused with no run folder made.
  const checkpointDir = o.resume ? join(o.resume, 'last') : modelDir;
  const source: ModelSource = checkpointDir ? { kind: 'checkpoint', checkpoint: importCheckpointFolder(checkpointDir), name: checkpointDir, onProgress: logShards } : { kind: 'preset', preset, seed: settings.seed };
  const folder = resumeFolder ?? new RunFolder(out, o['checkpoint-every']);
  const { method: _m, templates: _t, ...recorded } = settings;
  // The kernels a resumed run recorded, or those of the run --replay-plan names: its sums round as theirs did.
  const plan = resumeFolder ? readPlan(resumeFolder.dir, '--resume') : o['replay-plan'] ? readPlan(o['replay-plan'], '--replay-plan') : null;
  if (o['replay-plan'] && !plan) throw new UsageError(`--replay-plan ${o['replay-plan']}: no ${RUN_FILES.kernels} there (not a run folder, or a run from before kernel plans were recorded)`);
  if (!o.resume) folder.writeProblems(seeds, validation);
  // A resumed run's record keeps what its start alone knew: the model it started from, its adapter.
  const start = resumed ? {} : { preset: fromScratch(modelStart) ? preset : null, model: modelDir ?? null, lora: lora ?? (o.adapter ? { adapter: o.adapter } : null) };
  // Each process that runs it adds a start: its clock times, its commit (where there is git), its kernels.
  const thisStart: RunStart = {
    started: new Date().toISOString(),
    ...(sourceCommit() ?? {}),
    kernels: o.resume ? (plan ? 'recorded' : 'tuned') : o['replay-plan'] ? `replayed from ${o['replay-plan']}` : 'tuned',
  };
  const config = { ...began, method: method.name, templates: templateSet, seeds: seedFile, validation: validationFile, ...start, baseDtype, kvCache, settings: recorded, policy: DEFAULT_POLICY, starts: [...(began.starts ?? []), thisStart] };
  folder.writeConfig(config);

  const rt = await Runtime.create(nodePlatform(), { tuning: !o['skip-tuning'], ...(plan ? planRuntimeOptions(plan) : {}) });
  if (plan) {
    followPlan(rt, plan);
    console.log(`kernels: the plan ${o.resume ? 'this run recorded' : `recorded in ${o['replay-plan']}`} (${Object.keys(plan.matmul).length} matmul classes measured, ${plan.untuned.length} untuned), not this machine's tuning`);
  } else if (o.resume) console.log(`kernels: ${resumeFolder!.dir} records no plan (${RUN_FILES.kernels}): this machine's tuning decides`);
  if (o['skip-tuning']) console.log('kernels: none tuned (--skip-tuning); shape classes this machine has not measured run on their untuned plan');
  const shipped = modelDir ? shippedModelIn(modelDir) : undefined;
  if (shipped) console.log(`model: ${modelDir}, ${SHIPPED_MODEL_CATALOGUE[shipped]} (${SHIPPED_MODELS_DIR}/README.md); --preset tiny warms one up from scratch instead`);
  else if (!o.resume && fromScratch(modelStart)) console.log(`model: the ${preset} preset from scratch (seed ${settings.seed}), warmed up for ${settings.warmupSteps} step${settings.warmupSteps === 1 ? '' : 's'} before the first loop step`);
  const session = ModelSession.create(rt, { ...source, baseDtype });
  // Every checkpoint the run writes (warmup/, best/, last/) records the prompts it trains with, its roles taught.
  session.templates = templateSet;
  session.rolesTaught = true;
  session.kvCache = kvCache;
  if (!o.resume) session.resetOptimizer();
  applyLora(session, o, settings.seed);
  const model = sessionRunModel(session, {
    policy: DEFAULT_POLICY,
    warmup: warmupSft(session, settings.seed, settings.warmupLr),
    checkpointSink: (tag) => folder.checkpointSink(tag),
  });
  console.log(`adapter ${rt.ctx.adapter.key} · ${(session.parameters / 1e6).toFixed(2)}M params · ${describeTraining(session, session.model.trainable.size)} · ${method.summary} · run folder ${out}`);
  if (!resumed) {
    const recorded = modelStart.kind === 'checkpoint' ? modelStart.settings : undefined;
    const then = recorded ? `, then the checkpoint's sage_lab.json: ${JSON.stringify(recorded)}` : '';
    console.log(`${describeDefaults(modelDefaults(templateSet, trainsLora))}${then}${o.config || o.lr !== undefined ? ' (before --config and --lr)' : ''}`);
  }
  if (!resumed && settings.warmupSteps > 0) console.log(describeWarmup(settings, fromScratch(modelStart)));
  console.log(`base weights in ${session.baseDtype} · ${describeMemory(modelMemory(session.config, session.lora, settings.proposals * settings.difficultySamples, kvCache))}`);
  // A process killed between two checkpoints: the steps after last/ run again, their records dropped.
  const rewound = resumed ? folder.rewind(resumed) : null;
  if (rewound?.dropped) console.log(`resuming from last/ after step ${rewound.state.step}: the ${rewound.dropped} step(s) recorded after it (not checkpointed) run again`);
  const started = Date.now();
  const firstStep = rewound?.state.step ?? 0;
  // Code problems are judged in Python sandboxes (separate processes, no network).
  const sandbox = [...seeds, ...validation].some((p) => p.kind === 'code') ? new NodeSandboxPool() : null;
  const run = new Evolution(settings, seeds, validation, model, createValidators(sandbox ? new CodeVerifier(sandbox) : undefined), folder, (e) => {
    // The plan as it stands (new shape classes are met as the run goes), beside the records of each step.
    if (e.type === 'step' || e.type === 'validation' || e.type === 'done') folder.writeKernelPlan(kernelPlan(rt));
    const line = progressLine(e, settings.steps, started, firstStep);
    if (line) console.log(line);
  }, rewound ? { state: rewound.state, bankEvents: rewound.bankEvents } : undefined);
  folder.exportVerl(run.bank, validation, settings.templates);
  onInterrupt(() => {
    console.log('\nstopping when the phase in flight finishes (Ctrl-C again to quit now) ...');
    run.stop();
  });
  try {
    await run.run();
  } finally {
    sandbox?.close();
  }
  folder.writeConfig({ ...config, starts: [...config.starts.slice(0, -1), { ...thisStart, ended: new Date().toISOString() }] });
  console.log(`records in ${out}: ${Object.values(RUN_FILES).join(', ')}, checkpoints best/ and last/${existsSync(join(out, 'best')) ? '' : ' (no best yet)'}, the bank and held-out split as verl datasets ${Object.values(VERL_FILES).join(', ')}`);
  session.destroy();
  rt.destroy();
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(evolveCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
