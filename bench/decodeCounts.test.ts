import { describe, expect, it } from 'vitest';
import { testRuntime } from '../src/gpu/testUtils';
import { headDim, PRESETS } from '../src/model/config';
import { SLOT_GRANULE } from '../src/model/generate';
import { attentionSplits } from '../src/model/kernels/kvcache';
import { Transformer } from '../src/model/transformer';
import { decodeCounts } from './decodeCounts';

describe('decode counts', () => {
  it.each([1, 4])("a GPU's untuned decode step of %i rows: a split-K workgroup per 4 weight columns, flash-decoding per chunk and kv head, each weight requested once", async (B) => {
    const rt = await testRuntime({ serialRows: false, fusedPrologues: true });
    const c = PRESETS.tiny;
    const model = Transformer.init(rt, c, 1);
    // Past two chunks of 64 slots, so that the combine runs.
    const prompt = 140;
    const counts = await decodeCounts(model, B, { prompt, gpuPlan: true });
    const hd = headDim(c);
    const qkv = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd;
    const columns = [qkv, c.hidden_size, 2 * c.intermediate_size, c.hidden_size];
    const groups = (N: number) => Math.ceil(N / 4);
    const L = c.num_hidden_layers;
    // Four projections a layer (norms and SwiGLU fused into them), then the LM head.
    expect(counts.ops['matmul_splitk-sg']).toEqual({
      dispatches: 4 * L + 1,
      workgroups: L * columns.reduce((n, N) => n + groups(N), 0) + groups(c.vocab_size),
    });
    // The step counted is the second decode step: slot prompt + 1, in a cache of the prompt and
    // 3 new tokens rounded up to whole granules.
    const T = Math.ceil((prompt + 3) / SLOT_GRANULE) * SLOT_GRANULE;
    const { splits } = attentionSplits({ B, T, kvHeads: c.num_key_value_heads, hd, dtype: 'f32' }, B, c.num_attention_heads, prompt + 1);
    expect(splits).toBeGreaterThan(1);
    // The rotary embedding and the cache store in the attention's own dispatch: none of their own.
    expect(counts.ops.rope_kv_attention_split).toEqual({ dispatches: L, workgroups: L * splits * c.num_key_value_heads * B });
    expect(counts.ops.decode_attention_combine?.dispatches).toBe(L);
    expect(counts.ops.rope_kv_store).toBeUndefined();
    expect(Object.keys(counts.ops).some((op) => op.startsWith('matmul_') && op !== 'matmul_splitk-sg')).toBe(false);
    // Tied embeddings: the LM head reads the embedding, so the step requests every matrix once (norms aside).
    expect(counts.weightBytes).toBeLessThanOrEqual(counts.modelBytes);
    expect(counts.weightBytes).toBeGreaterThan(0.99 * counts.modelBytes);
    model.destroy();
  });
});
