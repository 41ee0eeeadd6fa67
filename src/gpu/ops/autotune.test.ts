import { describe, expect, it } from 'vitest';
import type { Runtime } from '../runtime';
import { testRuntime, uniform, rng, freshSeed } from '../testUtils';
import { view } from '../tensor';
import { f32ToHalves } from '../../util/half';
import { fill } from './elementwise';
import { matmulTuner, MatmulTuner, shapeClass, worthTuning } from './autotune';
import { matmul } from './matmul';
import { MATMUL_VARIANTS, untunedVariant, type MatmulArgs, type MatmulShape, type MatmulVariant } from './matmulVariants';

/** A tuner whose `planted` variants compute something else, faster than any matmul. */
class PlantedTuner extends MatmulTuner {
  constructor(rt: Runtime, private readonly planted: Partial<Record<MatmulVariant, (rt: Runtime, args: MatmulArgs) => void>>) {
    super(rt);
  }
  protected override run(variant: MatmulVariant, args: MatmulArgs): void {
    const plant = this.planted[variant];
    if (plant) plant(this.rt, args);
    else super.run(variant, args);
  }
}

describe('matmul autotuner', () => {
  it('refuses a variant whose output is wrong, however fast: zeros, or rows left unwritten', async () => {
    const rt = await testRuntime();
    const tuner = new PlantedTuner(rt, {
      'reg-wide': (r, args) => fill(r, args.out!, 0),
      // The right product on all rows but the last.
      tiled: (r, args) => {
        const [, M, N] = args.out!.shape as [number, number, number];
        const K = args.a.shape[2]!;
        matmul(r, { a: view(args.a, [M - 1, K]), b: view(args.b, [N, K]), out: view(args.out!, [M - 1, N]), transB: true, variant: 'reg' });
      },
    });
    const shape: MatmulShape = { batch: 1, M: 64, N: 64, K: 64, transA: false, transB: true };
    const times = await tuner.tune(shape, 1);
    expect(tuner.refused.sort()).toEqual(['reg-wide', 'tiled']);
    expect(Object.keys(times)).not.toContain('reg-wide');
    expect(Object.keys(times)).not.toContain('tiled');
    expect(Object.keys(times).length).toBeGreaterThan(0);
    expect(['reg-wide', 'tiled']).not.toContain(tuner.choose(shape));
    // The class's record: the accepted variants' times and the refused.
    expect(tuner.measurements()).toEqual({ [shapeClass(shape)]: { ms: times, refused: ['reg-wide', 'tiled'] } });
  });

  it('a class chosen before it was tuned runs its tuned winner after', async () => {
    const rt = await testRuntime();
    // Every variant but tiled computes zeros (split-K and gemv too, which are tuned up to 64 and
    // 16 rows): tiled wins, whatever the untuned plan was and however fast the others time.
    const zeros = (r: Runtime, args: MatmulArgs) => fill(r, args.out!, 0);
    const planted = Object.fromEntries(MATMUL_VARIANTS.filter((v) => v !== 'tiled').map((v) => [v, zeros]));
    const tuner = new PlantedTuner(rt, planted);
    // A class no other test in this file tunes: the file's tests share one runtime and its table,
    // so a class another test tuned first would start out with that test's winner.
    const shape: MatmulShape = { batch: 1, M: 64, N: 64, K: 128, transA: false, transB: true };
    const untuned = untunedVariant(shape, rt.ctx);
    expect(untuned).not.toBe('tiled');
    expect(tuner.choose(shape)).toBe(untuned);
    // Another shape of the same class (log2 sizes) is the same choice; another class is its own.
    expect(tuner.choose({ ...shape, M: 40, N: 50 })).toBe(untuned);
    await tuner.tune(shape, 1);
    expect(tuner.choose(shape)).toBe('tiled');
    expect(tuner.choose({ ...shape, M: 40, N: 50 })).toBe('tiled');
    expect(tuner.choose({ ...shape, M: 65 })).toBe(untuned);
    expect(tuner.choose({ ...shape, bDtype: 'f16' })).toBe(untuned);
  });

  it('classes by B dtype, prologue and alignment, and tunes each as the calls run (every real variant accepted)', async () => {
    const rt = await testRuntime();
    const tuner = new MatmulTuner(rt);
    const base: MatmulShape = { batch: 1, M: 24, N: 40, K: 32, transA: false, transB: true };
    const classes = new Set([
      shapeClass(base),
      shapeClass({ ...base, bDtype: 'f16' }),
      shapeClass({ ...base, prologue: 'norm' }),
      shapeClass({ ...base, prologue: 'swiglu' }),
      shapeClass({ ...base, aligned: false }),
      shapeClass({ ...base, half: true }),
      shapeClass({ ...base, half: true, scaled: true }),
    ]);
    expect(classes.size).toBe(7);
    expect(shapeClass({ ...base, bDtype: 'f32', aligned: true })).toBe(shapeClass(base));
    // Each feature once (the references of f16 B, both prologues, both transposes, a skew).
    for (const s of [
      { ...base, bDtype: 'f16' as const, prologue: 'norm' as const },
      { ...base, transA: true, prologue: 'swiglu' as const },
      { ...base, transB: false, aligned: false, bDtype: 'f16' as const },
    ]) {
      const times = await tuner.tune(s, 1);
      expect(tuner.refused, shapeClass(s)).toEqual([]);
      expect(Object.keys(times).length).toBeGreaterThan(2);
      expect(tuner.isTuned(s)).toBe(true);
    }
  });

  it('a call records its class with its dtype, prologue and alignment, tuned on request; a small one runs untuned', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const r = rng(seed);
    const live = matmulTuner(rt);
    // B of 1 MiB in f16: enough to be worth tuning whatever M is.
    const [N, K] = [256, 2048];
    const a = rt.upload(uniform(9 * K, r), [9, K]);
    const w = rt.upload(f32ToHalves(uniform(N * K, r)), [N, K], 'f16');
    const norm = { weight: rt.upload(uniform(K, r), [K]), eps: 1e-5 };
    const count = live.pendingCount;
    const out = matmul(rt, { a, b: w, transB: true, norm });
    const skewed = matmul(rt, { a: view(a, [4, K], 1), b: w, transB: true });
    expect(live.pendingCount - count).toBe(2);
    expect(live.isTuned({ batch: 1, M: 9, N, K, transA: false, transB: true, bDtype: 'f16', prologue: 'norm' })).toBe(false);
    // Microseconds of work on any GPU: no class recorded, the untuned plan runs.
    const small = { batch: 1, M: 9, N: 12, K: 20, transA: false, transB: true } as const;
    const x = rt.upload(uniform(9 * 20, r), [9, 20]);
    const y = rt.upload(uniform(12 * 20, r), [12, 20]);
    const tiny = matmul(rt, { a: x, b: y, transB: true });
    expect(live.pendingCount - count).toBe(2);
    expect(live.choose(small)).toBe(untunedVariant(small, rt.ctx));
    await live.tunePending(1);
    expect(live.isTuned({ batch: 1, M: 9, N, K, transA: false, transB: true, bDtype: 'f16', prologue: 'norm' })).toBe(true);
    expect(live.isTuned({ batch: 1, M: 4, N, K, transA: false, transB: true, bDtype: 'f16', aligned: false })).toBe(true);
    expect(live.isTuned(small)).toBe(false);
    rt.release(a, w, norm.weight, out, skewed, x, y, tiny);
  });

  it('a runtime without tuning records no class: its calls run the untuned plan and nothing is measured or stored', async () => {
    const rt = await testRuntime({ tuning: false });
    const r = rng(freshSeed());
    const live = matmulTuner(rt);
    // The table this file's other runtimes stored (the same cache file) loads; none is added.
    const before = JSON.stringify(live.entries());
    const [M, N, K] = [9, 384, 1536];
    const shape = { batch: 1, M, N, K, transA: false, transB: true, bDtype: 'f16' } as const;
    const a = rt.upload(uniform(M * K, r), [M, K]);
    const w = rt.upload(f32ToHalves(uniform(N * K, r)), [N, K], 'f16');
    const out = matmul(rt, { a, b: w, transB: true });
    expect(worthTuning(shape)).toBe(true);
    expect(live.pendingCount).toBe(0);
    expect(live.choose(shape)).toBe(untunedVariant(shape, rt.ctx));
    expect(await live.tunePending(1)).toBe(0);
    expect(live.isTuned(shape)).toBe(false);
    expect(JSON.stringify(live.entries())).toBe(before);
    rt.release(a, w, out);
  });

  it('tunes a full-size LM head and a wide output over a short K on capped slices: no operand or output over 16 MiB', async () => {
    const rt = await testRuntime();
    const sizes: number[] = [];
    const createBuffer = rt.device.createBuffer.bind(rt.device);
    rt.device.createBuffer = (d: GPUBufferDescriptor) => {
      sizes.push(d.size);
      return createBuffer(d);
    };
    try {
      const head: MatmulShape = { batch: 1, M: 1, N: 151_936, K: 896, transA: false, transB: true };
      // A LoRA up-projection (rank 16) of a Solver batch's tokens: its whole output is 163 MB.
      const loraUp: MatmulShape = { batch: 1, M: 4200, N: 9728, K: 16, transA: false, transB: true };
      for (const shape of [head, loraUp]) {
        sizes.length = 0;
        const times = await new MatmulTuner(rt).tune(shape, 1);
        expect(Object.keys(times).length).toBeGreaterThan(0);
        expect(Math.max(...sizes)).toBeLessThanOrEqual(16 * 2 ** 20);
      }
    } finally {
      rt.device.createBuffer = createBuffer;
    }
  });

  it('times by GPU timestamps where the adapter has them, the work done as recorded', async (ctx) => {
    const rt = await testRuntime();
    if (!rt.ctx.features.has('timestamp-query')) ctx.skip();
    const x = rt.upload(new Float32Array([1, 2, 3, 4]), [4]);
    const ms = await rt.gpuTime(() => fill(rt, x, 7));
    expect(ms).not.toBeNull();
    expect(ms!).toBeGreaterThanOrEqual(0);
    expect(Array.from(await rt.read(x))).toEqual([7, 7, 7, 7]);
    rt.release(x);
  });

  it('times only its own work while another task records dispatches and a read (a self-check beside a run\'s tuning)', async (ctx) => {
    const rt = await testRuntime();
    if (!rt.ctx.features.has('timestamp-query')) ctx.skip();
    const random = rng(freshSeed());
    const [a, b] = [1 + Math.floor(random() * 100), 1 + Math.floor(random() * 100)];
    const x = rt.upload(new Float32Array(4).fill(NaN), [4]);
    const y = rt.upload(new Float32Array(8).fill(NaN), [8]);
    // gpuTime records its fill, then waits for the pipelines; the other task records its fill
    // and a read's copy in that wait, before the timed submit.
    const timing = rt.gpuTime(() => fill(rt, x, a));
    fill(rt, y, b);
    const other = rt.read(y);
    const [ms, values] = await Promise.all([timing, other]);
    expect(ms).not.toBeNull();
    expect(Array.from(values)).toEqual(new Array(8).fill(b));
    expect(Array.from(await rt.read(x))).toEqual(new Array(4).fill(a));
    rt.release(x, y);
  });
});
