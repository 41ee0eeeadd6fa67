/**
 * The matmuls that compute in f16, against float64. They need a device with shader-f16: without
 * a GPU, Mesa's lavapipe (npm test runs this file there, SAGE_TESTS=f16 in vitest.config.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { matmulRef } from '../reference';
import { Runtime } from '../runtime';
import { assertClose, freshSeed, poisoned, rng, testPlatform, testRuntime, uniform, uploadHalf } from '../testUtils';
import { f32ToHalves, halvesToF32 } from '../../util/half';
import { matmul } from './matmul';
import { checkMatmul, MMA_CASES } from './matmulCheck';
import { check } from './matmulTestUtils';
import { MatmulTuner } from './autotune';
import { splitkSlices, type MatmulArgs, type MatmulVariant } from './matmulVariants';

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

  // The decode projections: x·Wᵀ over an f16 base, a few rows, each prologue, K whole and sliced.
  const decode = [
    { batch: 1, M: 1, N: 37, K: 64 },
    { batch: 1, M: 3, N: 36, K: 132, bias: true },
    { batch: 1, M: 8, N: 20, K: 96, norm: true },
    { batch: 1, M: 5, N: 36, K: 64, swiglu: true, beta: 1 },
    { batch: 1, M: 19, N: 24, K: 128, alpha: 0.5 },
    { batch: 2, M: 2, N: 12, K: 48 },
  ];
  for (const variant of ['splitk', 'splitk-sg'] as const satisfies readonly MatmulVariant[]) {
    it(`${variant}: B's halves multiplied as stored by A rounded to half, four products summed in f16, then f32`, async ({ skip }) => {
      const rt = await testRuntime();
      if (variant === 'splitk-sg' && !rt.ctx.features.has('subgroups')) return skip('this adapter has no subgroups');
      for (const c of decode) await check(variant, { transA: false, transB: true, half: true, halfMath: true, ...c });
      // A long K at one row is cut into slices, each summed as above, then reduced in f32.
      const sliced = { batch: 1, M: 1, N: 40, K: 2048 };
      expect(splitkSlices(sliced, {}, 1)).toBe(2);
      await check(variant, { ...sliced, transA: false, transB: true, half: true, halfMath: true });
    });
  }

  it('the f16 products run where allowed: split-K differs from its f32 sums, an f32 B, a K not read as vec4s, gemv or rows does not', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    // The same inputs for both calls of a pair: drawn from the seed and K.
    const run = async (variant: MatmulVariant, K: number, bHalf: boolean, halfMath: boolean) => {
      const x = rt.upload(uniform(4 * K, rng(seed + K)), [4, K]);
      const values = uniform(24 * K, rng(seed + K + 1));
      const w = bHalf ? uploadHalf(rt, values, [24, K], 4).tensor : rt.upload(values, [24, K]);
      const out = poisoned(rt, [4, 24]);
      matmul(rt, { a: x, b: w, out, transB: true, variant, halfMath });
      const got = await rt.readF32(out);
      rt.release(x, w, out);
      return got;
    };
    const same = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.prototype.every.call(a, (v: number, i: number) => v === b[i]);
    expect(same(await run('splitk', 64, true, true), await run('splitk', 64, true, false))).toBe(false);
    // What cannot compute in f16 computes in f32, bit for bit as without halfMath.
    expect(same(await run('splitk', 64, false, true), await run('splitk', 64, false, false))).toBe(true);
    expect(same(await run('splitk', 63, true, true), await run('splitk', 63, true, false))).toBe(true);
    expect(same(await run('gemv', 64, true, true), await run('gemv', 64, true, false))).toBe(true);
    expect(same(await run('rows', 64, true, true), await run('rows', 64, true, false))).toBe(true);
  });

  it('scaled rows: the variants that cannot scale compute in f32, and the tuner refuses one that rounds them unscaled', async () => {
    const rt = await testRuntime();
    // tiled-128 rounding the rows to half as they come: the rows past f16's range flush or overflow.
    class Unscaled extends MatmulTuner {
      protected override run(variant: MatmulVariant, args: MatmulArgs): void {
        super.run(variant, variant === 'tiled-128' ? { ...args, scaleRows: false } : args);
      }
    }
    const tuner = new Unscaled(rt);
    const shape = { batch: 1, M: 64, N: 96, K: 256, transA: false, transB: false, bDtype: 'f16' as const, half: true, scaled: true };
    const times = await tuner.tune(shape, 1);
    // Every other variant passes the check: f32 where it cannot scale.
    expect(tuner.refused).toEqual(['tiled-128']);
    expect(Object.keys(times).length).toBeGreaterThan(2);
  });

  // matmul_mma with its four subgroup matrix builtins emulated as the proposal defines them
  // (MMA_EMULATED): everything else in the kernel, on the configurations GPUs offer, in
  // subgroups of 8 to 32. The builtins themselves run only on a card (the GPU report's mmaCheck).
  for (const shape of [
    { M: 16, N: 16, K: 16, subgroupMaxSize: 32 },
    { M: 16, N: 8, K: 16, subgroupMaxSize: 8 },
    { M: 8, N: 8, K: 8, subgroupMaxSize: 32 },
    { M: 8, N: 16, K: 16, subgroupMaxSize: 16 },
  ]) {
    it(`mma, its builtins emulated on ${shape.M}×${shape.N}×${shape.K} blocks in subgroups of ${shape.subgroupMaxSize}: every case against float64`, async () => {
      const rt = await testRuntime({ subgroupMatrix: { ...shape, emulated: true } });
      const seed = freshSeed();
      for (const [i, c] of MMA_CASES.entries()) await checkMatmul(rt, 'mma', c, seed + i);
    });
  }

  it('mma emulated only on matrices that tile its workgroup', async () => {
    // Four subgroups of 4 are fewer invocations than the 32 rows a workgroup stages; 16×16 results pass the 8 KiB staged.
    await expect(Runtime.create(testPlatform('own'), { subgroupMatrix: { M: 16, N: 16, K: 16, subgroupMaxSize: 4, emulated: true }, tuning: false })).rejects.toThrow(/matmul_mma cannot tile its workgroup/);
    await expect(Runtime.create(testPlatform('own'), { subgroupMatrix: { M: 16, N: 32, K: 16, subgroupMaxSize: 32, emulated: true }, tuning: false })).rejects.toThrow(/matmul_mma cannot tile its workgroup/);
  });
});
