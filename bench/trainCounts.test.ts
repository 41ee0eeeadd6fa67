import { describe, expect, it } from 'vitest';
import { testRuntime } from '../src/gpu/testUtils';
import { headDim, PRESETS } from '../src/model/config';
import { Transformer } from '../src/model/transformer';
import { trainStepCounts } from './trainCounts';

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
});
