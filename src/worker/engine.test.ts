import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importCheckpoint } from '../model/checkpoint';
import { testPlatform } from '../gpu/testUtils';
import { DEFAULT_SFT, type SftSettings } from '../train/sftSettings';
import type { CheckpointFile, GenerateProgress, SftStepReport } from './api';
import { createEngine } from './engine';

const PAIRS = [
  { prompt: 'Q: 1+1=', response: '2' },
  { prompt: 'Q: 2+2=', response: '4' },
  { prompt: 'Q: colour of the sky?', response: 'blue' },
];
const SMALL: SftSettings = { ...DEFAULT_SFT, batchSize: 2, seqLen: 16, steps: 3, warmupSteps: 1, lr: 3e-3 };

function engine() {
  return createEngine(testPlatform('suite'));
}

describe('engine: fine-tuning the held model', () => {
  it('trains on a corpus read in the engine, the loss on every token: a document is a pair with an empty prompt', async () => {
    const e = engine();
    const documents = ['3+4=7', 'Twelve minus five is seven.', '6*7=42'];
    const read = await e.readSftCorpus('corpus.txt', new Blob([documents.join('\n')]), 'lines');
    expect(read).toMatchObject({ name: 'corpus.txt', documents: 3, format: 'text', split: 'lines', errorCount: 0 });
    // One step from the same initial weights: its loss is measured before the update.
    const first = async (examples: Parameters<typeof e.sft>[0]) => {
      await e.loadPreset('tiny', 11);
      const steps: SftStepReport[] = [];
      await e.sft(examples, { ...SMALL, seqLen: 32, steps: 1 }, (r) => steps.push(r));
      return steps[0]!.loss;
    };
    const corpus = await first(null);
    const pairs = await first(documents.map((d) => ({ prompt: '', response: d })));
    expect(Number.isFinite(corpus)).toBe(true);
    // The same terms (f32 sums in the same order; only the kernels the first step tuned may differ).
    expect(Math.abs(corpus - pairs)).toBeLessThan(1e-4 * corpus);
  });

  it('trains a preset, exports it, and imports the export with its optimizer state', async () => {
    const e = engine();
    await expect(e.sft(PAIRS, SMALL, () => {})).rejects.toThrow(/no model loaded/);
    const fresh = await e.loadPreset('tiny', 3);
    expect(fresh).toMatchObject({ origin: 'tiny', layers: 4, hidden: 128, tokenizer: 'byte-level', chatTemplate: false, rope: 'default', optimizerStep: 0 });

    const steps: SftStepReport[] = [];
    const run = await e.sft(PAIRS, SMALL, (r) => steps.push(r));
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3]);
    expect(steps.every((s) => Number.isFinite(s.loss) && s.finite)).toBe(true);
    expect(run).toMatchObject({ steps: 3, stopped: false, skipped: 0 });
    expect(run.model.optimizerStep).toBe(3);

    // A second run continues the optimizer's step count and schedule, here on a seed file
    // read in the engine: its bad lines numbered, its pairs held there.
    const file = new Blob([['{"question": "1+1=?", "answer": "2"}', '{oops', '{"question": "2+3=?", "answer": "5"}'].join('\n')]);
    const read = await e.readSftSeeds('seeds.jsonl', file, '');
    expect(read).toMatchObject({ name: 'seeds.jsonl', pairs: 2, errorCount: 1, counts: { qa: 2 }, duplicates: 0, notProblems: 1, fields: '' });
    expect(read.errors[0]).toMatchObject({ line: 2 });
    await expect(e.readSftSeeds('seeds.jsonl', file, 'question')).rejects.toThrow(/field mapping/);
    const more = await e.sft(null, { ...SMALL, steps: 2 }, () => {});
    expect(more.model.optimizerStep).toBe(5);

    const files = await e.exportCheckpoint();
    const names = files.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'optimizer.safetensors']));
    const ckpt = importCheckpoint(new Map(files.map((f) => [f.name, f.bytes])));
    expect(ckpt.optimizer?.step).toBe(5);
    expect(ckpt.runState).toMatchObject({ origin: 'tiny', steps: 5 });

    const other = engine();
    const imported = await other.importCheckpoint('my-run', files);
    expect(imported).toMatchObject({ origin: 'my-run', parameters: fresh.parameters, optimizerStep: 5 });
    // The imported weights are the exported ones: exporting again gives the same tensors.
    const again = await other.exportCheckpoint();
    const bytes = (fs: CheckpointFile[]) => fs.find((f) => f.name === 'model.safetensors')!.bytes;
    expect(Buffer.from(bytes(again)).equals(Buffer.from(bytes(files)))).toBe(true);
  });

  it('refuses a bad checkpoint with the reason and keeps the held model', async () => {
    const e = engine();
    await e.loadPreset('tiny', 1);
    const files = await e.exportCheckpoint();
    const truncated = files.map((f) => (f.name === 'model.safetensors' ? { ...f, bytes: f.bytes.subarray(0, f.bytes.length - 100) } : f));
    await expect(e.importCheckpoint('broken', truncated)).rejects.toThrow(/model\.safetensors/);
    await expect(e.importCheckpoint('no config', files.filter((f) => f.name !== 'config.json'))).rejects.toThrow(/config\.json is missing/);
    const kept = await e.sft(PAIRS, { ...SMALL, steps: 1 }, () => {});
    expect(kept.model.origin).toBe('tiny');
  });

  it('stops a run after the current step, refuses bad settings, and runs one job at a time', async () => {
    const e = engine();
    await e.loadPreset('tiny', 2);
    await expect(e.sft(PAIRS, { ...SMALL, batchSize: 0 }, () => {})).rejects.toThrow(/batchSize must be a positive integer/);
    await expect(e.sft(PAIRS, { ...SMALL, seqLen: 4096 }, () => {})).rejects.toThrow(/exceeds the model's context/);
    await expect(e.sft([], SMALL, () => {})).rejects.toThrow(/no examples/);
    const running = e.sft(PAIRS, { ...SMALL, steps: 50 }, (r) => {
      if (r.step === 2) e.stopSft();
    });
    await expect(e.exportCheckpoint()).rejects.toThrow(/while fine-tuning is running/);
    const result = await running;
    expect(result).toMatchObject({ stopped: true, steps: 2 });
  });
});

