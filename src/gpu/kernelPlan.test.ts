import { describe, expect, it } from 'vitest';
import { followPlan, kernelPlan, parseKernelPlan, planRuntimeOptions, type KernelPlan } from './kernelPlan';
import { MatmulTuner, shapeClass } from './ops/autotune';
import { untunedVariant, type MatmulShape } from './ops/matmulVariants';
import { testRuntime } from './testUtils';

const big: MatmulShape = { batch: 1, M: 300, N: 1000, K: 1000, transA: false, transB: true };
const decode: MatmulShape = { ...big, M: 2 };
const small: MatmulShape = { batch: 1, M: 9, N: 12, K: 20, transA: false, transB: true };

describe('kernel plan', () => {
  it('records every class a runtime chose for, and a followed plan decides every class it names, the heuristic as its adapter made it', async () => {
    // No tuning: nothing is measured, and the file's own table holds none of these classes.
    const rt = await testRuntime({ tuning: false });
    const own = new MatmulTuner(rt);
    for (const s of [big, small]) expect(own.choose(s)).toBe(untunedVariant(s, rt.ctx));
    expect(own.plan()).toEqual({ architecture: rt.ctx.adapter.architecture, subgroups: rt.ctx.features.has('subgroups'), matmul: {}, untuned: [shapeClass(big), shapeClass(small)].sort() });

    // A plan made on a GPU with subgroups: its measured winner, and its heuristic for the classes it ran untuned.
    const tuner = new MatmulTuner(rt);
    const gpu = { architecture: 'hopper', subgroups: true, matmul: { [shapeClass(big)]: 'tiled-128' as const }, untuned: [shapeClass(decode)] };
    tuner.replay(gpu);
    expect(tuner.choose(big)).toBe('tiled-128');
    expect(tuner.choose(decode)).toBe('splitk-sg');
    // A class the plan lacks: chosen as without a plan, and listed as added.
    const lacked = { ...big, K: 5000 };
    expect(tuner.choose(lacked)).toBe(untunedVariant(lacked, rt.ctx));
    expect(tuner.plan()).toEqual({ ...gpu, untuned: [shapeClass(decode), shapeClass(lacked)].sort(), added: [shapeClass(lacked)] });
  });

  it('reads back as written, refuses a variant it does not know and an adapter that cannot follow it', async () => {
    const rt = await testRuntime({ subgroupMatmul: false });
    const plan = kernelPlan(rt);
    expect(plan).toMatchObject({ adapter: rt.ctx.adapter.key, serialRows: rt.serialRows, subgroupMatmul: false, fusedPrologues: rt.fusedPrologues, halfMath: rt.halfMath });
    expect(parseKernelPlan(JSON.stringify(plan), 'kernels.json')).toEqual(plan);
    expect(planRuntimeOptions(plan)).toEqual({ serialRows: rt.serialRows, subgroupMatmul: false, fusedPrologues: rt.fusedPrologues, halfMath: rt.halfMath, subgroupMatrix: false });
    // A plan recorded before f16 products existed never used them.
    const { halfMath: _, ...older } = plan;
    expect(planRuntimeOptions(parseKernelPlan(JSON.stringify(older), 'kernels.json')).halfMath).toBe(false);
    const bad: KernelPlan = { ...plan, matmul: { 'NT|m9|n10|k10': 'fast' as never } };
    expect(() => parseKernelPlan(JSON.stringify(bad), 'run/kernels.json')).toThrow('run/kernels.json: matmul class NT|m9|n10|k10: no variant "fast" (reg, reg-wide, reg-vec4, tiled, tiled-128, tiled-128-splitk, gemv, splitk, splitk-sg, rows, mma)');
    expect(() => parseKernelPlan('{"matmul": {}}', 'run/kernels.json')).toThrow(/^run\/kernels\.json: not a kernel plan/);
    expect(() => parseKernelPlan('{', 'run/kernels.json')).toThrow('run/kernels.json: not valid JSON');
    // Subgroup rows asked of a runtime that shares none.
    expect(() => followPlan(rt, { ...plan, subgroupMatmul: true })).toThrow(/shares matmul rows across subgroups of 4 lanes .*this adapter cannot$/);
    // Sums on subgroup matrices, whose blocks order them, asked of a runtime without those blocks.
    const mma = { ...plan, matmul: { 'NT|m32|n896|k896|b16|h': 'mma' as const }, subgroupMatrix: { M: 16, N: 16, K: 16, subgroupMaxSize: 32 } };
    expect(parseKernelPlan(JSON.stringify(mma), 'kernels.json')).toEqual(mma);
    expect(planRuntimeOptions(mma).subgroupMatrix).toBe(true);
    expect(() => followPlan(rt, mma)).toThrow(/multiplies on 16×16×16 subgroup matrices in subgroups of 32 .*this adapter has none$/);
    expect(() => parseKernelPlan(JSON.stringify({ ...plan, subgroupMatrix: { M: 16 } }), 'kernels.json')).toThrow(/not a kernel plan/);
  });
});
