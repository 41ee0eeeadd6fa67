import { describe, expect, it } from 'vitest';
import { matmulRef } from '../reference';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform, uploadHalf } from '../testUtils';
import { view } from '../tensor';
import { f32ToHalves, halvesToF32 } from '../../util/half';
import type { OptionalFeature } from '../device';
import { matmulTuner, shapeClass } from './autotune';
import { matmul } from './matmul';
import type { Case } from './matmulCheck';
import { check } from './matmulTestUtils';
import { BIG_SLICE_MIN_K, bigSlices, MATMUL_VARIANTS, splitkSlices, SPLITK_SLICE_MIN_K, untunedVariant, type MatmulShape, type MatmulVariant } from './matmulVariants';

const sizes = [1, 3, 17, 65, 127, 300];

/** Register-tiled variants also run with rows shared across a subgroup, where the adapter allows it. */
const SUBGROUP_PATHS: Record<MatmulVariant, boolean[]> = {
  reg: [true, false],
  'reg-wide': [true, false],
  'reg-vec4': [true, false],
  tiled: [true],
  'tiled-128': [true],
  'tiled-128-splitk': [true],
  gemv: [true],
  splitk: [true],
  'splitk-sg': [true],
  rows: [true],
  // Only where the device has subgroup matrices: matmul.mma.test.ts.
  mma: [],
};

/** Cases of the variants that cut a long K into slices, which add a LoRA term in their reduction: a down projection at one row (split-K) and at 32. */
const LORA_ONE_ROW: Case = { batch: 1, M: 1, N: 64, K: 4864, transA: false, transB: true, lora: 16, beta: 1, half: true };
const LORA_ROLLOUT: Case = { batch: 1, M: 32, N: 64, K: 2048, transA: false, transB: true, lora: 16, beta: 1 };
const LORA_SLICED_CASE: Partial<Record<MatmulVariant, Case>> = { splitk: LORA_ONE_ROW, 'splitk-sg': LORA_ONE_ROW, rows: LORA_ROLLOUT, 'tiled-128-splitk': LORA_ROLLOUT };

