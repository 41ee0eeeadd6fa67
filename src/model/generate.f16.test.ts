/**
 * Decoding an f16 base with f16 products (Runtime.halfMath), on a device with shader-f16 (Mesa's
 * lavapipe without a GPU: npm test runs this file there, SAGE_TESTS=f16 in vitest.config.ts).
 */
import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime } from '../gpu/testUtils';
import { matmulTuner } from '../gpu/ops/autotune';
import type { Runtime } from '../gpu/runtime';
import type { LlamaConfig } from './config';
import { Decoder } from './decoder';
import type { Transformer } from './transformer';
import { DECODE_CONFIG, decodeModel } from './testUtils';

const config: LlamaConfig = { ...DECODE_CONFIG, attention_bias: true };

/** Logits of f16 products against f32 ones over the same halves: the worst of 10 seeds × 6 steps was 3.3e-3 of a row's largest. */
const HALF_PRODUCTS_TOL = 1e-2;

async function f16Model(rt: Runtime, seed: number): Promise<Transformer> {
  const m = decodeModel(rt, config, seed);
  await m.setBaseDtype('f16');
  return m;
}

/** The logits of a prefill and `steps` decode steps of random tokens, rows [0, B). */
async function decode(rt: Runtime, m: Transformer, prompts: number[][], steps: number, seed: number): Promise<Float32Array[]> {
  const d = new Decoder(m, prompts.length, Math.max(...prompts.map((p) => p.length)) + steps, true, 'f32');
  const rows = prompts.map((_, b) => b);
  const r = rng(seed);
  const out = [Float32Array.from(await rt.read(d.prefill(prompts)))];
  for (let k = 0; k < steps; k++) out.push(Float32Array.from(await rt.read(d.step(rows, rows.map(() => Math.floor(r() * 256))))));
  d.destroy();
  return out;
}

describe('decoding an f16 base with f16 products', () => {
  it('its logits stay within HALF_PRODUCTS_TOL of f32 products over the same halves, every step, and differ from them', async () => {
    const [half, full] = await Promise.all([testRuntime({ poison: true }), testRuntime({ poison: true, halfMath: false })]);
    expect(half.ctx.features.has('shader-f16'), `adapter ${half.ctx.adapter.architecture} has no shader-f16`).toBe(true);
    expect([half.halfMath, full.halfMath]).toEqual([true, false]);
    const seed = freshSeed();
    const r = rng(seed + 1);
    const prompts = [3, 17, 9, 1].map((n) => Array.from({ length: n }, () => Math.floor(r() * 256)));
    const [got, ref] = (await Promise.all(
      [half, full].map(async (rt) => {
        const m = await f16Model(rt, seed);
        const logits = await decode(rt, m, prompts, 5, seed);
        m.destroy();
        return logits;
      }),
    )) as [Float32Array[], Float32Array[]];
    got.forEach((g, k) => assertClose(`step ${k}, seed ${seed}`, g, ref[k]!, config.vocab_size, HALF_PRODUCTS_TOL));
    expect(got.some((g, k) => g.some((v, i) => v !== ref[k]![i]))).toBe(true);
    // The run's kernel plan names the classes whose products may be in f16.
    const classes = (rt: Runtime) => {
      const plan = matmulTuner(rt).plan();
      return [...Object.keys(plan.matmul), ...plan.untuned];
    };
    expect(classes(half).some((c) => c.endsWith('|h'))).toBe(true);
    expect(classes(full).some((c) => c.endsWith('|h'))).toBe(false);
  });
});