describe('engine: generation with the held model', () => {
  it('completes prompts, streams each row at a bounded rate, and refuses while another job runs', async () => {
    const e = engine();
    await expect(e.generate(['Q: 1+1='], {})).rejects.toThrow(/no model loaded/);
    await e.loadPreset('tiny', 5);
    const updates: GenerateProgress[] = [];
    const out = await e.generate(['Q: 1+1=', 'a longer prompt'], { maxNewTokens: 6, seed: 3, eosTokenIds: [] }, (u) => updates.push(u));
    expect(out.rows.map((r) => r.completionIds.length)).toEqual([6, 6]);
    expect(out.rows.every((r) => r.finishReason === 'length' && r.modelLogprobs.length === 6)).toBe(true);
    // At most one update per step (fewer when steps come faster than one per 100 ms); the last
    // carries the final texts.
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(updates.length).toBeLessThanOrEqual(6);
    expect(updates.at(-1)!.texts).toEqual(out.rows.map((r) => r.text));
    expect(updates.at(-1)!.finished).toEqual([true, true]);
    // The same seed gives the same completions.
    const again = await e.generate(['Q: 1+1=', 'a longer prompt'], { maxNewTokens: 6, seed: 3, eosTokenIds: [] });
    expect(again.rows.map((r) => r.completionIds)).toEqual(out.rows.map((r) => r.completionIds));
    const training = e.sft(PAIRS, { ...SMALL, steps: 2 }, () => {});
    await expect(e.generate(['x'], {})).rejects.toThrow(/cannot start generating while fine-tuning is running/);
    await training;
  });
});
