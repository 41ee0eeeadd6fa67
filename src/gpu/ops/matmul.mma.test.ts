/**
 * matmul_mma, the matmul on subgroup matrices. Its products run only where the device has them
 * (tensor cores and their kin): there its cases are checked against float64 (the GPU report runs
 * the same cases on the card). Everywhere, its kernels are compiled for every prologue and
 * epilogue on the configurations GPUs offer, by Dawn's null backend, which offers the feature
 * but runs nothing. The rest of the kernel, its builtins emulated, is checked against float64
 * on a device with shader-f16 (matmul.f16.test.ts, on Mesa's lavapipe).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { nodePlatform } from '../../platform/node';
import { pickSubgroupMatrix, type SubgroupMatrixConfig, type SubgroupMatrixShape } from '../device';
import { Runtime } from '../runtime';
import { testPlatform, testRuntime } from '../testUtils';
import { matmul } from './matmul';
import { MMA_CASES } from './matmulCheck';
import { check } from './matmulTestUtils';
import { mmaFits, mmaSlices, plan, resolveShape, type MatmulArgs } from './matmulVariants';

const config = (componentType: string, resultComponentType: string, M: number, N: number, K: number): SubgroupMatrixConfig => ({ componentType, resultComponentType, M, N, K });

describe('the subgroup matrices matmul_mma takes', () => {
  it("picks the adapter's first f16 → f32 configuration that tiles its workgroup", () => {
    // As NVIDIA's Vulkan driver lists them (f16 results first), Apple's 8×8, Intel's 8×16×16.
    const nvidia = [config('f16', 'f16', 16, 16, 16), config('f16', 'f32', 16, 8, 16), config('f16', 'f32', 16, 16, 16), config('u8', 'u32', 16, 16, 32)];
    expect(pickSubgroupMatrix(nvidia, 32, 256)).toEqual({ M: 16, N: 8, K: 16, subgroupMaxSize: 32 });
    expect(pickSubgroupMatrix([config('f32', 'f32', 8, 8, 8), config('f16', 'f32', 8, 8, 8)], 32, 256)).toEqual({ M: 8, N: 8, K: 8, subgroupMaxSize: 32 });
    expect(pickSubgroupMatrix([config('f16', 'f32', 8, 16, 16)], 16, 256)).toEqual({ M: 8, N: 16, K: 16, subgroupMaxSize: 16 });
    // Results too wide for the staged 8 KiB, a K that does not divide the 64 staged, rows that do not divide 32, no f32 result.
    expect(pickSubgroupMatrix([config('f16', 'f32', 16, 32, 16), config('f16', 'f32', 16, 16, 24), config('f16', 'f32', 12, 8, 16), config('f16', 'f16', 16, 16, 16)], 32, 256)).toBeNull();
    expect(pickSubgroupMatrix([], 32, 256)).toBeNull();
    // Four subgroups of 128 invocations pass a device's 256 a workgroup.
    expect(pickSubgroupMatrix([config('f16', 'f32', 16, 16, 16)], 128, 256)).toBeNull();
    expect(pickSubgroupMatrix([config('f16', 'f32', 16, 16, 16)], 128, 512)).toEqual({ M: 16, N: 16, K: 16, subgroupMaxSize: 128 });
    // Four subgroups of 4 are fewer invocations than the 32 rows a workgroup stages and normalises.
    expect(pickSubgroupMatrix([config('f16', 'f32', 8, 8, 8)], 4, 256)).toBeNull();
    expect(pickSubgroupMatrix([config('f16', 'f32', 8, 8, 8)], 8, 256)).toEqual({ M: 8, N: 8, K: 8, subgroupMaxSize: 8 });
  });

  it('fits x·Wᵀ and x·W over an f16 W with f16 products, in whole blocks, and nothing else', () => {
    const m: SubgroupMatrixShape = { M: 16, N: 16, K: 16, subgroupMaxSize: 32 };
    const s = { batch: 1, M: 32, N: 896, K: 896, transA: false, transB: true, bDtype: 'f16' as const, half: true };
    expect(mmaFits(s, m)).toBe(true);
    expect(mmaFits({ ...s, prologue: 'norm' }, m)).toBe(true);
    // The backward pass's dX = dY·W, its rows scaled: Qwen2.5-0.5B's gate|up (K 9,728) and LM head (K 151,936).
    for (const K of [9728, 151936]) expect(mmaFits({ ...s, K, transB: false, scaled: true }, m)).toBe(true);
    for (const other of [{ half: false }, { bDtype: 'f32' as const }, { transA: true }, { N: 904 }, { K: 904 }, { aligned: false }, { scaled: true, prologue: 'swiglu' as const }]) {
      expect(mmaFits({ ...s, ...other }, m), JSON.stringify(other)).toBe(false);
    }
    // W's rows must start on 16 bytes: without the transpose they are N long.
    const m8: SubgroupMatrixShape = { M: 8, N: 8, K: 8, subgroupMaxSize: 32 };
    expect(mmaFits({ ...s, transB: false, N: 904, K: 904 }, m8)).toBe(true);
    expect(mmaFits({ ...s, transB: false, N: 900, K: 904 }, m8)).toBe(false);
    expect(mmaFits({ ...s, transB: true, N: 904, K: 900 }, m8)).toBe(false);
  });

  it('cuts a long K into slices that fill a large GPU, the norm prologue included', () => {
    const m: SubgroupMatrixShape = { M: 16, N: 16, K: 16, subgroupMaxSize: 32 };
    // Qwen2.5-0.5B at 32 rows: the down projection, the fused q|k|v, the LM head.
    expect(mmaSlices({ batch: 1, M: 32, N: 896, K: 4864 }, m)).toBe(19);
    expect(mmaSlices({ batch: 1, M: 32, N: 1152, K: 896 }, m)).toBe(7);
    expect(mmaSlices({ batch: 1, M: 32, N: 151936, K: 896 }, m)).toBe(1);
    expect(mmaSlices({ batch: 2, M: 32, N: 896, K: 4864 }, m)).toBe(1);
  });
});

describe("matmul_mma's kernels compile (Dawn's null backend)", () => {
  let rt: Runtime | null = null;
  afterAll(() => rt?.destroy());

  it('for every prologue, epilogue and slicing, on 16×16×16, 16×8×16, 8×8×8 and 8×16×16 matrices', async () => {
    rt = await Runtime.create(nodePlatform({ dawnFlags: ['backend=null', 'enable-dawn-features=allow_unsafe_apis'], ownDevice: true }), { tuning: false });
    const r = rt;
    const specs = [];
    // Subgroups of 32, as NVIDIA's, AMD's (wave32) and Apple's: workgroups of 128, a multiple of
    // the null backend's subgroupMaxSize (128), as the width of one using subgroup matrices must be.
    for (const shape of [
      { M: 16, N: 16, K: 16, subgroupMaxSize: 32 },
      { M: 16, N: 8, K: 16, subgroupMaxSize: 32 },
      { M: 8, N: 8, K: 8, subgroupMaxSize: 32 },
      { M: 8, N: 16, K: 16, subgroupMaxSize: 32 },
    ]) {
      for (const [K, prologue, bias, transB] of [
        [896, 'none', false, true], [4864, 'none', true, true], [896, 'swiglu', false, true], [896, 'norm', true, true], [4864, 'norm', false, true],
        [896, 'scaled', true, false], [4864, 'scaled', false, false], [896, 'scaled', false, true],
      ] as const) {
        const a = r.empty([32, prologue === 'swiglu' ? 2 * K : K]);
        const b = r.empty(transB ? [128, K] : [K, 128], 'f16');
        const args: MatmulArgs = {
          a, b, transB, halfMath: true,
          ...(prologue === 'scaled' ? { scaleRows: true } : {}),
          ...(bias ? { bias: r.empty([128], 'f16') } : {}),
          ...(prologue === 'swiglu' ? { swiglu: true } : {}),
          ...(prologue === 'norm' ? { norm: { weight: r.empty([K], 'f16'), eps: 1e-6 } } : {}),
        };
        const p = plan('mma', resolveShape(args), false, args, shape);
        specs.push({ what: `${JSON.stringify(shape)} K ${K} ${prologue}${bias ? ' bias' : ''}${transB ? '' : ' W not transposed'}`, spec: p.kernel });
        if (p.slices > 1) specs.push({ what: `its slices' reduction`, spec: { ...p.kernel, entry: 'matmul_splitk_reduce' } });
      }
    }
    expect(specs.some((s) => s.spec.defines?.SK_SLICED)).toBe(true);
    expect(specs.some((s) => s.spec.defines?.A_SCALE && s.spec.defines.SK_SLICED && !s.spec.defines.TRANS_B)).toBe(true);
    const kernels = specs.map(({ what, spec }) => ({ what, kernel: r.pipelines.prepare(spec) }));
    // One that cannot compile, so that the check below can fail.
    const broken = r.pipelines.prepare({ ...specs[0]!.spec, entry: 'matmul_mma_missing' });
    await r.pipelines.ready();
    for (const { what, kernel } of kernels) expect(kernel.failure, what).toBeNull();
    expect(broken.failure).toMatch(/matmul_mma_missing/);
  });
});

describe('matmul_mma on this device', () => {
  it('is refused with the reason where the device has no subgroup matrices or the call does not fit them', async () => {
    const rt = await testRuntime();
    const a = rt.empty([4, 64]);
    const b = rt.empty([64, 64], 'f16');
    const call = () => matmul(rt, { a, b, transB: true, variant: 'mma' });
    expect(call).toThrow(/mma needs f16 subgroup matrices and x·Wᵀ or x·W over an f16 W with halfMath.*no halfMath/);
    rt.release(a, b);
  });

  it('scales only the rows of a plain, untransposed A', async () => {
    const rt = await testRuntime();
    const a = rt.empty([64, 64]);
    const gu = rt.empty([64, 128]);
    const w = rt.empty([64, 64]);
    expect(() => matmul(rt, { a, b: w, transA: true, scaleRows: true })).toThrow('matmul scaleRows scales the rows of a plain, untransposed A');
    expect(() => matmul(rt, { a: gu, b: w, swiglu: true, scaleRows: true })).toThrow('matmul scaleRows scales the rows of a plain, untransposed A');
    const weight = rt.empty([64]);
    expect(() => matmul(rt, { a, b: w, norm: { weight, eps: 1e-6 }, scaleRows: true })).toThrow('matmul scaleRows scales the rows of a plain, untransposed A');
    rt.release(a, gu, w, weight);
  });

  it('is given emulated matrices only, and only on a device with shader-f16', async () => {
    const platform = testPlatform('own');
    const shape = { M: 16, N: 16, K: 16, subgroupMaxSize: 32 };
    await expect(Runtime.create(platform, { subgroupMatrix: shape, tuning: false })).rejects.toThrow(/are the adapter's to offer; a runtime may only be given emulated ones/);
    await expect(Runtime.create(platform, { subgroupMatrix: { ...shape, emulated: true }, tuning: false })).rejects.toThrow(/emulated subgroup matrices need a device with shader-f16/);
  });

  it('matches float64 on every case, where the device has subgroup matrices', async (ctx) => {
    const rt = await testRuntime();
    if (!rt.ctx.subgroupMatrix) ctx.skip(`${rt.ctx.adapter.architecture || rt.ctx.adapter.description} has no f16 subgroup matrices`);
    for (const c of MMA_CASES) await check('mma', c);
  });
});
