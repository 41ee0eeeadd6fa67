import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSafetensors } from '../model/safetensors';
import { parseKernelPlan } from '../gpu/kernelPlan';
import { testPlatform } from '../gpu/testUtils';
import type { CheckpointFile, EvolveEvent } from './api';
import { createEngine } from './engine';

const lines = readFileSync('data/seeds/curriculum-500.jsonl', 'utf8').trim().split('\n');
const held = readFileSync('data/validation/curriculum-1000.jsonl', 'utf8').trim().split('\n');
/** Small settings: the API's mechanics on the GPU, not learning (the documented runs measure that). */
const SMALL = {
  warmupSteps: 4, steps: 3, evalEvery: 2, validationLimit: 4, patience: 10,
  proposals: 2, trainProblems: 2, solverSamples: 2, difficultySamples: 2,
  maxNewTokens: { challenger: 24, planner: 16, solver: 12, critic: 6 },
};

function engine() {
  return createEngine(testPlatform('suite'));
}

/** Waits for the engine's state; the limit only catches a hang (a first step on a busy 2-core machine has taken over 300 s). */
const waitFor = async (what: string, pred: () => boolean) => {
  const deadline = Date.now() + 14 * 60_000;
  while (!pred() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!pred()) throw new Error(`timed out waiting for ${what}`);
};

const file = (files: CheckpointFile[], name: string) => {
  const f = files.find((x) => x.name === name);
  if (!f) throw new Error(`no ${name} in ${files.map((x) => x.name).join(', ')}`);
  return f.bytes;
};

describe('engine: the loop for the lab', () => {
  it('loads problems off the page, runs, pauses at a phase boundary, exports while paused, resumes, and a second engine continues the export', async () => {
    const e = engine();
    const seeds = await e.loadProblems('seeds', 'seeds.jsonl', new Blob([[...lines.slice(0, 12), '{"question": 3', ...lines.slice(12, 16)].join('\n')]));
    expect(seeds).toMatchObject({ problems: 16, counts: { curriculum: 16 }, errorCount: 1, errors: [{ line: 13 }] });
    expect(seeds.preview).toHaveLength(5);
    await e.loadProblems('validation', 'held-out.jsonl', new Blob([held.slice(0, 8).join('\n')]));
    await expect(e.evolve({ method: 'sage', templates: 'compact', settings: SMALL }, () => {})).rejects.toThrow(/no model loaded/);
    await e.loadPreset('tiny', 0);
    await expect(e.evolve({ method: 'sage', templates: 'compact', settings: { ...SMALL, proposals: 0 } }, () => {})).rejects.toThrow(/proposals must be an integer ≥ 1 \(got 0\)/);

    const events: EvolveEvent[] = [];
    let batches = 0;
    const finished = e.evolve({ method: 'sage', templates: 'compact', settings: { ...SMALL, seed: 3 } }, (batch) => {
      batches++;
      events.push(...batch);
    });
    await waitFor('the first step', () => events.some((x) => x.type === 'step'));
    e.pauseEvolve();
    await waitFor('the pause', () => events.some((x) => x.type === 'paused'));
    // Held: nothing happens while paused.
    const count = events.length;
    await new Promise((r) => setTimeout(r, 600));
    expect(events.length).toBe(count);
    await expect(e.generate(['x'], {})).rejects.toThrow(/while a loop run is running/);

    const exported = await e.exportRun();
    const names = exported.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['config.json', 'metrics.jsonl', 'transcripts.jsonl', 'bank-events.jsonl', 'state.json', 'seeds.json', 'validation.json', 'warmup/model.safetensors', 'last/model.safetensors', 'last/optimizer.safetensors', 'last/config.json']));
    // The kernels the run ran on, which the CLI's --resume and --replay-plan follow.
    const plan = parseKernelPlan(new TextDecoder().decode(file(exported, 'kernels.json')), 'kernels.json');
    expect(Object.keys(plan.matmul).length + plan.untuned.length).toBeGreaterThan(0);
    const tensors = parseSafetensors(file(exported, 'last/model.safetensors'));
    expect([...tensors.tensors.keys()]).toContain('model.embed_tokens.weight');
    const state = JSON.parse(new TextDecoder().decode(file(exported, 'state.json'))) as { step: number };
    expect(state.step).toBeGreaterThanOrEqual(1);

    e.resumeEvolve();
    const result = await finished;
    expect(result).toMatchObject({ reason: 'steps', state: { step: 3, warmedUp: true } });
    const steps = events.filter((x): x is Extract<EvolveEvent, { type: 'step' }> => x.type === 'step');
    expect(steps.map((x) => x.metrics.step)).toEqual([0, 1, 2]);
    // Batched: fewer messages than events.
    expect(batches).toBeLessThan(events.length);
    expect(events.some((x) => x.type === 'bank') || steps.every((x) => x.metrics.bank.admittedThisStep === 0)).toBe(true);
    expect(events.filter((x) => x.type === 'validation').length).toBe(3);

    // The weights moved from the warm-up's when any step updated them.
    const after = await e.exportRun();
    const updated = steps.some((x) => x.metrics.loss !== null);
    const same = Buffer.from(file(after, 'warmup/model.safetensors')).equals(Buffer.from(file(after, 'last/model.safetensors')));
    expect(same).toBe(!updated);

    // A second engine continues the paused export for one more step.
    const other = engine();
    const more: EvolveEvent[] = [];
    const resumed = await other.resumeRun(exported, (b) => more.push(...b), { steps: 1 });
    expect(resumed.state.step).toBe(state.step + 1);
    expect(more.filter((x) => x.type === 'step').map((x) => x.type === 'step' && x.metrics.step)).toEqual([state.step]);
    const again = await other.exportRun();
    // Resumed with the steps alone, the run keeps the settings it recorded, its seed among them.
    const config = JSON.parse(new TextDecoder().decode(file(again, 'config.json'))) as { settings: Record<string, unknown> };
    expect(config.settings).toMatchObject({ seed: 3, proposals: SMALL.proposals, validationLimit: SMALL.validationLimit, steps: 1 });
    const metrics = new TextDecoder().decode(file(again, 'metrics.jsonl')).trim().split('\n');
    // The exported history and the new step.
    expect(metrics.length).toBe(1 + state.step + 1);
    await expect(other.resumeRun(exported.filter((f) => f.name !== 'state.json'), () => {})).rejects.toThrow(/no state\.json/);
  });
});