describe('matmul', () => {
  for (const variant of MATMUL_VARIANTS) {
    for (const sg of SUBGROUP_PATHS[variant]) {
      describe(`${variant}${sg ? '' : ' without subgroups'}`, () => {
        for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
          it(`${transA ? 'T' : 'N'}${transB ? 'T' : 'N'} over odd sizes`, async () => {
            const r = Math.random;
            for (const M of sizes) {
              const N = sizes[Math.floor(r() * sizes.length)]!;
              const K = sizes[Math.floor(r() * sizes.length)]!;
              await check(variant, { batch: 1, M, N, K, transA, transB }, sg);
            }
          });
          it(`${transA ? 'T' : 'N'}${transB ? 'T' : 'N'} batched, tile-aligned`, async () => {
            await check(variant, { batch: 3, M: 64, N: 68, K: 40, transA, transB }, sg);
            await check(variant, { batch: 2, M: 17, N: 65, K: 33, transA, transB }, sg);
          });
        }
        it('broadcast B, bias, alpha and accumulate (beta)', async () => {
          await check(variant, { batch: 3, M: 20, N: 36, K: 24, transA: false, transB: true, broadcastB: true, bias: true }, sg);
          await check(variant, { batch: 2, M: 65, N: 17, K: 127, transA: true, transB: false, beta: 1, alpha: 0.5 }, sg);
          await check(variant, { batch: 1, M: 64, N: 64, K: 64, transA: false, transB: false, beta: -0.25, bias: true }, sg);
          // A decode step's x·Wᵀ: rows and columns that are multiples of nothing, K of 4 (gemv reads vec4s).
          await check(variant, { batch: 2, M: 5, N: 67, K: 36, transA: false, transB: true, beta: 1, bias: true }, sg);
        });
        // Without subgroups only op(A)'s row loads change (a lane loads all eight rows itself):
        // B's loads and the store are the same lines, so their own cases run on the subgroup path.
        if (sg) it('reads B and the bias as f16', async () => {
          for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
            await check(variant, { batch: 1, M: 17, N: 65, K: 33, transA, transB, bias: true, half: true }, sg);
          }
          await check(variant, { batch: 2, M: 5, N: 67, K: 36, transA: false, transB: true, broadcastB: true, beta: 1, half: true }, sg);
        });
        it('computes SwiGLU from fused gate|up rows as it reads A', async () => {
          for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
            await check(variant, { batch: 2, M: 17, N: 65, K: 33, transA, transB, swiglu: true }, sg);
          }
          // The down projection of a decode step (gemv's vec4 path) and of a prefill, accumulating into the residual.
          await check(variant, { batch: 1, M: 5, N: 36, K: 64, transA: false, transB: true, beta: 1, swiglu: true }, sg);
          await check(variant, { batch: 1, M: 70, N: 36, K: 128, transA: false, transB: true, beta: 1, half: true, swiglu: true }, sg);
        });
        it('normalises rows of A (RMSNorm) as it reads them', async () => {
          for (const transB of [false, true]) {
            await check(variant, { batch: 2, M: 17, N: 65, K: 33, transA: false, transB, norm: true }, sg);
            await check(variant, { batch: 1, M: 3, N: 20, K: 127, transA: false, transB, norm: true, bias: true }, sg);
          }
          // A decode step's q|k|v (gemv's vec4 path) and a prefill's, with an f16 base.
          await check(variant, { batch: 1, M: 5, N: 68, K: 64, transA: false, transB: true, norm: true }, sg);
          await check(variant, { batch: 1, M: 70, N: 36, K: 128, transA: false, transB: true, half: true, norm: true }, sg);
        });
        if (sg) it('adds a LoRA term u·bᵀ as it stores (an adapter kept apart, at inference)', async () => {
          // Every variant stores through one function (storeOne): each is checked where it binds
          // the term, vec4 loads with the norm prologue over an f16 B; scalar loads (R odd, at odd
          // offsets) on two; a long K on those that cut it into slices (LORA_SLICED_CASE).
          await check(variant, { batch: 1, M: 5, N: 68, K: 64, transA: false, transB: true, lora: 16, norm: true, half: true }, sg);
          if (variant === 'reg' || variant === 'splitk') await check(variant, { batch: 1, M: 17, N: 65, K: 33, transA: false, transB: true, lora: 5, bias: true }, sg);
          const sliced = LORA_SLICED_CASE[variant];
          if (sliced) await check(variant, sliced, sg);
        });
      });
    }
  }

  it('shares row loads across subgroups on SwiftShader', async () => {
    const rt = await testRuntime();
    if (rt.ctx.adapter.architecture !== 'swiftshader') return;
    expect(rt.ctx.subgroupSize).toBe(4);
    expect(rt.subgroupMatmul).toBe(true);
    expect((await testRuntime({ subgroupMatmul: false })).subgroupMatmul).toBe(false);
  });

  it('runs decode rows split over K on GPUs: N = 896 at one row launches ≥ 100 workgroups (gemv: 4)', async () => {
    const rt = await testRuntime();
    const gpu = { adapter: { ...rt.ctx.adapter, architecture: 'ampere' }, features: new Set<OptionalFeature>(['subgroups']) };
    const swiftshader = { ...gpu, adapter: { ...gpu.adapter, architecture: 'swiftshader' } };
    const shape = { batch: 1, M: 1, N: 896, K: 896, transA: false, transB: true };
    expect(untunedVariant(shape, gpu)).toBe('splitk-sg');
    expect(untunedVariant({ ...shape, M: 8 }, { ...gpu, features: new Set() })).toBe('splitk');
    expect(untunedVariant({ ...shape, M: 9 }, gpu)).toBe('tiled');
    expect(untunedVariant(shape, swiftshader)).toBe('gemv');
    const seed = freshSeed();
    const r = rng(seed);
    const x = uniform(shape.K, r);
    const w = uploadHalf(rt, uniform(shape.N * shape.K, r), [shape.N, shape.K]);
    const xT = rt.upload(x, [1, shape.K]);
    const ref = matmulRef({ a: x, b: w.values, ...shape });
    const launched: Partial<Record<MatmulVariant, number>> = {};
    for (const variant of ['splitk', 'splitk-sg', 'gemv'] as const) {
      const out = poisoned(rt, [1, shape.N]);
      const before = rt.counters.workgroups;
      matmul(rt, { a: xT, b: w.tensor, out, transB: true, variant });
      launched[variant] = rt.counters.workgroups - before;
      assertClose(`${variant} 1×896×896, f16 weights, seed ${seed}`, await rt.read(out), ref, shape.N);
      rt.release(out);
    }
    expect(launched).toEqual({ splitk: 224, 'splitk-sg': 224, gemv: 4 });
    rt.release(xT, w.tensor);
  });

  it('split-K cuts a long K into slices at few rows: float64 results, and 4 slices of the Qwen down projection at one row', async () => {
    for (const variant of ['splitk', 'splitk-sg'] as const) {
      // A decode step's down projection (SwiGLU read from gate|up, f16 weights, into the residual).
      await check(variant, { batch: 1, M: 1, N: 37, K: 4864, transA: false, transB: true, beta: 1, swiglu: true, half: true });
      // K not a multiple of 4 (scalar loads, a short last slice), bias and alpha; transposes.
      await check(variant, { batch: 1, M: 3, N: 65, K: 4099, transA: false, transB: true, bias: true, alpha: 0.5 });
      await check(variant, { batch: 1, M: 8, N: 20, K: 2048, transA: true, transB: false, beta: -0.25 });
      await check(variant, { batch: 1, M: 5, N: 36, K: 3001, transA: true, transB: true, bias: true, half: true });
    }
    const qwenDown = { batch: 1, M: 1, N: 896, K: 4864 };
    expect(splitkSlices(qwenDown, {}, 1)).toBe(4);
    expect(splitkSlices({ ...qwenDown, K: 896 }, {}, 1)).toBe(1);
    expect(splitkSlices({ ...qwenDown, K: SPLITK_SLICE_MIN_K * 2 - 1 }, {}, 1)).toBe(1);
    expect(splitkSlices({ ...qwenDown, N: 151_936 }, {}, 1)).toBe(1);
    expect(splitkSlices({ ...qwenDown, batch: 2 }, {}, 1)).toBe(1);
    const rt = await testRuntime();
    expect(splitkSlices(qwenDown, { norm: { weight: rt.placeholder as never, eps: 1e-6 } }, 1)).toBe(1);
    // Launched: 4 slices × 224 column groups, then a reduction of 896 outputs.
    const seed = freshSeed();
    const r = rng(seed);
    const x = rt.upload(uniform(qwenDown.K, r), [1, qwenDown.K]);
    const w = uploadHalf(rt, uniform(qwenDown.N * qwenDown.K, r), [qwenDown.N, qwenDown.K]);
    const out = poisoned(rt, [1, qwenDown.N]);
    const before = { ...rt.counters };
    matmul(rt, { a: x, b: w.tensor, out, transB: true, variant: 'splitk' });
    expect([rt.counters.dispatches - before.dispatches, rt.counters.workgroups - before.workgroups]).toEqual([2, 896 + 14]);
    assertClose(`splitk 1×896×4864 sliced, seed ${seed}`, await rt.read(out), matmulRef({ a: await rt.read(x), b: w.values, ...qwenDown, transA: false, transB: true }), qwenDown.N);
    rt.release(x, w.tensor, out);
  });

  it('rows: rollout batches of 9-64 rows, the weights staged once a step for all of them, a long K cut into slices', async () => {
    // One tile of rows (32, 64 and 9 rows: f16 weights, each prologue), two tiles (100), and
    // slices of a long K over few column tiles, in each transpose.
    await check('rows', { batch: 1, M: 32, N: 70, K: 300, transA: false, transB: true, half: true, bias: true, beta: 1 });
    await check('rows', { batch: 1, M: 64, N: 36, K: 96, transA: false, transB: true, swiglu: true, half: true });
    await check('rows', { batch: 1, M: 9, N: 33, K: 65, transA: false, transB: true, norm: true, half: true });
    await check('rows', { batch: 1, M: 100, N: 40, K: 64, transA: false, transB: true, alpha: 0.5 });
    for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
      await check('rows', { batch: 1, M: 24, N: 40, K: 2050, transA, transB, bias: true });
    }
    // Qwen2.5-0.5B's o_proj at 32 rows: 28 column tiles, K 896 in 3 slices, then a reduction of
    // 32 × 896 outputs; its f16 weights counted once, where split-K reads them for every 8 rows.
    const rt = await testRuntime();
    const [M, N, K] = [32, 896, 896];
    const seed = freshSeed();
    const r = rng(seed);
    const x = rt.upload(uniform(M * K, r), [M, K]);
    const w = uploadHalf(rt, uniform(N * K, r), [N, K]);
    const out = poisoned(rt, [M, N]);
    for (const [variant, reads] of [['rows', 1], ['splitk', 4]] as const) {
      const before = { ...rt.counters };
      matmul(rt, { a: x, b: w.tensor, out, transB: true, variant });
      expect(rt.counters.matmulWeightBytes - before.matmulWeightBytes, variant).toBe(reads * N * K * 2);
      if (variant === 'rows') expect([rt.counters.dispatches - before.dispatches, rt.counters.workgroups - before.workgroups]).toEqual([2, 28 * 3 + (M * N) / 64]);
      assertClose(`${variant} ${M}×${K}×${N}, seed ${seed}`, await rt.read(out), matmulRef({ a: await rt.read(x), b: w.values, batch: 1, M, N, K, transA: false, transB: true }), N);
    }
    rt.release(x, w.tensor, out);
  });

  it('tiled-128: the untuned plan of training shapes on GPUs, exact across several tiles and K steps', async () => {
    const rt = await testRuntime();
    const gpu = { adapter: { ...rt.ctx.adapter, architecture: 'ampere' }, features: new Set<OptionalFeature>(['subgroups']) };
    const swiftshader = { ...gpu, adapter: { ...gpu.adapter, architecture: 'swiftshader' } };
    // A tiny-preset step (256 tokens × 256) makes 4 large tiles: too few to fill a GPU.
    expect(untunedVariant({ batch: 1, M: 256, N: 256, K: 256, transA: false, transB: true }, gpu)).toBe('tiled');
    // SmolLM2-135M's fused gate|up at 2,048 tokens: 16 × 24 tiles; its weight gradient (xᵀ·dy) 5 × 24.
    expect(untunedVariant({ batch: 1, M: 2048, N: 3072, K: 576, transA: false, transB: true }, gpu)).toBe('tiled-128');
    expect(untunedVariant({ batch: 1, M: 576, N: 3072, K: 2048, transA: true, transB: false }, gpu)).toBe('tiled-128');
    expect(untunedVariant({ batch: 1, M: 2048, N: 1536, K: 576, transA: false, transB: true }, swiftshader)).toBe('reg');
    // Edges of several tiles and K steps in every dimension, read as vec4s in each transpose
    // (the cases every variant runs cover the scalar quads), and as scalars with bias and beta.
    for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
      await check('tiled-128', { batch: 1, M: 260, N: 136, K: 44, transA, transB });
    }
    await check('tiled-128', { batch: 1, M: 131, N: 259, K: 45, transA: false, transB: true, beta: 1, bias: true });
  });

  it('tiled-128-splitk: a long K over few 128×128 tiles cut into slices, exact at every edge', async () => {
    // Qwen2.5-0.5B's LoRA step at 1,024 tokens: the LM head's backward (K 151,936) and the down
    // projection (K 4,864) on 8×7 tiles take 5 slices; a K under two slices, a batch or the
    // norm prologue keep K whole, and enough tiles need no slices.
    const lmHead = { batch: 1, M: 1024, N: 896, K: 151_936 };
    expect(bigSlices(lmHead, false)).toBe(5);
    expect(bigSlices({ ...lmHead, K: 4864 }, false)).toBe(5);
    expect(bigSlices({ ...lmHead, K: 2 * BIG_SLICE_MIN_K - 1 }, false)).toBe(1);
    expect(bigSlices({ ...lmHead, batch: 2 }, false)).toBe(1);
    expect(bigSlices(lmHead, true)).toBe(1);
    expect(bigSlices({ ...lmHead, N: 9728 }, false)).toBe(1);
    const rt = await testRuntime();
    // Two tiles a side, 2 slices: the last one shorter (K = 1,100 → 552 + 548, and 1,101 with
    // scalar loads), in every transpose, then alpha, bias and beta applied by the reduction.
    for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]] as const) {
      await check('tiled-128-splitk', { batch: 1, M: 130, N: 136, K: 1100, transA, transB });
    }
    await check('tiled-128-splitk', { batch: 1, M: 131, N: 129, K: 1101, transA: false, transB: true, alpha: 0.5, beta: 1, bias: true });
    await check('tiled-128-splitk', { batch: 1, M: 130, N: 136, K: 1100, transA: false, transB: true, half: true, swiglu: true });
    // Launched: 2 × 2 tiles × 2 slices, then a reduction of 130 × 136 outputs.
    const [M, N, K] = [130, 136, 1100];
    const a = rt.upload(uniform(M * K, rng(freshSeed())), [M, K]);
    const b = rt.upload(uniform(N * K, rng(freshSeed())), [N, K]);
    const before = { ...rt.counters };
    rt.release(matmul(rt, { a, b, transB: true, variant: 'tiled-128-splitk' }), a, b);
    expect([rt.counters.dispatches - before.dispatches, rt.counters.workgroups - before.workgroups]).toEqual([2, 8 + Math.ceil((M * N) / 64)]);
  });

  it('halfMath is refused by a device without shader-f16 (its products are checked in matmul.f16.test.ts)', async ({ skip }) => {
    const rt = await testRuntime();
    if (rt.ctx.features.has('shader-f16')) return skip('this adapter has shader-f16');
    const x = rt.upload(uniform(9 * 7, rng(freshSeed())), [9, 7]);
    const w = rt.upload(uniform(5 * 7, rng(freshSeed())), [5, 7]);
    expect(() => matmul(rt, { a: x, b: w, transB: true, halfMath: true })).toThrow(/needs a device with shader-f16/);
    rt.release(x, w);
  });

  it('respects tensor offsets (views into one buffer)', async () => {
    const rt = await testRuntime();
    const r = rng(freshSeed());
    // mma only where the device has subgroup matrices (matmul.mma.test.ts: W at an offset in every case).
    for (const variant of MATMUL_VARIANTS.filter((v) => v !== 'mma')) {
      const [off, M, K, N] = variant === 'reg-vec4' ? [4, 8, 12, 20] : [3, 5, 7, 9];
      const whole = uniform(off + M * K + K * N, r);
      const buf = rt.upload(whole, [whole.length]);
      const a = view(buf, [M, K], off);
      const b = view(buf, [K, N], off + M * K);
      const out = poisoned(rt, [M, N]);
      matmul(rt, { a, b, out, variant });
      const ref = matmulRef({ a: whole.subarray(off), b: whole.subarray(off + M * K), batch: 1, M, N, K });
      assertClose(`offset ${variant}`, await rt.read(out), ref, N);
      rt.release(out, buf);
    }
  });

  it('reg-vec4: a tuned choice falls back on unaligned operands, a forced one is refused', async () => {
    const rt = await testRuntime();
    const tuner = matmulTuner(rt);
    const r = rng(freshSeed());
    const cases = [
      { off: 0, M: 6, K: 8, N: 8 },
      { off: 0, M: 8, K: 7, N: 8 },
      { off: 2, M: 8, K: 8, N: 8 },
    ];
    try {
      for (const { off, M, K, N } of cases) {
        const whole = uniform(off + M * K + K * N, r);
        const buf = rt.upload(whole, [whole.length]);
        const a = view(buf, [M, K], off);
        const b = view(buf, [K, N], off + M * K);
        const out = poisoned(rt, [M, N]);
        expect(() => matmul(rt, { a, b, out, variant: 'reg-vec4' })).toThrow(/multiples of 4/);
        tuner.forced = 'reg-vec4';
        matmul(rt, { a, b, out });
        tuner.forced = null;
        const ref = matmulRef({ a: whole.subarray(off), b: whole.subarray(off + M * K), batch: 1, M, N, K });
        assertClose(`fallback ${JSON.stringify({ off, M, K, N })}`, await rt.read(out), ref, N);
        rt.release(out, buf);
      }
    } finally {
      tuner.forced = null;
    }
  });

  it('rejects mismatched shapes and aliasing', async () => {
    const rt = await testRuntime();
    const a = rt.empty([4, 4]);
    const b = rt.empty([6, 7]);
    expect(() => matmul(rt, { a, b })).toThrow(/inner dimensions differ/);
    expect(() => matmul(rt, { a, b: rt.empty([4, 4]), out: a })).toThrow(/shares a buffer/);
    expect(() => matmul(rt, { a, b: rt.empty([4, 3]), out: rt.empty([4, 4]) })).toThrow(/does not hold/);
  });

  it('autotunes a shape class and remembers the winner', async () => {
    const rt = await testRuntime();
    const tuner = matmulTuner(rt);
    const times = await tuner.tune({ batch: 1, M: 64, N: 64, K: 64, transA: false, transB: true }, 1);
    // 64 rows, a rollout batch: split-K and rows are timed beside the tiles, gemv (a decode step's few rows) is not.
    const subgroups = rt.ctx.features.has('subgroups');
    expect(Object.keys(times).sort()).toEqual(['reg', 'reg-vec4', 'reg-wide', 'rows', 'splitk', ...(subgroups ? ['splitk-sg'] : []), 'tiled', 'tiled-128']);
    expect(Object.keys(await tuner.tune({ batch: 1, M: 65, N: 64, K: 64, transA: false, transB: true }, 1)).filter((v) => v.startsWith('splitk') || v === 'gemv' || v === 'rows')).toEqual([]);
    for (const t of Object.values(times)) expect(t).toBeGreaterThan(0);
    const decode = await tuner.tune({ batch: 1, M: 4, N: 64, K: 64, transA: false, transB: true }, 1);
    expect(decode.gemv).toBeGreaterThan(0);
    expect(decode.splitk).toBeGreaterThan(0);
    expect(decode['splitk-sg'] !== undefined).toBe(subgroups);
    // Up to 8 rows split-K reads the weights once too: rows is not timed.
    expect(decode.rows).toBeUndefined();
    // reg-vec4 is timed only where it can run.
    expect(Object.keys(await tuner.tune({ batch: 1, M: 30, N: 64, K: 64, transA: false, transB: false }, 1))).not.toContain('reg-vec4');
    const winner = Object.entries(times).sort((x, y) => x[1] - y[1])[0]![0];
    expect(tuner.choose({ batch: 1, M: 64, N: 64, K: 64, transA: false, transB: true })).toBe(winner);
    // Shapes used without a measurement are remembered and tuned on request.
    const used = { batch: 1, M: 40, N: 640, K: 640, transA: true, transB: false };
    expect(tuner.choose(used)).toBeTruthy();
    expect(await tuner.tunePending(1)).toBe(1);
    expect(await tuner.tunePending(1)).toBe(0);
    expect(tuner.entries()[shapeClass(used)]).toBeDefined();
    tuner.forced = 'gemv';
    expect(tuner.choose({ batch: 1, M: 64, N: 64, K: 64, transA: false, transB: true })).toBe('gemv');
    tuner.forced = null;
  });
});
