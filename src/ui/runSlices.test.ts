import { describe, expect, it } from 'vitest';
import { DEFAULT_RUN, warmupRecipe } from '../sage/settings';
import type { ModelSummary } from '../worker/api';
import { fromScratch, settingDefault } from './runSlices';
import { DEFAULT_SHIPPED_MODEL, SHIPPED_MODELS } from './shippedData';

const held = (origin: string) => ({ origin }) as ModelSummary;

describe('the model a run starts from', () => {
  it('is a shipped checkpoint when none is held, with its weights, config and tokenizer served', () => {
    expect(Object.keys(SHIPPED_MODELS[DEFAULT_SHIPPED_MODEL] ?? {})).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
  });

  it('warms up only a preset made from scratch', () => {
    expect(fromScratch(null)).toBe(false);
    expect(fromScratch(held('tiny'))).toBe(true);
    expect(fromScratch(held(DEFAULT_SHIPPED_MODEL))).toBe(false);
    expect(fromScratch(held('my-checkpoint'))).toBe(false);
    expect(DEFAULT_RUN.warmupSteps).toBeGreaterThan(0);
    expect(settingDefault('warmupSteps', 'compact', false, true)).toBe(DEFAULT_RUN.warmupSteps);
    expect(settingDefault('warmupSteps', 'compact', false, false)).toBe(0);
    expect(settingDefault('warmupSteps', 'instruct', true, false)).toBe(0);
    // The warm-up's rate is the recipe's for where the model starts (a preset's: the seeds alone teach it).
    expect(settingDefault('warmupLr', 'compact', false, true)).toBe(warmupRecipe(true).warmupLr);
    expect(settingDefault('warmupLr', 'compact', false, false)).toBe(warmupRecipe(false).warmupLr);
    // Other settings do not depend on it.
    expect(settingDefault('steps', 'compact', false, true)).toBe(settingDefault('steps', 'compact', false, false));
  });
});
