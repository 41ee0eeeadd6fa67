import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime, uniform } from '../gpu/testUtils';
import { f32ToHalves, halvesToF32 } from '../util/half';
import { ModelSession, type LoadProgress } from '../train/session';
import { importCheckpoint } from './checkpoint';
import { exportCheckpoint } from './checkpointExport';
import { flatParamSize, paramSpecs, PRESETS } from './config';
import { Decoder } from './decoder';
import { initialLora, LORA_TARGETS, type LoraConfig } from './lora';
import { ByteTokenizer } from './tokenizer';
import { readMerged, SMALL_CONFIG } from './testUtils';
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
    const copy = Transformer.fromFlat(rt, loaded.config, loaded.weights.flat());
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

  it('weights beyond one buffer are split a layer at a time: same logits, generation and LoRA gradients; full training refused', async () => {
    const rt = await testRuntime();
    const config = { ...PRESETS.tiny, num_hidden_layers: 3 };
    const flat = initialParams(config, 5);
    const whole = Transformer.fromFlat(rt, config, flat);
    // A buffer that holds about one layer: the embedding, layers and final norm spread over several.
    const split = Transformer.fromFlat(rt, config, flat, { maxBufferBytes: 4 * 300_000 });
    expect(split.base.buffers.length).toBeGreaterThan(2);
    expect(await split.readParams()).toEqual(flat);
    const batch = { B: 2, T: 9, tokens: Array.from({ length: 18 }, (_, i) => (i * 37) % 260), targets: Array.from({ length: 18 }, (_, i) => (i * 11) % 260), weights: new Array<number>(18).fill(1 / 18) };
    expect(await rt.read(split.forward(batch))).toEqual(await rt.read(whole.forward(batch)));
    const lora = { rank: 4, alpha: 8, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const };
    const adapter = initialLora(config, { ...lora, targets: [...lora.targets] }, 2).map((v, i) => v + (i % 7) * 1e-3);
    const grads: Float32Array[] = [];
    for (const m of [whole, split]) {
      m.enableLora({ ...lora, targets: [...lora.targets] }, adapter);
      m.zeroGrad();
      m.forwardLoss(batch);
      m.backward();
      grads.push(await rt.read(m.grads));
    }
    expect(grads[1]).toEqual(grads[0]);
    const decode = async (m: Transformer) => {
      const d = new Decoder(m, 2, 8);
      const out = await rt.read(d.prefill([[1, 2, 3], [4, 5]]));
      d.destroy();
      return out;
    };
    expect(await decode(split)).toEqual(await decode(whole));
    split.disableLora();
    expect(() => split.grads).toThrow(/span \d+ GPU buffers .* not train in full here/);
    expect(() => Transformer.fromFlat(rt, config, flat, { maxBufferBytes: 4 * 100_000 })).toThrow(/layer 0 holds [\d.]+ MiB of weights but the adapter binds at most 0\.4 MiB per buffer/);
    whole.destroy();
    split.destroy();
  });

  it('a checkpoint loads tensor by tensor, reporting each shard as it fills', async () => {
    const rt = await testRuntime();
    const config = { ...PRESETS.tiny, num_hidden_layers: 2 };
    const flat = initialParams(config, 9);
    const files = exportCheckpoint(config, flat, new ByteTokenizer().files(), { maxShardBytes: 1_500_000 });
    const progress: LoadProgress[] = [];
    const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(files), name: 'sharded', onProgress: (p) => progress.push(p) });
    expect(await session.model.readParams()).toEqual(flat);
    const shards = progress[0]!.shards;
    expect(shards).toBeGreaterThan(1);
    for (let k = 1; k <= shards; k++) {
      const mine = progress.filter((p) => p.shard === k);
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.every((p, i) => i === 0 || p.bytes > mine[i - 1]!.bytes)).toBe(true);
      expect(mine[mine.length - 1]!.bytes).toBe(mine[0]!.total);
    }
    expect(progress.reduce((n, p, i) => (i === progress.length - 1 || progress[i + 1]!.file !== p.file ? n + p.total : n), 0)).toBe(4 * flatParamSize(config));
    session.destroy();
  });
});

