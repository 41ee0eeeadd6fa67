import { describe, expect, it } from 'vitest';
import { DEFAULT_LOOP } from './loopContract';
import { checkSetting, DEFAULT_RUN, describeDefaults, describeWarmup, modelDefaults, parseSettings, RUN_SPECS, SETTING_SPECS, warmupRecipe } from './settings';

describe('loop settings', () => {
  it('accepts every default and refuses values out of range, naming the setting', () => {
    for (const name of Object.keys(SETTING_SPECS) as (keyof typeof SETTING_SPECS)[]) expect(checkSetting(name, DEFAULT_LOOP[name])).toBeNull();
    for (const name of Object.keys(RUN_SPECS) as (keyof typeof RUN_SPECS)[]) expect(checkSetting(name, DEFAULT_RUN[name])).toBeNull();
    expect(checkSetting('proposals', 0)).toBe('proposals must be an integer ≥ 1 (got 0)');
    expect(checkSetting('proposals', 2.5)).toMatch(/^proposals must be an integer/);
    expect(checkSetting('topP', 0)).toBe('topP must be a number in (0, 1] (got 0)');
    expect(checkSetting('topP', 1.5)).toMatch(/^topP/);
    expect(checkSetting('lr', 0)).toBe('lr must be a number > 0 (got 0)');
    expect(checkSetting('temperature', Number.NaN)).toMatch(/^temperature/);
    expect(checkSetting('temperature', '1')).toMatch(/^temperature/);
    expect(checkSetting('nearDuplicate', 1)).toBeNull();
    expect(checkSetting('maxNewTokens', { solver: 0 })).toMatch(/^maxNewTokens/);
    expect(checkSetting('maxNewTokens', { judge: 4 })).toMatch(/^maxNewTokens/);
    expect(checkSetting('advantage', DEFAULT_LOOP.advantage)).toBeNull();
    expect(checkSetting('advantage', 'rloo')).toBeNull();
    expect(checkSetting('advantage', 'ppo')).toBe('advantage must be one of task-whiten, grpo, rloo, dr-grpo (got "ppo")');
    expect(checkSetting('dropZeroSpread', DEFAULT_LOOP.dropZeroSpread)).toBeNull();
    expect(checkSetting('dropZeroSpread', 1)).toBe('dropZeroSpread must be true or false (got 1)');
    expect(checkSetting('difficulty', DEFAULT_LOOP.difficulty)).toBeNull();
    expect(checkSetting('difficulty', 'band')).toBeNull();
    expect(checkSetting('difficulty', 'azr')).toBe('difficulty must be one of paper, band (got "azr")');
    expect(checkSetting('seedParity', DEFAULT_LOOP.seedParity)).toBeNull();
    expect(checkSetting('seedParity', 'yes')).toBe('seedParity must be true or false (got "yes")');
    expect(checkSetting('warmupSolverTarget', DEFAULT_RUN.warmupSolverTarget)).toBeNull();
    expect(checkSetting('warmupSolverTarget', 'stepwise')).toBe('warmupSolverTarget must be one of answer, worked, inline, steps, some-steps (got "stepwise")');
    expect(checkSetting('challengerWarmup', DEFAULT_RUN.challengerWarmup)).toBeNull();
    expect(checkSetting('challengerWarmup', 'none')).toBeNull();
    expect(checkSetting('challengerWarmup', 'harder')).toBe('challengerWarmup must be one of seeds, own, none (got "harder")');
  });

  it('parses overrides, keeps the other roles\' token limits, and refuses unknown settings', () => {
    expect(parseSettings({ proposals: 3, maxNewTokens: { solver: 20 } })).toEqual({ proposals: 3, maxNewTokens: { ...DEFAULT_LOOP.maxNewTokens, solver: 20 } });
    expect(() => parseSettings({ steps: 3 })).toThrow(/unknown setting "steps"/);
    expect(parseSettings({ steps: 3 }, { run: true })).toEqual({ steps: 3 });
    expect(() => parseSettings([1])).toThrow(/JSON object/);
    expect(() => parseSettings({ lr: -1 })).toThrow(/^lr must be a number > 0/);
    expect(parseSettings({ advantage: 'grpo', dropZeroSpread: true })).toEqual({ advantage: 'grpo', dropZeroSpread: true });
    expect(parseSettings({ difficulty: 'band', seedParity: true })).toEqual({ difficulty: 'band', seedParity: true });
    // A --config file may choose how the warm-up teaches the Challenger.
    expect(parseSettings({ challengerWarmup: 'own' })).toEqual({ challengerWarmup: 'own' });
    // The paper's difficulty and the shared budget are the defaults.
    expect(DEFAULT_LOOP).toMatchObject({ difficulty: 'paper', seedParity: false });
  });
});

describe('defaults per kind of model', () => {
  it('warms a preset from scratch up on the seeds alone, and a checkpoint so that its pretraining speaks', () => {
    expect(warmupRecipe(true)).toEqual({ challengerWarmup: 'seeds', warmupSolverTarget: 'answer', warmupLr: DEFAULT_RUN.warmupLr });
    expect(warmupRecipe(false)).toMatchObject({ challengerWarmup: 'own', warmupSolverTarget: 'worked' });
    for (const [name, value] of Object.entries(warmupRecipe(false))) expect(checkSetting(name as never, value)).toBeNull();
    expect(describeWarmup(warmupRecipe(true), true)).toBe(`warm-up for a model from scratch: Challenger seeds, Solver targets answer, lr ${DEFAULT_RUN.warmupLr}`);
  });

  it('a model from scratch keeps the loop defaults; a pretrained one gets lr 1e-6 in full, 1e-5 with LoRA, and room to reason', () => {
    expect(modelDefaults('compact', false)).toMatchObject({ kind: 'from scratch', lr: DEFAULT_LOOP.lr, maxNewTokens: DEFAULT_LOOP.maxNewTokens });
    expect(modelDefaults('compact', true).lr).toBe(DEFAULT_LOOP.lr);
    expect(modelDefaults('instruct', false)).toMatchObject({ kind: 'pretrained', lr: 1e-6, maxNewTokens: { solver: 512, challenger: 384, planner: 256, critic: 32 } });
    expect(modelDefaults('instruct', true).lr).toBe(1e-5);
    expect(describeDefaults(modelDefaults('instruct', true))).toBe(
      'defaults for instruct prompts: a pretrained model, trained through a LoRA adapter: lr 0.00001, token limits Challenger 384, Planner 256, Solver 512, Critic 32',
    );
  });
});
