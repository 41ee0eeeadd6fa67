import { describe, expect, it } from 'vitest';
import { testRuntime } from '../gpu/testing';
import { exportCheckpoint, importCheckpoint } from './checkpoint';
import { PRESETS } from './config';
import { ByteTokenizer } from './tokenizer';
import { initialParams, Transformer } from './transformer';

describe('transformer checkpoints', () => {
  it('save, load: the logits are bit-identical, and resuming restores the optimizer', async () => {
    const rt = await testRuntime();
    const config = { ...PRESETS.tiny, num_hidden_layers: 2 };
    const model = Transformer.init(rt, config, 42);
    const batch = { B: 2, T: 9, tokens: Array.from({ length: 18 }, (_, i) => (i * 37) % 260) };
    const before = Float32Array.from(await rt.read(model.forward(batch)));
    const flat = await model.readParams();
    const m = Float32Array.from({ length: flat.length }, (_, i) => i * 1e-6);
    const files = exportCheckpoint(config, flat, new ByteTokenizer().files(), {
      optimizer: { m, v: m, step: 17 },
      runState: { step: 17 },
    });
    const loaded = importCheckpoint(files);
    expect(loaded.config).toEqual(config);
    const copy = Transformer.fromFlat(rt, loaded.config, loaded.flatParams);
    const after = await rt.read(copy.forward(batch));
    expect(Buffer.from(after.buffer).equals(Buffer.from(before.buffer))).toBe(true);
    expect(loaded.optimizer?.step).toBe(17);
    expect(Array.from(loaded.optimizer!.m.subarray(0, 100))).toEqual(Array.from(m.subarray(0, 100)));
    model.destroy();
    copy.destroy();
  });

  it('refuses flat parameters that do not match the config', async () => {
    const rt = await testRuntime();
    const config = { ...PRESETS.tiny, num_hidden_layers: 1 };
    const flat = initialParams(config, 1);
    expect(() => Transformer.fromFlat(rt, config, flat.subarray(1))).toThrow(/the config needs/);
    expect(() => Transformer.fromFlat(rt, { ...config, num_key_value_heads: 3 }, flat)).toThrow(/multiple of num_key_value_heads/);
  });

  it('rejects tokens outside the vocabulary and positions beyond the context', async () => {
    const rt = await testRuntime();
    const model = Transformer.init(rt, { ...PRESETS.tiny, num_hidden_layers: 1 }, 3);
    expect(() => model.forward({ B: 1, T: 2, tokens: [1, 264] })).toThrow(/outside the vocabulary/);
    expect(() => model.forward({ B: 1, T: 2, tokens: [1, 2], positions: [0, 256] })).toThrow(/max_position_embeddings/);
    expect(() => model.forward({ B: 1, T: 3, tokens: [1, 2] })).toThrow(/expected B·T = 3/);
    model.destroy();
  });
});
