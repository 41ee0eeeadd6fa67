import { describe, expect, it } from 'vitest';
import { flatParamSize, PRESETS, paramCount } from './config';
import { DEFAULT_LORA, loraSize } from './lora';
import { checkFits, checkGenerationFits, generationEstimate, memoryEstimate } from './memory';

describe('presets and memory estimates', () => {
  it('the presets have the advertised sizes', () => {
    expect(paramCount(PRESETS.tiny)).toBeGreaterThan(0.9e6);
    expect(paramCount(PRESETS.tiny)).toBeLessThan(1.2e6);
    expect(paramCount(PRESETS.small)).toBeGreaterThan(9e6);
    expect(paramCount(PRESETS.small)).toBeLessThan(11e6);
    expect(paramCount(PRESETS.base)).toBeGreaterThan(45e6);
    expect(paramCount(PRESETS.base)).toBeLessThan(55e6);
  });

  it('accounts weights, gradients, Adam moments and activations', () => {
    const est = memoryEstimate(PRESETS.tiny, 8, 128);
    expect(est.gradients).toBe(est.weights);
    expect(est.adamMoments).toBe(2 * est.weights);
    expect(est.weights).toBeGreaterThanOrEqual(est.parameters * 4);
    expect(est.total).toBe(est.weights + est.gradients + est.adamMoments + est.activations);
    // Activations grow linearly with tokens.
    expect(memoryEstimate(PRESETS.tiny, 16, 128).activations).toBeCloseTo(2 * est.activations, -3);
  });

  it('with LoRA only the adapter has gradients and moments; its activations are counted', () => {
    const c = PRESETS.small;
    const full = memoryEstimate(c, 8, 128);
    const lora = memoryEstimate(c, 8, 128, { lora: DEFAULT_LORA });
    const A = loraSize(c, DEFAULT_LORA);
    expect(lora.trainable).toBe(A);
    expect(full.trainable).toBe(full.parameters);
    expect(lora.gradients).toBe(4 * A);
    expect(lora.adamMoments).toBe(8 * A);
    expect(lora.weights).toBe(full.weights + 4 * A);
    // Inference's merged copy: every projection of every layer, in f32.
    expect(full.inferenceCopies).toBe(0);
    const c4 = c.num_hidden_layers * 4 * c.hidden_size;
    const hd = c.hidden_size / c.num_attention_heads;
    expect(lora.inferenceCopies).toBe(c4 * ((c.num_attention_heads + 2 * c.num_key_value_heads) * hd + c.num_attention_heads * hd + 3 * c.intermediate_size));
    expect(memoryEstimate(c, 8, 128, { lora: { ...DEFAULT_LORA, targets: ['k_proj', 'v_proj'] } }).inferenceCopies).toBe(
      c4 * (c.num_attention_heads + 2 * c.num_key_value_heads) * hd,
    );
    expect(lora.activations).toBeGreaterThan(full.activations);
    expect(lora.total).toBeLessThan(full.total);
    expect(lora.total).toBe(lora.weights + lora.inferenceCopies + lora.gradients + lora.adamMoments + lora.activations);
  });

  it('a base in f16 halves the base weights and keeps the adapter stacked, not merged; it needs an adapter', () => {
    const c = PRESETS.small;
    const lora = memoryEstimate(c, 8, 128, { lora: DEFAULT_LORA });
    const half = memoryEstimate(c, 8, 128, { lora: DEFAULT_LORA, baseDtype: 'f16' });
    expect(half.weights).toBe(lora.weights - 2 * flatParamSize(c));
    // An f16 base keeps the adapter apart in inference: no merged copy, its fused blocks stacked
    // (per layer, q|k|v's three A [r, H] and its B's [q + 2kv, 3r]; gate|up's two A and [2I, 2r]).
    const hd = c.hidden_size / c.num_attention_heads;
    const r = DEFAULT_LORA.rank;
    const qkvRows = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd;
    expect(half.inferenceCopies).toBe(4 * c.num_hidden_layers * (3 * r * (c.hidden_size + qkvRows) + 2 * r * (c.hidden_size + 2 * c.intermediate_size)));
    expect([half.gradients, half.adamMoments, half.activations]).toEqual([lora.gradients, lora.adamMoments, lora.activations]);
    expect(half.total).toBe(lora.total - 2 * flatParamSize(c) - lora.inferenceCopies + half.inferenceCopies);
    expect(() => memoryEstimate(c, 8, 128, { baseDtype: 'f16' })).toThrow(/stored in f16 is frozen: it trains only with a LoRA adapter/);
  });

  it('refuses, with the numbers, a configuration beyond the adapter limit', () => {
    expect(() => checkFits(PRESETS.base, 64, 1024, 128 * 2 ** 20)).toThrow(/largest buffer needs [\d.]+ MiB but the adapter binds at most 128.0 MiB/);
    expect(() => checkFits(PRESETS.tiny, 1, 512, 2 ** 30)).toThrow(/exceeds max_position_embeddings 256/);
    expect(checkFits(PRESETS.tiny, 8, 128, 2 ** 30).total).toBeGreaterThan(0);
  });

  it('an f16 KV cache is half the f32 one, and a generation refused in f32 can fit in f16, the refusal naming its bytes', () => {
    const c = PRESETS.tiny;
    const [f32, f16] = [generationEstimate(c, 32, 1, 250), generationEstimate(c, 32, 1, 250, 'f16')];
    expect(f16.kvCache * 2).toBe(f32.kvCache);
    expect(f32.kvCache).toBe(2 * c.num_hidden_layers * 32 * 250 * c.num_key_value_heads * (c.hidden_size / c.num_attention_heads) * 4);
    // A limit between the two caches' layers (and above the prefill's activations).
    const limit = (f32.largestBuffer + f16.largestBuffer) / 2;
    expect(f16.largestBuffer).toBeLessThan(f32.largestBuffer);
    expect(() => checkGenerationFits(c, 32, 1, 250, limit)).toThrow(/KV cache of [\d.]+ MiB \(.* · 4 bytes\)/);
    expect(checkGenerationFits(c, 32, 1, 250, limit, 'f16').kvCache).toBe(f16.kvCache);
  });

  it("a prefill of rows sharing prompts counts each distinct prompt once: 8 problems × 4 samples fit where 32 prompts would not", () => {
    // The kit's SAGE step on Qwen2.5-0.5B's widths (quick: one layer): its Solver prefills 117-token prompts.
    const c = { ...PRESETS.tiny, hidden_size: 896, intermediate_size: 4864, num_attention_heads: 14, num_key_value_heads: 2, max_position_embeddings: 1024 };
    const limit = 128 * 2 ** 20;
    const [all, shared] = [32, 8].map((rows) => generationEstimate(c, 32, 117, 9, 'f32', rows));
    // The widest prefill activation (gate|up of every prompt token) is the largest buffer either way.
    expect(all!.largestBuffer).toBe(32 * 117 * 2 * 4864 * 4);
    expect(shared!.largestBuffer).toBe(8 * 117 * 2 * 4864 * 4);
    expect(() => checkGenerationFits(c, 32, 117, 9, limit)).toThrow(/a prefill of [\d.]+ MiB; the largest buffer needs 138\.9 MiB but the adapter binds at most 128\.0 MiB/);
    expect(checkGenerationFits(c, 32, 117, 9, limit, 'f32', 8).prefill).toBe(shared!.prefill);
    expect(() => checkGenerationFits(c, 32, 117 * 5, 9, limit, 'f32', 8)).toThrow(/a prefill of [\d.]+ MiB \(8 distinct prompts\); the largest buffer/);
  });
});