describe('a base stored in f16', () => {
  // An explicit head_dim with an odd hidden size puts tensors at odd offsets: halves that share a word.
  const config = { ...SMALL_CONFIG, hidden_size: 33, head_dim: 8, attention_bias: true };
  const lora: LoraConfig = { rank: 3, alpha: 6, targets: [...LORA_TARGETS] };
  const batch = (T: number) => ({
    B: 2, T,
    tokens: Array.from({ length: 2 * T }, (_, i) => (i * 7) % config.vocab_size),
    targets: Array.from({ length: 2 * T }, (_, i) => (i * 5 + 1) % config.vocab_size),
    weights: new Array<number>(2 * T).fill(1 / (2 * T)),
  });
  const rounded = (flat: Float32Array) => halvesToF32(f32ToHalves(flat));

  it('holds the weights rounded to halves and computes what f32 does on them: logits, LoRA gradients, decoding', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const flat = uniform(flatParamSize(config), rng(seed), 0.2);
    const ref = Transformer.fromFlat(rt, config, rounded(flat));
    const half = Transformer.fromFlat(rt, config, flat, { dtype: 'f16' });
    // Split across buffers too (the embedding alone, then a layer or so each).
    const split = Transformer.fromFlat(rt, config, flat, { dtype: 'f16', maxBufferBytes: 2 * 9000 });
    expect(split.base.buffers.length).toBeGreaterThan(2);
    expect(half.baseDtype).toBe('f16');
    for (const m of [half, split]) expect(await m.readParams()).toEqual(rounded(flat));
    const b = batch(7);
    const want = Float32Array.from(await rt.read(ref.forward(b)));
    for (const m of [half, split]) assertClose(`f16 logits seed ${seed}`, await rt.read(m.forward(b)), want, config.vocab_size, 1e-5);
    const adapter = initialLora(config, lora, 4).map((v, i) => v + ((i % 5) - 2) * 1e-2);
    const grads: Float32Array[] = [];
    for (const m of [ref, half, split]) {
      m.enableLora(lora, adapter);
      m.zeroGrad();
      m.forwardLoss(b);
      m.backward();
      grads.push(Float32Array.from(await rt.read(m.grads)));
    }
    for (const g of grads.slice(1)) assertClose(`f16 LoRA gradients seed ${seed}`, g, grads[0]!, g.length, 1e-4);
    const decode = async (m: Transformer) => {
      const d = new Decoder(m, 2, 8);
      const out = Float32Array.from(await rt.read(d.prefill([[1, 2, 3], [4, 5]])));
      d.destroy();
      return out;
    };
    const decoded = await decode(ref);
    for (const m of [half, split]) assertClose(`f16 decoder seed ${seed}`, await decode(m), decoded, config.vocab_size, 1e-5);
    half.disableLora();
    expect(() => half.grads).toThrow(/stored in f16, frozen: train a LoRA adapter/);
    for (const m of [ref, half, split]) m.destroy();
  });

  it('converts in place, merges and unmerges an adapter, and refuses weights beyond half range', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const flat = uniform(flatParamSize(config), rng(seed), 0.2);
    const model = Transformer.fromFlat(rt, config, flat);
    await model.setBaseDtype('f16');
    expect(model.baseDtype).toBe('f16');
    // The GPU rounds to a nearest half (WGSL leaves ties to the implementation): within one spacing.
    const got = await model.readParams();
    const spacing = (v: number) => Math.max(2 ** (Math.floor(Math.log2(Math.abs(v))) - 10), 2 ** -24);
    expect(flat.findIndex((v, i) => Math.abs(got[i]! - v) > spacing(v))).toBe(-1);
    // Merged weights reloaded with their adapter: unmerging gives the base back within the halves' rounding.
    const adapter = initialLora(config, lora, 2).map((v, i) => v + ((i % 5) - 2) * 1e-2);
    model.enableLora(lora, adapter);
    const merged = await readMerged(model);
    const resumed = Transformer.fromFlat(rt, config, merged, { dtype: 'f16' });
    resumed.enableLora(lora, adapter, { merged: true });
    const base = await resumed.readParams();
    expect(got.findIndex((v, i) => Math.abs(base[i]! - v) > 2 * spacing(merged[i]!))).toBe(-1);
    await model.setBaseDtype('f32');
    expect(await model.readParams()).toEqual(got);
    model.destroy();
    resumed.destroy();
    const big = Float32Array.from(flat);
    const up = paramSpecs(config).find((s) => s.name === 'model.layers.1.mlp.up_proj.weight')!;
    big[up.offset + 3] = 1e5;
    const f32 = Transformer.fromFlat(rt, config, big);
    await expect(f32.setBaseDtype('f16')).rejects.toThrow(/model\.layers\.1\.mlp\.up_proj\.weight holds 100000, beyond f16's largest value 65504/);
    expect(f32.baseDtype).toBe('f32');
    f32.destroy();
    expect(() => Transformer.fromFlat(rt, config, big, { dtype: 'f16' })).toThrow(/up_proj\.weight holds 100000/);
    // A checkpoint is refused from what its import recorded, before the held model is released.
    const tiny = { ...PRESETS.tiny, num_hidden_layers: 1 };
    const weights = initialParams(tiny, 1);
    const down = paramSpecs(tiny).find((s) => s.name === 'model.layers.0.mlp.down_proj.weight')!;
    weights[down.offset + 5] = -2e5;
    let released = false;
    const checkpoint = importCheckpoint(exportCheckpoint(tiny, weights, new ByteTokenizer().files()));
    expect(() => ModelSession.create(rt, { kind: 'checkpoint', checkpoint, name: 'big', baseDtype: 'f16' }, () => (released = true))).toThrow(
      /model\.layers\.0\.mlp\.down_proj\.weight holds -200000, beyond f16's largest value 65504/,
    );
    expect(released).toBe(false);
  });
});
