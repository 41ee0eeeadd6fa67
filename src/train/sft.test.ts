import { describe, expect, it } from 'vitest';
import { testRuntime } from '../gpu/testing';
import { PRESETS } from '../model/config';
import { ByteTokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import { MEMORISE_PAIRS, memorisationRun } from './memorise';
import { rng } from '../util/random';
import { encodePair, makeBatches, SftTrainer } from './sft';

describe('SFT data', () => {
  it('frames [BOS] prompt response [EOS] and trains only on the response', () => {
    const tok = new ByteTokenizer();
    const s = encodePair(tok, { prompt: 'ab', response: 'c' }, 64);
    expect(s.ids).toEqual([tok.specials.bos, 97, 98, 99, tok.specials.eos]);
    expect(s.lossMask).toEqual([0, 0, 0, 1, 1]);
    const [batch] = makeBatches([s], 2, 6, tok.specials.pad, false);
    // Position 2 ('b') predicts 'c', position 3 ('c') predicts EOS; nothing else counts.
    expect(batch!.targets).toEqual([-1, -1, 99, tok.specials.eos, -1, -1, -1, -1, -1, -1, -1, -1]);
    expect(batch!.mask).toEqual([1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('truncates long prompts from the front so the response is always trained on', () => {
    const tok = new ByteTokenizer();
    const s = encodePair(tok, { prompt: 'x'.repeat(100) + 'END', response: 'answer' }, 16);
    expect(s.ids.length).toBe(16);
    expect(s.ids[0]).toBe(tok.specials.bos);
    expect(tok.decode(s.ids.slice(1))).toBe('xxxxxENDanswer<|eos|>');
    expect(s.lossMask.filter(Boolean).length).toBe(7);
    const long = encodePair(tok, { prompt: 'q'.repeat(50), response: 'r'.repeat(50) }, 16);
    expect(long.ids.slice(1, 8).every((t) => t === 113)).toBe(true); // half the budget keeps prompt
    expect(long.lossMask.filter(Boolean).length).toBe(8);
  });

  it('packs whole examples into rows, none cut at a row end, nothing lost', () => {
    const tok = new ByteTokenizer();
    const random = rng(11);
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    // Examples of random lengths, each with its own prompt and response bytes so it can be found whole.
    const seqs = Array.from({ length: 60 }, (_, i) => {
      const n = 3 + Math.floor(random() * 20);
      return encodePair(tok, { prompt: `${i}:` + letters[i % 26]!.repeat(n), response: letters[(i * 7) % 26]!.repeat(1 + (i % 4)) }, 128);
    });
    const T = 64;
    const batches = makeBatches(seqs, 2, T, tok.specials.pad, true);
    // A row's ids: its masked tokens, then the last one's target (the row holds T + 1 ids).
    const rows = batches.flatMap((b) =>
      Array.from({ length: b.B }, (_, r) => {
        const n = b.mask.slice(r * T, r * T + T).filter(Boolean).length;
        const ids = b.tokens.slice(r * T, r * T + n);
        const last = b.targets[r * T + n - 1];
        return n && last !== undefined && last >= 0 && ids.length === T ? [...ids, last] : ids;
      }),
    ).filter((ids) => ids.length);
    const contains = (row: number[], ids: number[]) => row.some((_, i) => ids.every((t, j) => row[i + j] === t));
    for (const s of seqs) expect(rows.filter((row) => contains(row, s.ids)).length).toBe(1);
    expect(rows.reduce((n, row) => n + row.length, 0)).toBe(seqs.reduce((n, s) => n + s.ids.length, 0));
    // Best fit fills rows: at most two more than the tokens need.
    expect(rows.length).toBeLessThanOrEqual(Math.ceil(seqs.reduce((n, s) => n + s.ids.length, 0) / (T + 1)) + 2);
    // Every response token and EOS is still a target in its row.
    const targets = batches.reduce((n, b) => n + b.targets.filter((t) => t >= 0).length, 0);
    expect(targets).toBe(seqs.reduce((n, s) => n + s.lossMask.filter(Boolean).length, 0));
  });
});

describe('SFT training', () => {
  it('memorises a small set: the tiny preset reaches low loss, deterministically', async () => {
    const rt = await testRuntime();
    // Kernel choices fixed from the first step (no autotuning), so two runs are bit-identical;
    // the second run checks that over its first steps, on the same 60-step schedule.
    const run = async (steps: number) => {
      const { model, trainer } = memorisationRun(rt, 60, false);
      const losses: number[] = [];
      for (let i = 0; i < steps; i++) {
        const r = await trainer.step();
        expect(r.finite).toBe(true);
        losses.push(r.loss);
      }
      trainer.destroy();
      model.destroy();
      return losses;
    };
    const losses = await run(60);
    expect(losses[0]!).toBeGreaterThan(4); // ≈ ln(264) at initialisation
    expect(losses[losses.length - 1]!).toBeLessThan(0.1);
    expect(await run(8)).toEqual(losses.slice(0, 8));
  });

  it('keeps live GPU buffers and bytes flat over 50 training steps', async () => {
    const rt = await testRuntime();
    const model = Transformer.init(rt, { ...PRESETS.tiny, num_hidden_layers: 1 }, 1);
    const trainer = new SftTrainer(model, new ByteTokenizer(), MEMORISE_PAIRS, {
      batchSize: 2,
      seqLen: 16,
      accumulation: 2,
      schedule: { lr: 1e-3, warmupSteps: 0, totalSteps: 50, kind: 'constant' },
    });
    await trainer.step();
    const before = rt.stats();
    for (let i = 0; i < 50; i++) await trainer.step();
    const after = rt.stats();
    expect(after.liveBuffers).toBe(before.liveBuffers);
    expect(after.liveBytes).toBe(before.liveBytes);
    expect(after.created).toBe(before.created);
    trainer.destroy();
    model.destroy();
  });
});
