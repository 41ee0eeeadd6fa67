/**
 * A run's settings resolved from plain choices: the method, where the model starts (a preset
 * from scratch, or a checkpoint and whether its record says its roles were taught), its role
 * prompts, LoRA or not, a resumed run's recorded settings, the overrides given, the steps. One
 * rule for `npm run evolve`, the engine's run and the page's defaults, so that the same
 * choices make the same run wherever they are made. Pure data in, settings out: the engine
 * worker imports it, so it reads no files.
 */
import { LAB_RECORD, type PromptSet } from '../model/checkpoint';
import { PRESETS } from '../model/config';
import { DEFAULT_METHOD, METHODS, type MethodConfig, type MethodName } from './config';
import { DEFAULT_LOOP } from './loopContract';
import { DEFAULT_RUN, modelDefaults, parseSettings, type RunSettings, warmupRecipe } from './settings';
import { TEMPLATE_SETS, type Templates } from './templates';

/**
 * Where a run's model starts, as far as its settings care: a preset made here from scratch, or
 * a checkpoint, whose record (sage_lab.json) may say its roles were never taught (a base
 * pretrained here for compact prompts, as tiny-arith-base).
 */
export type ModelStart = { kind: 'preset' } | { kind: 'checkpoint'; rolesTaught: boolean; settings?: Partial<SettingValues> };

/**
 * A model by the name it is held under: a preset's name is a model made from scratch, any other
 * a checkpoint's, with the run settings its record says it is meant to be run with (checked as
 * --config is; a bad one is refused naming the record).
 */
export function modelStart(origin: string, rolesTaught: boolean, labSettings?: Record<string, unknown> | null): ModelStart {
  return origin in PRESETS ? { kind: 'preset' } : checkpointStart(rolesTaught, labSettings);
}

/** A checkpoint's start from its record: whether its roles were taught, and the run settings it is meant for. */
export function checkpointStart(rolesTaught: boolean, labSettings?: Record<string, unknown> | null): ModelStart {
  return labSettings ? { kind: 'checkpoint', rolesTaught, settings: recordSettings(labSettings) } : { kind: 'checkpoint', rolesTaught };
}

/** A checkpoint record's settings, checked as a run's --config is. */
export function recordSettings(raw: Record<string, unknown>): Partial<SettingValues> {
  try {
    return parseSettings(raw, { run: true });
  } catch (e) {
    throw new Error(`${LAB_RECORD} settings: ${(e as Error).message}`);
  }
}

/**
 * A resumed run's start, from its config.json: the CLI records `preset` (null from a
 * checkpoint), the page the held model's name as `model`. The checkpoint it resumes from has
 * been through the run, its roles taught.
 */
export function recordedStart(config: { preset?: string | null; model?: string | null }): ModelStart {
  return config.preset ? { kind: 'preset' } : modelStart(config.model ?? '', true);
}

export const fromScratch = (start: ModelStart): boolean => start.kind === 'preset';

/** The settings beside the method and the prompts, as a run records them. */
export type SettingValues = Omit<RunSettings, 'method' | 'templates'>;

/** What a run's defaults depend on: where the model starts, its prompts, whether a LoRA adapter trains. */
export interface ModelChoices {
  start: ModelStart;
  templates: PromptSet;
  lora: boolean;
}

/**
 * Every setting's default for a model: the loop's, the model's (lr and token limits by prompts
 * and LoRA), the run's, then the warm-up by where the model starts, then what the checkpoint's
 * record says it is meant to be run with. A model whose roles were never taught (a preset from
 * scratch, a pretrained base) warms up for DEFAULT_RUN.warmupSteps; a checkpoint whose roles
 * were taught starts the loop at once.
 */
export function runDefaults(c: ModelChoices): SettingValues {
  const model = modelDefaults(c.templates, c.lora);
  const untaught = c.start.kind === 'preset' || !c.start.rolesTaught;
  return {
    ...DEFAULT_LOOP,
    lr: model.lr,
    maxNewTokens: model.maxNewTokens,
    ...DEFAULT_RUN,
    // A checkpoint warms up as a pretrained model does, a preset from scratch as the seeds alone teach it.
    ...warmupRecipe(fromScratch(c.start)),
    warmupSteps: untaught ? DEFAULT_RUN.warmupSteps : 0,
    ...(c.start.kind === 'checkpoint' ? c.start.settings : {}),
  };
}

/** The defaults, then a resumed run's recorded settings: the values an override replaces. */
export function recordedSettings(c: ModelChoices & { recorded?: Partial<SettingValues> }): SettingValues {
  return { ...runDefaults(c), ...c.recorded };
}

/** A method by name (none: the default); an unknown name is refused with the methods listed. */
export function runMethod(name: string | undefined): MethodConfig {
  const method = name ?? DEFAULT_METHOD;
  if (!(method in METHODS)) throw new Error(`unknown method "${method}" (methods: ${Object.keys(METHODS).join(', ')})`);
  return METHODS[method as MethodName];
}

/** A set of role prompts by name; an unknown name (a hand-edited record) is refused with the names listed. */
function templatesNamed(name: string): Templates {
  if (!(name in TEMPLATE_SETS)) throw new Error(`unknown prompts "${name}" (${Object.keys(TEMPLATE_SETS).join(', ')})`);
  return TEMPLATE_SETS[name as PromptSet];
}

/** Everything a run's settings are resolved from; overrides are checked already (parseSettings). */
export interface RunChoices extends ModelChoices {
  method?: string;
  recorded?: Partial<SettingValues>;
  overrides?: Partial<SettingValues>;
  /** Loop steps of this run, last (on resume: this many more). */
  steps?: number;
}

/** A run's settings: the defaults, a resumed run's record, the overrides, the steps, then the method and its prompts. */
export function resolveRunSettings(c: RunChoices): RunSettings {
  return {
    ...recordedSettings(c),
    ...c.overrides,
    ...(c.steps === undefined ? {} : { steps: c.steps }),
    method: runMethod(c.method),
    templates: templatesNamed(c.templates),
  };
}
