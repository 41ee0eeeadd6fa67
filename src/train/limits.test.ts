import { describe, expect, it } from 'vitest';
import { freshSeed, testRuntime } from '../gpu/testUtils';
import type { Runtime } from '../gpu/runtime';
import { flatParamSize, type LlamaConfig } from '../model/config';
import { initialLora, LORA_TARGETS } from '../model/lora';
import { SMALL_CONFIG } from '../model/testUtils';
import { Transformer, type Batch } from '../model/transformer';
import { rng } from '../util/random';
import { AdamW } from './adamw';
import { trainStep } from './step';

const MiB = 2 ** 20;

/**
 * The smallest model here whose buffers exceed WebGPU's default binding limit of 128 MiB: its
 * tied embedding is exactly 128 MiB (131,072 × 256 f32), the two layers and the norms bring
 * the parameters to 132.5 MiB, whose size class (160 MiB) would have passed a 150 MiB limit.
 */
const BIG: LlamaConfig = { ...SMALL_CONFIG, vocab_size: 131_072, hidden_size: 256, intermediate_size: 512, tie_word_embeddings: true, max_position_embeddings: 16 };

function batch(seed: number): Batch {
  const r = rng(seed);
  // Four tokens: the LM head's matmuls (131,072 columns) are the step's cost.
  const B = 1;
  const T = 5;
  const tokens = Array.from({ length: B * T }, () => Math.floor(r() * BIG.vocab_size));
  return { B, T, tokens, targets: tokens.map((_, i) => (i % T === T - 1 ? -1 : tokens[i + 1]!)), weights: tokens.map(() => 1 / (B * (T - 1))) };
}

/** The loss on one batch before and after a training step on it: a model that trains memorises it. */
async function lossBeforeAfter(rt: Runtime, model: Transformer, lr: number, seed: number): Promise<[number, number]> {
  const optimizer = new AdamW(rt, model.trainable.size, model.trainable.specs);
  const b = batch(seed);
  const step = await trainStep(model, optimizer, [b], lr, false);
  expect(step.finite).toBe(true);
  const after = (await rt.read(model.forwardLoss(b).loss)).reduce((x, y) => x + y, 0);
  optimizer.destroy();
  return [step.loss, after];
}

describe('a model whose buffers exceed 128 MiB', () => {
  it('trains in full on a device whose binding limit (150 MiB) is not a power of two, its weights read back in chunks', async () => {
    expect(flatParamSize(BIG) * 4).toBeGreaterThan(128 * MiB);
    const rt = await testRuntime({ limits: { maxStorageBufferBindingSize: 150 * MiB } });
    const seed = freshSeed();
    const model = Transformer.init(rt, BIG, seed);
    try {
      expect(model.trainable.buffers.length).toBe(1);
      expect(model.params.buffer.size).toBeLessThanOrEqual(150 * MiB);
      const before = await model.trainable.read();
      const [first, next] = await lossBeforeAfter(rt, model, 1e-3, seed);
      expect(next, `seed ${seed}`).toBeLessThan(first);
      const after = await model.trainable.read();
      expect(after.every(Number.isFinite)).toBe(true);
      // Every chunk of the 64 MiB reads came back: the last weights (the final norm's) moved too.
      expect(after.subarray(after.length - BIG.hidden_size)).not.toEqual(before.subarray(before.length - BIG.hidden_size));
    } finally {
      model.destroy();
    }
  });

  it("trains a LoRA adapter under WebGPU's default limits, the base split across two buffers", async () => {
    const rt = await testRuntime({ defaultLimits: true });
    expect(rt.ctx.limits.maxStorageBufferBindingSize).toBe(128 * MiB);
    const seed = freshSeed();
    const model = Transformer.init(rt, BIG, seed);
    try {
      expect(Transformer.placement(rt, BIG)).toHaveLength(2);
      const lora = { rank: 4, alpha: 8, targets: [...LORA_TARGETS] };
      model.enableLora(lora, initialLora(BIG, lora, seed));
      const [first, next] = await lossBeforeAfter(rt, model, 1e-2, seed);
      expect(next, `seed ${seed}`).toBeLessThan(first);
    } finally {
      model.destroy();
    }
  });
});
