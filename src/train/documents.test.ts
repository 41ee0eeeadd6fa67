import { describe, expect, it } from 'vitest';
import { importCheckpoint } from '../model/checkpoint';
import { PRESETS } from '../model/config';
import { ByteTokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import { freshSeed, testRuntime } from '../gpu/testUtils';
import { rng } from '../util/random';
import { ModelSession } from './session';
import { encodeDocument, encodePair, makeBatches, SftTrainer, type SftDocument, type SftExample, type SftOptions } from './sft';
import type { SftSettings } from './sftSettings';

const tok = new ByteTokenizer();

/** Random printable documents of `min`..`max` characters. */
function documents(random: () => number, n: number, min: number, max: number): SftDocument[] {
  return Array.from({ length: n }, () => ({
    text: Array.from({ length: min + Math.floor(random() * (max - min + 1)) }, () => String.fromCharCode(32 + Math.floor(random() * 95))).join(''),
  }));
}

describe('documents as training examples', () => {
  it('a document that fits is the pair with an empty prompt; a longer one is cut into windows, every token after BOS a target once', () => {
    const seed = freshSeed();
    const random = rng(seed);
    for (const { text } of documents(random, 40, 0, 60)) {
      const ids = [tok.specials.bos, ...tok.encode(text), tok.specials.eos];
      const maxLen = 2 + Math.floor(random() * 30);
      const windows = encodeDocument(tok, text, maxLen);
      if (ids.length <= maxLen) expect(windows, `seed ${seed}`).toEqual([encodePair(tok, { prompt: '', response: text }, maxLen)]);
      expect(windows.every((w) => w.ids.length <= maxLen && w.ids.length >= 2)).toBe(true);
      // Through the batches (padded, and packed): the targets are the document's tokens after BOS, in order, each once.
      for (const packing of [false, true]) {
        const T = maxLen - 1;
        const targets = makeBatches(windows, 3, T, tok.specials.pad, packing).flatMap((b) => b.targets.filter((t) => t >= 0));
        if (!packing) expect(targets, `seed ${seed}, ${text.length} characters in windows of ${maxLen}`).toEqual(ids.slice(1));
        else expect([...targets].sort()).toEqual(ids.slice(1).sort());
      }
    }
  });
});

describe('pretraining in the SFT trainer', () => {
  const config = { ...PRESETS.tiny, num_hidden_layers: 2 };
  const options = (steps: number, seed: number): SftOptions => ({
    batchSize: 2,
    seqLen: 32,
    accumulation: 2,
    schedule: { lr: 3e-3, warmupSteps: 2, totalSteps: steps, kind: 'cosine' },
    packing: true,
    seed,
    autotune: false,
  });
  /** Per-step losses and the final weights of a run from the same initial weights. */
  const train = async (examples: SftExample[], steps: number, seed: number) => {
    const rt = await testRuntime();
    const model = Transformer.init(rt, config, seed);
    const trainer = new SftTrainer(model, tok, examples, options(steps, seed));
    const losses: number[] = [];
    for (let i = 0; i < steps; i++) losses.push((await trainer.step()).loss);
    const weights = await model.trainable.read();
    trainer.destroy();
    model.destroy();
    return { losses, weights };
  };

  it('documents train exactly as pairs {prompt: "", response: document} where those fit a row: the same losses and weights, bit for bit', async () => {
    const seed = freshSeed();
    const docs = documents(rng(seed), 9, 1, 30);
    const asDocs = await train(docs, 4, seed);
    const asPairs = await train(docs.map((d) => ({ prompt: '', response: d.text })), 4, seed);
    expect(asDocs.losses, `seed ${seed}`).toEqual(asPairs.losses);
    expect(asDocs.losses.every(Number.isFinite)).toBe(true);
    expect(asDocs.weights.every((w, i) => w === asPairs.weights[i]), `seed ${seed}`).toBe(true);
  });

  it('a trainer started at another\'s data cursor, weights and AdamW state goes on as that one would have, bit for bit', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    // Short epochs (a few batches each, some documents windowed): the cut falls inside one, the steps after it cross several.
    const examples: SftExample[] = [...documents(rng(seed), 5, 1, 70), { prompt: 'Q ', response: 'A' }];
    const [k, m] = [3, 4];
    const settings: SftSettings = { batchSize: 2, seqLen: 32, accumulation: 2, steps: k + m, lr: 3e-3, warmupSteps: 2, seed, packing: true };
    const run = async (session: ModelSession, steps: number, cursor?: { epoch: number; batch: number }) => {
      const trainer = await session.startSft(examples, { ...settings, steps }, cursor);
      await trainer.prepare();
      const losses: number[] = [];
      for (let i = 0; i < steps; i++) losses.push((await trainer.step()).loss);
      return { losses, cursor: trainer.cursor };
    };
    const fresh = () => ModelSession.create(rt, { kind: 'preset', preset: 'tiny', seed });
    const whole = fresh();
    const all = await run(whole, k + m);
    const cut = fresh();
    const first = await run(cut, k);
    expect(first.losses).toEqual(all.losses.slice(0, k));
    // Through a checkpoint's files, as a resumed command line reads them.
    const resumed = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(await cut.exportFiles()), name: 'cut' });
    expect(resumed.optimizerStep).toBe(k);
    const rest = await run(resumed, m, first.cursor);
    expect(first.cursor.epoch, 'the cut is past the first epoch').toBeGreaterThan(0);
    expect(rest.losses, `seed ${seed}`).toEqual(all.losses.slice(k));
    expect(rest.cursor).toEqual(all.cursor);
    const [a, b] = [await whole.model.trainable.read(), await resumed.model.trainable.read()];
    expect(a.every((w, i) => w === b[i]), `seed ${seed}: weights`).toBe(true);
    for (const s of [whole, cut, resumed]) s.destroy();
  });

  it('the held-out loss is the mean loss per token of the documents, the weights untouched', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const model = Transformer.init(rt, config, seed);
    const trainer = new SftTrainer(model, tok, documents(rng(seed), 3, 5, 20), options(10, seed));
    const held = documents(rng(seed + 1), 7, 1, 70);
    const before = await model.trainable.read();
    const loss = await trainer.meanLoss(trainer.batchesOf(held));
    // Each document alone, weighted by its tokens: the same mean.
    let sum = 0;
    let count = 0;
    for (const d of held) {
      const n = encodeDocument(tok, d.text, 33).reduce((a, w) => a + w.ids.length - 1, 0);
      sum += n * (await trainer.meanLoss(trainer.batchesOf([d])));
      count += n;
    }
    expect(Math.abs(loss - sum / count), `seed ${seed}`).toBeLessThan(1e-5 * loss);
    expect(loss).toBeGreaterThan(4); // ≈ ln(264) at initialisation
    expect((await model.trainable.read()).every((w, i) => w === before[i])).toBe(true);
    trainer.destroy();
    model.destroy();
  });
});
