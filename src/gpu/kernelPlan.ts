/**
 * A run's kernel plan: every choice of kernel that changes how its sums round. The matmul
 * autotuner's winners are timed, so another machine, or the same one under another load,
 * picks other variants; the adapter decides the rest (row kernels, subgroup rows, fused
 * prologues). A run records its plan, and a rerun that follows it makes the same outcomes
 * from the same seed wherever it runs.
 */
import { matmulTuner, type MatmulPlan } from './ops/autotune';
import { MATMUL_VARIANTS, type MatmulVariant } from './ops/matmulVariants';
import type { Runtime, RuntimeOptions } from './runtime';
import type { SubgroupMatrixShape } from './device';

export interface KernelPlan extends MatmulPlan {
  /** The adapter the plan was made on (see AdapterSummary.key): for the reader, not checked. */
  adapter: string;
  /** The runtime's adapter-based choices (see Runtime). */
  serialRows: boolean;
  subgroupMatmul: boolean;
  fusedPrologues: boolean;
  /** Whether inference multiplied f16 weights in f16 (Runtime.halfMath); absent in plans made before it existed, which never did. */
  halfMath?: boolean;
  /** The subgroup matrices matmul_mma multiplied on (their blocks order its sums), or null; absent in plans made before it existed. */
  subgroupMatrix?: SubgroupMatrixShape | null;
}

/** The plan this runtime has run on so far (with a followed plan: that plan and what it lacked). */
export function kernelPlan(rt: Runtime): KernelPlan {
  return {
    adapter: rt.ctx.adapter.key,
    serialRows: rt.serialRows,
    subgroupMatmul: rt.subgroupMatmul,
    fusedPrologues: rt.fusedPrologues,
    halfMath: rt.halfMath,
    subgroupMatrix: rt.subgroupMatrix,
    ...matmulTuner(rt).plan(),
  };
}

/** The runtime options that make a new runtime's adapter-based choices the plan's. */
export function planRuntimeOptions(plan: KernelPlan): Pick<RuntimeOptions, 'serialRows' | 'subgroupMatmul' | 'fusedPrologues' | 'halfMath' | 'subgroupMatrix'> {
  return {
    serialRows: plan.serialRows, subgroupMatmul: plan.subgroupMatmul, fusedPrologues: plan.fusedPrologues, halfMath: plan.halfMath ?? false,
    // A plan made without subgroup matrices, or before they existed, never ran on them.
    subgroupMatrix: plan.subgroupMatrix != null,
  };
}

/**
 * Makes a runtime created with planRuntimeOptions(plan) run on the plan; refuses, with a
 * sentence naming what is missing, an adapter that cannot (the plan's subgroup kernels).
 */
export function followPlan(rt: Runtime, plan: KernelPlan): void {
  if (plan.subgroups && !rt.ctx.features.has('subgroups')) throw new Error(`the kernel plan was made on an adapter with subgroups (${plan.adapter}); this one has none`);
  if (plan.subgroupMatmul && !rt.subgroupMatmul) throw new Error(`the kernel plan shares matmul rows across subgroups of 4 lanes (${plan.adapter}); this adapter cannot`);
  const mma = plan.subgroupMatrix;
  if (Object.values(plan.matmul).includes('mma') && !(mma && sameMatrices(mma, rt.subgroupMatrix))) {
    const had = mma ? `${mma.M}×${mma.N}×${mma.K} subgroup matrices in subgroups of ${mma.subgroupMaxSize}` : 'subgroup matrices';
    const own = rt.subgroupMatrix;
    const has = own ? `${own.M}×${own.N}×${own.K} in subgroups of ${own.subgroupMaxSize}` : 'none';
    throw new Error(`the kernel plan multiplies on ${had} (${plan.adapter}); this adapter has ${has}`);
  }
  matmulTuner(rt).replay(plan);
}

const sameMatrices = (a: SubgroupMatrixShape, b: SubgroupMatrixShape | null) =>
  b !== null && a.M === b.M && a.N === b.N && a.K === b.K && a.subgroupMaxSize === b.subgroupMaxSize && (a.emulated ?? false) === (b.emulated ?? false);

const isBool = (x: unknown) => typeof x === 'boolean';
const isMatrices = (x: unknown) =>
  x === undefined || x === null ||
  (typeof x === 'object' && ['M', 'N', 'K', 'subgroupMaxSize'].every((k) => Number.isInteger((x as Record<string, unknown>)[k])));
const isStrings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');

/** A recorded plan (kernels.json) read back and checked; `file` names it in the error. */
export function parseKernelPlan(text: string, file: string): KernelPlan {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error(`${file}: not valid JSON`);
  }
  const p = raw as Partial<Record<keyof KernelPlan, unknown>>;
  const variants = p.matmul as Record<string, unknown> | undefined;
  const ok =
    typeof p === 'object' && p !== null &&
    typeof p.adapter === 'string' && typeof p.architecture === 'string' &&
    isBool(p.subgroups) && isBool(p.serialRows) && isBool(p.subgroupMatmul) && isBool(p.fusedPrologues) && (p.halfMath === undefined || isBool(p.halfMath)) &&
    typeof variants === 'object' && variants !== null && !Array.isArray(variants) &&
    isStrings(p.untuned) && (p.added === undefined || isStrings(p.added)) && isMatrices(p.subgroupMatrix);
  if (!ok) throw new Error(`${file}: not a kernel plan (adapter, architecture, subgroups, serialRows, subgroupMatmul, fusedPrologues, matmul, untuned, subgroupMatrix)`);
  for (const [key, variant] of Object.entries(variants)) {
    if (!MATMUL_VARIANTS.includes(variant as MatmulVariant)) throw new Error(`${file}: matmul class ${key}: no variant ${JSON.stringify(variant)} (${MATMUL_VARIANTS.join(', ')})`);
  }
  return raw as KernelPlan;
}
