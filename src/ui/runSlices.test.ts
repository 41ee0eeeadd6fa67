import { describe, expect, it } from 'vitest';
import { DEFAULT_LOOP } from '../sage/loopContract';
import { DEFAULT_MODEL } from '../sage/shippedModels';
import { DEFAULT_RUN, warmupRecipe } from '../sage/settings';
import type { ModelSummary } from '../worker/api';
import { modelChoices, settingDefault } from './runSlices';
import { SHIPPED_LAB_SETTINGS, SHIPPED_MODELS, SHIPPED_ROLES_TAUGHT } from './shippedData';

const held = (origin: string, rolesTaught = true) => ({ origin, rolesTaught, lora: null }) as ModelSummary;
const warmup = (model: ModelSummary | null) => settingDefault('warmupSteps', modelChoices(model, 'compact'));

describe('the model a run starts from', () => {
  it('is a shipped checkpoint when none is held, with its weights, config and tokenizer served', () => {
    expect(Object.keys(SHIPPED_MODELS[DEFAULT_MODEL] ?? {})).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
  });

  it('warms up a model whose roles were never taught: a preset from scratch, or a checkpoint whose record says so', () => {
    expect(DEFAULT_RUN.warmupSteps).toBeGreaterThan(0);
    // None held: the shipped default, its roles taught.
    expect(modelChoices(null, 'compact').start).toMatchObject({ kind: 'checkpoint', rolesTaught: true });
    expect(warmup(null)).toBe(0);
    expect(warmup(held('tiny', false))).toBe(DEFAULT_RUN.warmupSteps);
    expect(warmup(held(DEFAULT_MODEL))).toBe(0);
    expect(warmup(held('my-checkpoint'))).toBe(0);
    // The shipped base records rolesTaught false: the page warms it up, as `npm run evolve -- --model` does.
    expect(SHIPPED_ROLES_TAUGHT['tiny-arith-base']).toBe(false);
    expect(warmup(held('tiny-arith-base', SHIPPED_ROLES_TAUGHT['tiny-arith-base']))).toBe(DEFAULT_RUN.warmupSteps);
    expect(settingDefault('warmupSteps', { ...modelChoices(held('my-checkpoint'), 'instruct'), lora: true })).toBe(0);
    // The warm-up's rate is the recipe's for where the model starts (a preset's: the seeds alone teach it), a base's a checkpoint's.
    expect(settingDefault('warmupLr', modelChoices(held('tiny', false), 'compact'))).toBe(warmupRecipe(true).warmupLr);
    expect(settingDefault('warmupLr', modelChoices(held('tiny-arith-base', false), 'compact'))).toBe(warmupRecipe(false).warmupLr);
    // Other settings do not depend on it.
    expect(settingDefault('steps', modelChoices(held('tiny', false), 'compact'))).toBe(settingDefault('steps', modelChoices(null, 'compact')));
  });

  it('with none held, the page offers the settings the shipped default records for its runs', () => {
    const recorded = SHIPPED_LAB_SETTINGS[DEFAULT_MODEL];
    expect(recorded).toMatchObject({ solverSamples: expect.any(Number), lr: expect.any(Number) });
    for (const k of ['solverSamples', 'trainProblems', 'lr'] as const) expect(settingDefault(k, modelChoices(null, 'compact')), k).toBe(recorded?.[k]);
    // A checkpoint held without a record of its own takes the lab's defaults instead.
    expect(settingDefault('solverSamples', modelChoices(held('my-checkpoint'), 'compact'))).toBe(DEFAULT_LOOP.solverSamples);
  });
});
