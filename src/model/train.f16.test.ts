/**
 * Training LoRA over an f16 base with f16 products (Runtime.halfMath), against the float64
 * reference: on the matrix units' kernel (mma; its builtins emulated, as in matmul.f16.test.ts),
 * forward and backward, each row of A scaled to half's range; elsewhere in f32 as without
 * halfMath. Needs a device with shader-f16 (Mesa's lavapipe without a GPU: npm test runs this
 * file there, SAGE_TESTS=f16 in vitest.config.ts).
 */
import { describe, expect, it, vi } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime } from '../gpu/testUtils';
import { matmulTuner } from '../gpu/ops/autotune';
import type { Runtime } from '../gpu/runtime';
import { f32ToHalves, halvesToF32 } from '../util/half';
import type { LlamaConfig } from './config';
import { loraSpecs, type LoraConfig } from './lora';
import { adapterGrads, merged, randomAdapter } from './loraTestUtils';
import { randomParams, refBackward } from './reference';
import { fromFlat, gpuBatch, makeBatch, roundToF32, SMALL_CONFIG, toFlat } from './testUtils';
import { Transformer } from './transformer';

/** Every dimension a whole number of 16×16 blocks: each projection, the LM head and their backward fit mma. */
const config: LlamaConfig = { ...SMALL_CONFIG, vocab_size: 48, attention_bias: true };
const lora: LoraConfig = { rank: 4, alpha: 8, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] };

/**
 * f16 products against float64, each gradient measured against its largest entry (a row of
 * lora_B is r = 4 entries, whose sums cancel): the worst of 10 seeds was 7.1e-3 (f32 products:
 * 2.9e-6). Each product rounds its operands to half (2^-11), through two layers and back.
 */
const HALF_TOL = 2e-2;

interface Step {
  logits: Float32Array;
  grads: Map<string, Float32Array>;
  /** The matmuls that ran on mma, of all the step recorded. */
  mma: number;
  matmuls: number;
}

/** A forward and a backward pass of LoRA over the f16 base `flatBase`, every matmul that fits it on mma. */
async function step(rt: Runtime, flatBase: Float32Array, adapter: Float32Array, batch: ReturnType<typeof makeBatch>): Promise<Step> {
  const model = Transformer.fromFlat(rt, config, flatBase);
  await model.setBaseDtype('f16');
  model.enableLora(lora, adapter);
  const tuner = matmulTuner(rt);
  tuner.forced = 'mma';
  const labels: string[] = [];
  const dispatch = rt.dispatch.bind(rt);
  const spy = vi.spyOn(rt, 'dispatch').mockImplementation((d) => {
    labels.push(d.label ?? '');
    return dispatch(d);
  });
  try {
    const logits = Float32Array.from(await rt.read(model.forward(gpuBatch(batch))));
    model.zeroGrad();
    model.forwardLoss(gpuBatch(batch));
    model.backward();
    const grads = new Map<string, Float32Array>();
    for (const s of loraSpecs(config, lora)) grads.set(s.name, Float32Array.from(await rt.read(model.grad(s.name))));
    const matmuls = labels.filter((l) => l.startsWith('matmul_') && l !== 'matmul_splitk_reduce');
    return { logits, grads, mma: matmuls.filter((l) => l === 'matmul_mma').length, matmuls: matmuls.length };
  } finally {
    spy.mockRestore();
    tuner.forced = null;
    model.destroy();
  }
}

describe('training LoRA over an f16 base with f16 products', () => {
  it('on mma, forward and backward, its logits and adapter gradients stay within HALF_TOL of float64; without halfMath within 1e-3', async () => {
    const emulated = { M: 16, N: 16, K: 16, subgroupMaxSize: 32, emulated: true as const };
    const [half, full] = await Promise.all([
      testRuntime({ poison: true, subgroupMatrix: emulated }),
      testRuntime({ poison: true, subgroupMatrix: emulated, halfMath: false }),
    ]);
    const seed = freshSeed();
    const r = rng(seed);
    const flatBase = toFlat(config, roundToF32(randomParams(config, r, 0.3)));
    const adapter = randomAdapter(config, lora, r);
    // Token weights of 2^-24 and less: every gradient below f16's smallest normal (2^-14), as a
    // deep model's early layers get; half would flush them to zero unscaled.
    const plain = makeBatch(config, 2, 16, 'right', r);
    const batch = { ...plain, weights: plain.weights.map((w) => w * 2 ** -24) };
    // The weights the GPU holds: the f16 base is the f32 one rounded to half.
    const ref = refBackward(config, merged(config, fromFlat(config, halvesToF32(f32ToHalves(flatBase))), lora, adapter), batch);
    const expected = adapterGrads(config, lora, adapter, ref.grads);
    const [got, exact] = [await step(half, flatBase, adapter, batch), await step(full, flatBase, adapter, batch)];
    const what = `seed ${seed}`;
    // Per layer q|k|v, o, gate|up and down, and the LM head: in two forward passes and their dX in the backward.
    expect(got.mma, what).toBe(3 * (4 * config.num_hidden_layers + 1));
    expect(exact.mma, what).toBe(0);
    expect(got.matmuls).toBe(exact.matmuls);
    for (const [name, s, tol] of [['f16 products', got, HALF_TOL], ['f32 products', exact, 1e-3]] as const) {
      assertClose(`${name}, ${what}: logits`, s.logits, ref.logits, config.vocab_size, tol);
      for (const spec of loraSpecs(config, lora)) assertClose(`${name}, ${what}: grad ${spec.name}`, s.grads.get(spec.name)!, expected.get(spec.name)!, spec.size, tol);
    }
    // f16 products: not the f32 ones.
    expect([...got.grads].some(([n, g]) => g.some((v, i) => v !== exact.grads.get(n)![i]))).toBe(true);
  });
});
