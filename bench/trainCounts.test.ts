import { describe, expect, it } from 'vitest';
import { testRuntime } from '../src/gpu/testUtils';
import { headDim, PRESETS } from '../src/model/config';
import { Transformer } from '../src/model/transformer';
import { policyStepCounts, trainStepCounts } from './trainCounts';

describe('training step counts', () => {
  it("a GPU's untuned step: tiled attention over 16-row tiles, two-stage norm gradients, 128×128 matmul tiles where they make 64 workgroups", async () => {
    const rt = await testRuntime({ serialRows: false });
    const c = PRESETS.tiny;
    const model = Transformer.init(rt, c, 1);
    const [B, T] = [4, 256];
    const counts = trainStepCounts(model, B, T);
    const L = c.num_hidden_layers;
    const tiles = Math.ceil(T / 16);
    expect(headDim(c) % 4).toBe(0);
    expect(counts.ops.attention_forward).toEqual({ dispatches: L, workgroups: L * B * c.num_attention_heads * tiles });
    expect(counts.ops.attention_backward_dq).toEqual({ dispatches: L, workgroups: L * B * c.num_attention_heads * tiles });
    expect(counts.ops.attention_backward_dkv).toEqual({ dispatches: L, workgroups: L * B * c.num_key_value_heads * tiles });
    // Two norm weights a layer and the final norm, each in two stages.
    expect(counts.ops.col_partial?.dispatches).toBe(2 * L + 1);
    expect(counts.ops.col_reduce?.dispatches).toBe(2 * L + 1);
    // The fused gate|up projection (1,024 × 1,024 outputs: 64 tiles of 128) and nothing smaller.
    expect(counts.ops['matmul_tiled-128']).toEqual({ dispatches: L, workgroups: L * ((B * T) / 128) * ((2 * c.intermediate_size) / 128) });
    expect(Object.keys(counts.ops).filter((op) => op.startsWith('matmul_')).sort()).toEqual(['matmul_tiled', 'matmul_tiled-128']);
    expect(counts.dispatches).toBe(Object.values(counts.ops).reduce((n, o) => n + o.dispatches, 0));
    model.destroy();
  });

  it("a policy micro-batch's LM head runs on its completion tokens alone: its products shrink by the prompt and padding rows, exactly", async () => {
    const rt = await testRuntime({ serialRows: false });
    const c = PRESETS.tiny;
    const model = Transformer.init(rt, c, 1);
    const counts = policyStepCounts(model, { prompt: 21, samples: 4, completion: 30, tokens: 512, granule: 32 });
    const N = counts.B * counts.T;
    // Two problems' families, each its prompt once and its 4 completions after their prompt's last token.
    expect([counts.B, counts.T]).toEqual([2, 256]);
    expect(counts.lossRows).toBe(2 * 4 * 30);
    // The head's three products (logits, d(norm), the trained head's gradient) over N − lossRows rows fewer.
    const H = c.hidden_size;
    const V = c.vocab_size;
    expect(counts.everyRow.matmulGflop - counts.matmulGflop).toBeCloseTo((3 * 2 * (N - counts.lossRows) * V * H) / 1e9, 9);
    // The rest of the step is the same; gathering and scattering the rows costs one dispatch each.
    expect(counts.ops.embedding_forward?.dispatches).toBe(counts.everyRow.ops.embedding_forward!.dispatches + 1);
    expect(counts.ops.embedding_backward?.dispatches).toBe(counts.everyRow.ops.embedding_backward!.dispatches + 1);
    expect(counts.ops.attention_forward).toEqual(counts.everyRow.ops.attention_forward);
    model.destroy();
  });
});
