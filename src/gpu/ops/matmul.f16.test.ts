/**
 * The matmuls that compute in f16, against float64. They need a device with shader-f16: without
 * a GPU, Mesa's lavapipe (npm test runs this file there, SAGE_TESTS=f16 in vitest.config.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { matmulRef } from '../reference';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform, uploadHalf } from '../testUtils';
import { f32ToHalves, halvesToF32 } from '../../util/half';
import { matmul } from './matmul';

describe('matmul in f16', () => {
  beforeAll(async () => {
    const rt = await testRuntime();
    expect(rt.ctx.features.has('shader-f16'), `adapter ${rt.ctx.adapter.architecture} has no shader-f16`).toBe(true);
  });

  it('halfMath: f16 products summed in f32 (tiled-128)', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const r = rng(seed);
    const round = (v: Float32Array) => halvesToF32(f32ToHalves(v));
    for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
      for (const [M, N, K, bHalf] of [[131, 259, 45, false], [260, 136, 44, true]] as const) {
        const a = round(uniform(M * K, r));
        const b = uniform(N * K, r);
        const aT = rt.upload(a, transA ? [K, M] : [M, K]);
        const bDims = transB ? [N, K] : [K, N];
        const half = bHalf ? uploadHalf(rt, b, bDims, 4) : { tensor: rt.upload(round(b), bDims), values: round(b) };
        const out = poisoned(rt, [M, N]);
        matmul(rt, { a: aT, b: half.tensor, out, transA, transB, halfMath: true });
        const shape = { batch: 1, M, N, K, transA, transB };
        const ref = matmulRef({ a, b: half.values, ...shape });
        const scale = matmulRef({ a: a.map(Math.abs), b: half.values.map(Math.abs), ...shape });
        // Each product rounded to half: 2^-11 of the sum of magnitudes at most, and the f32 sums' rounding.
        assertClose(`halfMath ${JSON.stringify(shape)} f16 B ${bHalf} seed ${seed}`, await rt.read(out), ref, N, 2 ** -11 + 1e-5, scale);
        rt.release(aT, half.tensor, out);
      }
    }
  });
});
