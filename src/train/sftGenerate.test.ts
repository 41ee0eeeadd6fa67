import { describe, expect, it } from 'vitest';
import { testRuntime } from '../gpu/testing';
import { PRESETS } from '../model/config';
import { Generator } from '../model/generate';
import { ByteTokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import { MEMORISE_PAIRS } from './memorise';
import { SftTrainer } from './sft';

describe('a fine-tuned model writes', () => {
  it('after memorising short answers, greedy generation gives them back and stops at EOS', async () => {
    const rt = await testRuntime();
    const tokenizer = new ByteTokenizer();
    // One layer of the tiny preset learns the four answers in a few dozen steps.
    const model = Transformer.init(rt, { ...PRESETS.tiny, num_hidden_layers: 1 }, 1234);
    const trainer = new SftTrainer(model, tokenizer, MEMORISE_PAIRS, {
      batchSize: 4,
      seqLen: 24,
      accumulation: 1,
      schedule: { lr: 1e-2, warmupSteps: 3, totalSteps: 40, kind: 'cosine' },
      adamw: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
      seed: 7,
      autotune: false,
    });
    let loss = Infinity;
    for (let i = 0; i < 40; i++) loss = (await trainer.step()).loss;
    trainer.destroy();
    const g = new Generator(model, tokenizer);
    const out = await g.generate(MEMORISE_PAIRS.map((p) => p.prompt), { temperature: 0, maxNewTokens: 16 });
    expect(out.rows.map((r) => r.text), `final loss ${loss}`).toEqual(MEMORISE_PAIRS.map((p) => p.response));
    expect(out.rows.map((r) => r.finishReason)).toEqual(['eos', 'eos', 'eos', 'eos']);
    g.release();
    model.destroy();
  });
});
