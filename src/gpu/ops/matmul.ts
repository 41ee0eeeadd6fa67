import type { GpuContext, OptionalFeature } from '../device';
import type { Runtime } from '../runtime';
import { Params } from '../params';
import type { KernelSpec } from '../pipelines';
import type { Tensor } from '../tensor';
import { BYTES_PER_ELEMENT, shapeString, view } from '../tensor';
import { f32ToHalves, halvesToF32 } from '../../util/half';
import { rng } from '../../util/random';
import { fill } from './elementwise';
import { grid } from './common';

/**
 * Kernel variants; see shaders/matmul.wgsl. splitk-sg reduces with subgroup operations and
 * exists only where the adapter has them (see availableVariants). tiled-128 is the large-tile
 * kernel for training-sized shapes on GPUs (128×128 per workgroup, double-buffered).
 */
export const MATMUL_VARIANTS = ['reg', 'reg-wide', 'reg-vec4', 'tiled', 'tiled-128', 'gemv', 'splitk', 'splitk-sg'] as const;
export type MatmulVariant = (typeof MATMUL_VARIANTS)[number];

export interface MatmulArgs {
  /** [..., M, K], or [..., K, M] with transA. */
  a: Tensor;
  /** [..., K, N], or [..., N, K] with transB; 2-D broadcasts over the batch. f32 or f16 (read as f32). */
  b: Tensor;
  /** [..., M, N]; allocated when absent. Must not share a buffer with a, b or bias. */
  out?: Tensor;
  transA?: boolean;
  transB?: boolean;
  /** [N], added to every row. f32 or f16. */
  bias?: Tensor;
  alpha?: number;
  /** out = alpha·AB + beta·out: beta = 1 accumulates (gradient accumulation). */
  beta?: number;
  /** Forces a variant instead of the autotuned choice. */
  variant?: MatmulVariant;
  /**
   * a holds fused gate|up rows, each stored row twice as wide as op(A)'s ([..., M, 2K], or
   * [..., K, 2M] with transA), and op(A) = silu(gate)·up: the SwiGLU activation is computed
   * as A is read, so it needs neither a dispatch nor a buffer of its own.
   */
  swiglu?: boolean;
  /**
   * op(A) is RMSNorm(A)·weight row by row (weight [K], f32 or f16), A not transposed: the
   * norm before a projection, computed in the matmul (each row's Σ A² gathered in its K loop).
   */
  norm?: { weight: Tensor; eps: number };
  /**
   * Multiply in f16 and add the products in f32 (tiled-128 only, on a device with shader-f16):
   * op(A) and op(B) rounded to half (values past ±65,504 overflow), each product good to 2^-11.
   */
  halfMath?: boolean;
}

export interface MatmulShape {
  batch: number;
  M: number;
  N: number;
  K: number;
  transA: boolean;
  transB: boolean;
  /** B's element type (default f32): an f16 B halves the bytes a variant streams. */
  bDtype?: 'f32' | 'f16';
  /** What the matmul computes from A as it reads it (default nothing): repeated per output tile, it can change the winner. */
  prologue?: 'norm' | 'swiglu';
  /** Whether A's and B's contiguous dimensions, offsets and strides are multiples of 4 (default true): the vec4 loads. */
  aligned?: boolean;
}

interface Geometry extends MatmulShape {
  strideA: number;
  strideB: number;
  /** Distance between stored rows of A, and (with swiglu) from a gate to its up. */
  ldA: number;
  upA: number;
}

function resolveShape(args: MatmulArgs): Geometry {
  const { a, b } = args;
  const transA = args.transA ?? false;
  const transB = args.transB ?? false;
  if (a.shape.length < 2 || b.shape.length < 2) {
    throw new Error(`matmul needs matrices, got ${shapeString(a)} and ${shapeString(b)}`);
  }
  const [ar, stored] = a.shape.slice(-2) as [number, number];
  if (args.swiglu && stored % 2 !== 0) throw new Error(`matmul: swiglu rows of ${shapeString(a)} are not gate|up pairs (odd width)`);
  const ac = args.swiglu ? stored / 2 : stored;
  const [br, bc] = b.shape.slice(-2) as [number, number];
  const M = transA ? ac : ar;
  const K = transA ? ar : ac;
  const Kb = transB ? bc : br;
  const N = transB ? br : bc;
  if (K !== Kb) {
    throw new Error(
      `matmul inner dimensions differ: ${shapeString(a)}${transA ? 'ᵀ' : ''} · ${shapeString(b)}${transB ? 'ᵀ' : ''} (${K} vs ${Kb})`,
    );
  }
  const batchA = a.size / (ar * stored) || 1;
  const batchB = b.size / (K * N) || 1;
  if (b.shape.length > 2 && batchB !== batchA) {
    throw new Error(`matmul batch sizes differ: ${shapeString(a)} and ${shapeString(b)}`);
  }
  if (a.dtype !== 'f32' || (b.dtype !== 'f32' && b.dtype !== 'f16')) {
    throw new Error(`matmul takes an f32 A and an f32 or f16 B, got ${shapeString(a)} and ${shapeString(b)}`);
  }
  return {
    batch: batchA,
    M,
    N,
    K,
    transA,
    transB,
    strideA: ar * stored,
    strideB: b.shape.length > 2 ? K * N : 0,
    ldA: stored,
    upA: ac,
  };
}

const ceil = (x: number, d: number) => Math.ceil(x / d);

/** Outputs per invocation along each axis in matmul_reg. */
const REG_TILE = 8;

interface Plan {
  kernel: KernelSpec;
  workgroups: readonly [number, number, number];
  /** Split-K's slices of K (1: K whole; see splitkSlices) and the elements each covers. */
  slices: number;
  kSlice: number;
}

function plan(variant: MatmulVariant, g: Geometry, subgroups: boolean, args: MatmulArgs): Plan {
  const defines = {
    TRANS_A: g.transA,
    TRANS_B: g.transB,
    B_F16: args.b.dtype === 'f16',
    BIAS_F16: args.bias?.dtype === 'f16',
    A_SWIGLU: args.swiglu ?? false,
    A_NORM: args.norm !== undefined,
    NORM_F16: args.norm?.weight.dtype === 'f16',
  };
  const whole = { slices: 1, kSlice: 0 };
  switch (variant) {
    case 'reg':
    case 'reg-wide':
    case 'reg-vec4': {
      const [wx, wy] = variant === 'reg-wide' ? [16, 16] : [8, 4];
      return {
        kernel: {
          shader: 'matmul',
          entry: 'matmul_reg',
          defines: { ...defines, VEC4: variant === 'reg-vec4', SUBGROUP: subgroups },
          constants: { WG_X: wx, WG_Y: wy },
        },
        workgroups: [ceil(g.N, REG_TILE * wx), ceil(g.M, REG_TILE * wy), g.batch] as const,
        ...whole,
      };
    }
    case 'tiled':
      return {
        kernel: { shader: 'matmul', entry: 'matmul_tiled', defines },
        workgroups: [ceil(g.N, 64), ceil(g.M, 64), g.batch] as const,
        ...whole,
      };
    case 'tiled-128':
      return {
        kernel: { shader: 'matmul', entry: 'matmul_big', defines: { ...defines, VEC4: quadsAligned(g, args), HALF_MATH: args.halfMath ?? false } },
        workgroups: [ceil(g.N, BIG_TILE), ceil(g.M, BIG_TILE), g.batch] as const,
        ...whole,
      };
    case 'gemv': {
      // x·Wᵀ with rows of A and B that start on 16 bytes reads vec4s along K, 4×4 outputs per invocation.
      const vec4 = rowsVec4(g, args);
      return {
        kernel: { shader: 'matmul', entry: 'matmul_gemv', defines: { ...defines, VEC4: vec4 }, constants: { WG_X: 64, WG_Y: 1 } },
        workgroups: [ceil(g.N, vec4 ? 256 : 64), ceil(g.M, 4), g.batch] as const,
        ...whole,
      };
    }
    case 'splitk':
    case 'splitk-sg': {
      // A workgroup per SPLITK_COLS columns × `rows` rows (the next power of two of M, at most 8).
      const rows = Math.min(8, 2 ** Math.ceil(Math.log2(g.M)));
      const subgroup = variant === 'splitk-sg';
      const slices = splitkSlices(g, args, rows);
      return {
        kernel: {
          shader: 'matmul',
          entry: 'matmul_splitk',
          defines: { ...defines, VEC4: rowsVec4(g, args), SUBGROUP: subgroup, SK_ROWS: rows, SK_SLICED: slices > 1 },
          constants: {
            SK_ROWS_U: rows,
            SK_VALUES: rows * SPLITK_COLS + (args.norm ? rows : 0),
            // Subgroups have at least 4 invocations: at most 16 of them in a workgroup of 64.
            SK_SLOTS: subgroup ? SPLITK_WG / 4 : SPLITK_WG,
          },
        },
        workgroups: [ceil(g.N, SPLITK_COLS), ceil(g.M, rows), slices > 1 ? slices : g.batch] as const,
        slices,
        kSlice: Math.ceil(g.K / slices / 4) * 4,
      };
    }
  }
}

/** The fewest elements of K a split-K slice covers: shorter, a workgroup's loads are mostly latency. */
export const SPLITK_SLICE_MIN_K = 1024;
/** Workgroups split-K slicing aims for: several per compute unit of a large GPU (an H100 has 132). */
const SPLITK_SLICE_WORKGROUPS = 1024;

/**
 * Slices of K for matmul_splitk: enough that the launch reaches SPLITK_SLICE_WORKGROUPS, each
 * at least SPLITK_SLICE_MIN_K long; 1 (K whole) with the norm prologue (a row's Σ A² needs all
 * of K) or a batch. Qwen2.5-0.5B's down projection at one row (K 4,864, N 896): 4 slices, 896
 * workgroups; its other projections (K 896) stay whole.
 */
export function splitkSlices(g: Pick<Geometry, 'M' | 'N' | 'K' | 'batch'>, args: Pick<MatmulArgs, 'norm'>, rows: number): number {
  if (args.norm || g.batch > 1) return 1;
  const launched = ceil(g.N, SPLITK_COLS) * ceil(g.M, rows);
  return Math.max(1, Math.min(Math.floor(g.K / SPLITK_SLICE_MIN_K), ceil(SPLITK_SLICE_WORKGROUPS, launched)));
}

/** Output columns per workgroup of matmul_splitk, and its invocations (SK_WG). */
export const SPLITK_COLS = 4;
const SPLITK_WG = 64;

/** Output rows and columns per workgroup of matmul_big (tiled-128). */
const BIG_TILE = 128;

/**
 * Whether matmul_big can read each operand as vec4s along its stored rows: the contiguous
 * dimension (K, or M with transA, for A; K with transB, else N, for B) and the offsets are
 * multiples of 4 (the batch strides then are too).
 */
function quadsAligned(g: Geometry, args: MatmulArgs): boolean {
  return [g.transA ? g.M : g.K, g.transB ? g.K : g.N, args.a.offset, args.b.offset].every((x) => x % 4 === 0);
}

/** x·Wᵀ whose rows of A and B all start on 16 bytes: the decode kernels read them as vec4s along K. */
function rowsVec4(g: Geometry, args: MatmulArgs): boolean {
  return g.transB && !g.transA && [g.K, args.a.offset, args.b.offset, g.strideA, g.strideB].every((x) => x % 4 === 0);
}

/** Whether A and B can be read as vec4: every row, column group and batch starts on 16 bytes. */
function vec4Aligned(g: Geometry, args: MatmulArgs): boolean {
  return [g.M, g.N, g.K, args.a.offset, args.b.offset, g.strideA, g.strideB].every((x) => x % 4 === 0);
}

/** C = alpha·op(A)·op(B) (+ bias) (+ beta·C), batched. Returns C. */
export function matmul(rt: Runtime, args: MatmulArgs): Tensor {
  const g = resolveShape(args);
  const outShape = [...args.a.shape.slice(0, -2), g.M, g.N];
  if (args.a.shape.length === 2 && args.b.shape.length > 2) outShape.unshift(...args.b.shape.slice(0, -2));
  const out = args.out ?? rt.empty(outShape);
  if (out.size !== g.batch * g.M * g.N) {
    throw new Error(`matmul output ${shapeString(out)} does not hold ${g.batch}×${g.M}×${g.N}`);
  }
  for (const [name, t] of [['a', args.a], ['b', args.b], ['bias', args.bias]] as const) {
    if (t && t.buffer === out.buffer) throw new Error(`matmul output shares a buffer with ${name} (WebGPU forbids it)`);
  }
  if (args.bias && args.bias.size !== g.N) throw new Error(`matmul bias ${shapeString(args.bias)} is not [${g.N}]`);
  const norm = args.norm;
  if (norm) {
    if (g.transA || args.swiglu) throw new Error('matmul: the RMSNorm prologue normalises rows of an untransposed, plain A');
    if (norm.weight.size !== g.K) throw new Error(`matmul norm weight ${shapeString(norm.weight)} is not [${g.K}]`);
    if (norm.weight.buffer === out.buffer) throw new Error('matmul output shares a buffer with the norm weight (WebGPU forbids it)');
  }
  if (out.dtype !== 'f32' || (args.bias && args.bias.dtype !== 'f32' && args.bias.dtype !== 'f16')) {
    throw new Error(`matmul writes f32 (out ${shapeString(out)}${args.bias ? `, bias ${shapeString(args.bias)}` : ''})`);
  }
  // halfMath runs tiled-128 whatever the tuning (and leaves no untuned class behind).
  if (args.halfMath) {
    if (!rt.ctx.features.has('shader-f16')) throw new Error('matmul halfMath needs a device with shader-f16');
    if (args.variant && args.variant !== 'tiled-128') throw new Error(`matmul halfMath runs tiled-128, not ${args.variant}`);
  }
  let variant = args.halfMath ? 'tiled-128' : (args.variant ?? matmulTuner(rt).choose(tunedShape(g, args)));
  if (variant === 'reg-vec4' && !vec4Aligned(g, args)) {
    if (args.variant) {
      throw new Error(
        `matmul variant reg-vec4 needs M, N, K and the offsets of a and b to be multiples of 4 ` +
          `(got ${g.M}×${g.K}×${g.N}, offsets ${args.a.offset} and ${args.b.offset})`,
      );
    }
    variant = 'reg';
  }
  if (variant === 'splitk-sg' && !rt.ctx.features.has('subgroups')) {
    throw new Error('matmul variant splitk-sg needs an adapter with subgroups');
  }
  // Past the 65,535 column groups of one dispatch dimension (a vocabulary over 262,140), a
  // chosen split-K runs as gemv; a forced one is refused by the dispatch.
  if (variant.startsWith('splitk') && !args.variant && Math.ceil(g.N / SPLITK_COLS) > rt.ctx.limits.maxComputeWorkgroupsPerDimension) {
    variant = 'gemv';
  }
  const { kernel, workgroups, slices, kSlice } = plan(variant, g, rt.subgroupMatmul, args);
  const params = new Params()
    .u32(g.M, g.N, g.K, g.batch)
    .u32(args.a.offset, args.b.offset, out.offset, args.bias?.offset ?? 0)
    .u32(g.strideA, g.strideB, g.M * g.N, args.bias ? 1 : 0)
    .f32(args.alpha ?? 1, args.beta ?? 0)
    .u32(g.ldA, g.upA)
    .f32(norm?.eps ?? 0)
    .u32(norm?.weight.offset ?? 0, kSlice, slices);
  if (!rt.isTracing) {
    rt.counters.matmulFlops += 2 * g.batch * g.M * g.N * g.K;
    rt.counters.matmulWeightBytes += (g.strideB ? g.batch : 1) * g.K * g.N * BYTES_PER_ELEMENT[args.b.dtype] * workgroups[1];
  }
  if (slices > 1) {
    // The slices' raw sums [slices, M, N], then their reduction into C.
    const part = rt.empty([slices * g.M * g.N]);
    rt.dispatch({ kernel, params, buffers: [args.a, args.b, null, null, null, part], workgroups, label: `matmul_${variant}` });
    rt.dispatch({
      kernel: { ...kernel, entry: 'matmul_splitk_reduce' },
      params,
      buffers: [null, null, out, args.bias ?? rt.placeholder, null, part],
      workgroups: [...grid(rt, g.M * g.N, 64), 1],
      label: 'matmul_splitk_reduce',
    });
    rt.release(part);
    return out;
  }
  rt.dispatch({
    kernel,
    params,
    buffers: [args.a, args.b, out, args.bias ?? rt.placeholder, ...(norm ? [norm.weight] : [])],
    workgroups,
    label: `matmul_${variant}`,
  });
  return out;
}

/** What the tuner sees of a call: its shape, B's dtype, its prologue and its alignment. */
function tunedShape(g: Geometry, args: MatmulArgs): MatmulShape {
  const { batch, M, N, K, transA, transB } = g;
  const prologue = args.norm ? 'norm' : args.swiglu ? 'swiglu' : undefined;
  const aligned = quadsAligned(g, args) && g.strideA % 4 === 0 && g.strideB % 4 === 0;
  return { batch, M, N, K, transA, transB, bDtype: args.b.dtype === 'f16' ? 'f16' : 'f32', prologue, aligned };
}

/**
 * Shapes fall into classes by transposes, the log2 size of M, N and K, B's dtype, the
 * prologue and alignment (the last three named only where they differ from f32, none, aligned).
 */
export function shapeClass(s: MatmulShape): string {
  const b = log2Class;
  const extra = `${s.bDtype === 'f16' ? '|f16' : ''}${s.prologue ? `|${s.prologue}` : ''}${s.aligned === false ? '|u' : ''}`;
  return `${s.transA ? 'T' : 'N'}${s.transB ? 'T' : 'N'}|m${b(s.M)}|n${b(s.N)}|k${b(s.K)}${extra}`;
}

/** A size's class: its log2, rounded up. */
const log2Class = (x: number) => Math.ceil(Math.log2(Math.max(1, x)));

const PROLOGUES = [undefined, 'norm', 'swiglu'] as const;

/**
 * shapeClass as a number (the same classes: a shape's sizes' log2 in 6 bits each, then its
 * flags), which a matmul computes without building a string.
 */
function shapeClassId(s: MatmulShape): number {
  const sizes = (log2Class(s.M) * 64 + log2Class(s.N)) * 64 + log2Class(s.K);
  const flags = (s.transA ? 8 : 0) + (s.transB ? 4 : 0) + (s.bDtype === 'f16' ? 2 : 0) + (s.aligned === false ? 1 : 0);
  return (sizes * 16 + flags) * PROLOGUES.length + PROLOGUES.indexOf(s.prologue);
}

/** The variant a shape runs before its class is tuned, on an adapter described by `ctx`. */
export function untunedVariant(s: MatmulShape, ctx: Pick<GpuContext, 'adapter' | 'features'>): MatmulVariant {
  const swiftshader = ctx.adapter.architecture === 'swiftshader';
  if (s.M <= 8) {
    // Decode steps of a few rows. On SwiftShader the vec4 gemv measured 1.5–8× faster than the
    // register-tiled kernels at M ≤ 8. A GPU needs the weights streamed by every compute unit:
    // split-K spreads each column's K over a workgroup (N = 896: 224 workgroups, gemv's 4).
    if (swiftshader) return 'gemv';
    return ctx.features.has('subgroups') ? 'splitk-sg' : 'splitk';
  }
  if (swiftshader) return 'reg';
  // 128×128 tiles where they still make enough workgroups to occupy a large GPU's compute
  // units (an H100 has 132); below that the 64×64 tiles' fourfold count wins.
  return s.batch * ceil(s.M, BIG_TILE) * ceil(s.N, BIG_TILE) >= BIG_MIN_WORKGROUPS ? 'tiled-128' : 'tiled';
}

/**
 * Below both, a matmul is left to the untuned plan: on a GPU it takes a few microseconds,
 * less than its dispatch, so no variant can gain what tuning it costs (a pipeline compile per
 * variant and timed runs at the run's start). A LoRA adapter's rank-r products and a small
 * model's decode steps were most of the classes a run tuned (176 for the tiny preset's LoRA
 * run over an f16 base, 3.4 minutes of its start on SwiftShader). A real model's layers are
 * above: Qwen2.5-0.5B's decode reads 3.2 MB per projection.
 */
const TUNED_MIN_FLOPS = 2 ** 25;
const TUNED_MIN_B_BYTES = 2 ** 20;

/** Whether a shape's class is worth measuring (see TUNED_MIN_FLOPS). */
export function worthTuning(s: MatmulShape): boolean {
  const bBytes = s.batch * s.N * s.K * (s.bDtype === 'f16' ? 2 : 4);
  return 2 * s.batch * s.M * s.N * s.K >= TUNED_MIN_FLOPS || bBytes >= TUNED_MIN_B_BYTES;
}

/** Workgroups of matmul_big below which the untuned plan keeps the 64×64 tiles. */
const BIG_MIN_WORKGROUPS = 64;

// v9: split-K timed up to 64 rows (rollout batches); v8: split-K slices a long K (v7: timed by GPU timestamps, outputs checked, dtype, prologue
// and alignment in the class; v6: tiled-128; v5: the split-K decode variants).
/** The tuning table's key prefix in the platform's cache (bumped when variants change meaning). */
export const CACHE_VERSION = 'matmul-autotune:v9';
/** The most elements a tuning operand holds: a larger N or M is tuned on a slice (a full LM head's B is 544 MB). */
const TUNE_ELEMENTS = 2 ** 22;
/** GPU time one timed sample spans at least: many quanta of a browser's rounded timestamps (100 µs in Chrome). */
const TIMED_SPAN_MS = 5;
const MAX_TIMED_REPS = 512;
/** Output entries a variant is checked at against float64 before it may win. */
const CHECKED_ENTRIES = 64;
/** Relative to Σ|op(A)||op(B)| over K: f32 rounding is far below it, a wrong kernel far above. */
const CHECK_TOLERANCE = 1e-3;

/** The matmul part of a run's kernel plan (see MatmulTuner.plan). */
export interface MatmulPlan {
  /** The untuned heuristic's inputs (see untunedVariant): the adapter's architecture and whether it has subgroups. */
  architecture: string;
  subgroups: boolean;
  /** Shape class → the variant its matmuls ran (measured, or replayed). */
  matmul: Record<string, MatmulVariant>;
  /** Classes that ran the heuristic's choice (not worth tuning, or tuning off). */
  untuned: string[];
  /** Classes a replay met that the plan it followed lacked: chosen and tuned on the replaying machine. */
  added?: string[];
}

/**
 * Measures the variants once per adapter and shape class and remembers the fastest in the
 * platform's persistent cache. Untuned classes use a heuristic until `tune` runs.
 */
export class MatmulTuner {
  private readonly table: Record<string, MatmulVariant>;
  private readonly cacheKey: string;
  /** Shape classes used without a measurement, with a representative shape each. */
  private readonly pending = new Map<string, MatmulShape>();
  /** Every shape class chosen for since the runtime started: what plan() records. */
  private readonly used = new Set<string>();
  /** A recorded plan this runtime follows instead of its own table (see replay). */
  private replayed: { plan: MatmulPlan; untuned: ReadonlySet<string>; ctx: Pick<GpuContext, 'adapter' | 'features'> } | null = null;
  /**
   * The choice for each class seen since the table or the pending list last changed (see
   * shapeClassId): a decode step's matmuls choose without building their class's name.
   */
  private readonly chosen = new Map<number, MatmulVariant>();
  forced: MatmulVariant | null = null;

  constructor(protected readonly rt: Runtime) {
    this.cacheKey = `${CACHE_VERSION}:${rt.ctx.adapter.key}`;
    let table: Record<string, MatmulVariant> = {};
    try {
      table = JSON.parse(rt.cacheGet(this.cacheKey) ?? '{}') as Record<string, MatmulVariant>;
    } catch {
      table = {};
    }
    this.table = table;
  }

  /** The tuned table (shape class → variant). */
  entries(): Readonly<Record<string, MatmulVariant>> {
    return this.table;
  }

  /** Whether this shape's class has a measured winner (now or from an earlier run). */
  isTuned(s: MatmulShape): boolean {
    return shapeClass(s) in this.table;
  }

  choose(s: MatmulShape): MatmulVariant {
    if (this.forced) return this.forced;
    const id = shapeClassId(s);
    const known = this.chosen.get(id);
    if (known) return known;
    const key = shapeClass(s);
    this.used.add(key);
    const replayed = this.replayed;
    if (replayed) {
      const variant = replayed.plan.matmul[key];
      if (variant) return variant;
      // The recorded run's heuristic, as its adapter made it (a GPU's plan on SwiftShader too).
      if (replayed.untuned.has(key)) return untunedVariant(s, replayed.ctx);
      // A class the recorded run never used: this machine's table and tuning decide (plan() names it).
    }
    const tuned = this.table[key];
    if (tuned) {
      this.chosen.set(id, tuned);
      return tuned;
    }
    // A runtime without tuning records nothing: no step or run start measures anything.
    if (this.rt.tuning && worthTuning(s) && !this.pending.has(key)) {
      const { batch, M, N, K, transA, transB, bDtype, prologue, aligned } = s;
      this.pending.set(key, { batch, M, N, K, transA, transB, bDtype, prologue, aligned });
    }
    const untuned = untunedVariant(s, this.rt.ctx);
    this.chosen.set(id, untuned);
    return untuned;
  }

  /**
   * Follows a recorded plan (see plan()) instead of this machine's table: its classes run the
   * recorded variants, and those it ran untuned the recorded adapter's heuristic, so that a
   * rerun's sums round as the recorded run's did. A class missing from it is chosen and
   * tuned as without a plan, and plan() lists it under `added`. Nothing is written to the
   * machine's cache but what is tuned here.
   */
  replay(plan: MatmulPlan): void {
    const features = new Set<OptionalFeature>(plan.subgroups ? ['subgroups'] : []);
    this.replayed = { plan, untuned: new Set(plan.untuned), ctx: { adapter: { ...this.rt.ctx.adapter, architecture: plan.architecture }, features } };
    // Choices remembered before the plan came are this machine's, not the plan's.
    this.chosen.clear();
  }

  /**
   * The variants this runtime's matmuls ran on, by shape class: measured (here or by an
   * earlier run on this adapter) or replayed in `matmul`, untuned in `untuned` with the
   * heuristic's inputs; with a replayed plan, all of its classes and those it lacked (`added`).
   */
  plan(): MatmulPlan {
    const base = this.replayed?.plan;
    const matmul: Record<string, MatmulVariant> = { ...base?.matmul };
    const untuned = new Set(base?.untuned);
    const added = new Set(base?.added);
    for (const key of [...this.used].sort()) {
      if (key in matmul || untuned.has(key)) continue;
      if (base) added.add(key);
      const tuned = this.table[key];
      if (tuned) matmul[key] = tuned;
      else untuned.add(key);
    }
    const ctx = this.replayed?.ctx ?? this.rt.ctx;
    return {
      architecture: ctx.adapter.architecture,
      subgroups: ctx.features.has('subgroups'),
      matmul,
      untuned: [...untuned].sort(),
      ...(added.size ? { added: [...added].sort() } : {}),
    };
  }

  /**
   * Tunes every shape class used since the last call that has no measurement yet (e.g.
   * after a model's first training step); returns how many were tuned.
   */
  async tunePending(runs = 3, onProgress: (done: number, total: number) => void = () => {}): Promise<number> {
    const shapes = [...this.pending.values()];
    this.pending.clear();
    // Classes left untuned are listed again when next used.
    this.chosen.clear();
    onProgress(0, shapes.length);
    for (let i = 0; i < shapes.length; i++) {
      await this.tune(shapes[i]!, runs);
      onProgress(i + 1, shapes.length);
    }
    return shapes.length;
  }

  /** Shape classes used since the last tunePending that have no measurement yet. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Variants refused by the last tune: their outputs differed from float64 at a checked entry. */
  refused: MatmulVariant[] = [];

  /**
   * Times every variant on this shape (random inputs; a large N or M on a slice of at most
   * TUNE_ELEMENTS per operand) and records the fastest for its class. Each variant's first timed
   * run (its output poisoned with NaN first) is checked against float64 at CHECKED_ENTRIES
   * entries, the corners among them: one that differs is refused, whatever its speed.
   * Timing: GPU timestamps where the adapter has them (repetitions in one pass spanning
   * TIMED_SPAN_MS, the median of `runs` such samples), else the wall clock around each run.
   * Returns the accepted variants' times in ms.
   */
  async tune(shape: MatmulShape, runs = 3): Promise<Partial<Record<MatmulVariant, number>>> {
    const rt = this.rt;
    const s = tuningSlice(shape);
    const inputs = tuningInputs(rt, s);
    const times: Partial<Record<MatmulVariant, number>> = {};
    this.refused = [];
    const subgroups = rt.ctx.features.has('subgroups');
    const candidates = tuneCandidates(s, subgroups);
    // Every candidate's pipeline compiles now, together, and before any clock starts.
    const g = resolveShape(inputs.args);
    for (const variant of candidates) rt.pipelines.prepare(plan(variant, g, subgroups, inputs.args).kernel);
    await rt.pipelines.ready();
    try {
      for (const variant of candidates) {
        const run = () => this.run(variant, inputs.args);
        fill(rt, inputs.args.out!, Number.NaN);
        // The first timed run is also the one checked.
        const first = await this.timeOnce(run);
        if (!matchesReference(await rt.readF32(inputs.args.out!), inputs.reference)) {
          this.refused.push(variant);
          continue;
        }
        times[variant] = await this.time(run, first, runs, Math.min(...Object.values(times)));
      }
    } finally {
      inputs.release();
    }
    const tried = Object.keys(times) as MatmulVariant[];
    // Nothing correct to choose from: the class stays untuned (its heuristic) rather than wrong.
    if (tried.length === 0) return times;
    const best = tried.reduce((x, y) => (times[y]! < times[x]! ? y : x));
    this.table[shapeClass(shape)] = best;
    this.chosen.clear();
    rt.cacheSet(this.cacheKey, JSON.stringify(this.table));
    return times;
  }

  /** Records one run of `variant` (a method, so that a test can plant a wrong variant). */
  protected run(variant: MatmulVariant, args: MatmulArgs): void {
    matmul(this.rt, { ...args, variant });
  }

  /** One run's time in ms: by GPU timestamps where the adapter has them, else by the wall clock to its completion. */
  private async timeOnce(run: () => void): Promise<{ ms: number; gpu: boolean }> {
    const rt = this.rt;
    const gpu = await rt.gpuTime(run);
    if (gpu !== null) return { ms: gpu, gpu: true };
    const t0 = performance.now();
    run();
    await rt.sync();
    return { ms: performance.now() - t0, gpu: false };
  }

  /**
   * The median time of `run` in ms (see tune), given its first run's. A variant already twice
   * as slow as `best` keeps that one sample: repeating a loser only lengthens tuning (on a CPU
   * device, a slow variant's repetitions were most of a run's start-up).
   */
  private async time(run: () => void, first: { ms: number; gpu: boolean }, runs: number, best: number): Promise<number> {
    if (first.ms > 2 * best) return first.ms;
    const median = (x: number[]) => x.sort((p, q) => p - q)[Math.floor(x.length / 2)]!;
    const samples: number[] = [];
    if (first.gpu) {
      // Enough repetitions in one pass that a sample spans TIMED_SPAN_MS; where a run alone
      // does, the first run is the first sample.
      const reps = Math.min(MAX_TIMED_REPS, Math.ceil(TIMED_SPAN_MS / Math.max(first.ms, 1e-3)));
      if (reps === 1) samples.push(first.ms);
      while (samples.length < runs) {
        samples.push((await this.rt.gpuTime(() => {
          for (let r = 0; r < reps; r++) run();
        }))! / reps);
      }
      return median(samples);
    }
    // Short kernels get more runs (up to ~30 ms of them): a millisecond is within the wall clock's noise.
    samples.push(first.ms);
    const n = Math.max(runs, Math.min(5 * runs, Math.ceil(30 / first.ms)));
    for (let i = 1; i < n; i++) samples.push((await this.timeOnce(run)).ms);
    return median(samples);
  }
}

/** The shape tuned for `s`: N, then M, cut so that no operand holds more than TUNE_ELEMENTS (multiples of 4 kept). */
function tuningSlice(s: MatmulShape): MatmulShape {
  const cut = (x: number, other: number) => {
    if (s.batch * x * other <= TUNE_ELEMENTS) return x;
    const y = Math.max(Math.min(x, 64), Math.floor(TUNE_ELEMENTS / (s.batch * other)));
    return x % 4 === 0 ? Math.max(4, y - (y % 4)) : y;
  };
  return { ...s, N: cut(s.N, s.K), M: cut(s.M, s.K) };
}

interface TuningInputs {
  args: MatmulArgs;
  reference: { index: number; value: number; scale: number }[];
  release(): void;
}

/**
 * Random inputs for a tuning shape, laid out as the calls of its class are (B in its dtype, A
 * as the prologue reads it, offset by one element where the class is unaligned), and float64
 * values of the product at sampled entries of the output.
 */
function tuningInputs(rt: Runtime, s: MatmulShape): TuningInputs {
  const r = rng((s.M * 31 + s.N) * 31 + s.K);
  const width = s.prologue === 'swiglu' ? 2 : 1;
  const [aRows, aCols] = s.transA ? [s.K, s.M * width] : [s.M, s.K * width];
  const [bRows, bCols] = s.transB ? [s.N, s.K] : [s.K, s.N];
  const skew = s.aligned === false ? 1 : 0;
  const aHost = Float32Array.from({ length: s.batch * aRows * aCols }, () => r() - 0.5);
  const bHost = Float32Array.from({ length: s.batch * bRows * bCols }, () => r() - 0.5);
  const wHost = Float32Array.from({ length: s.K }, () => 0.5 + r());
  const aBuf = rt.upload(padded(aHost, skew), [aHost.length + skew]);
  const a = view(aBuf, [s.batch, aRows, aCols], skew);
  let bBuf: Tensor;
  if (s.bDtype === 'f16') {
    const halves = f32ToHalves(bHost);
    bHost.set(halvesToF32(halves));
    const whole = new Uint16Array(Math.ceil((halves.length + skew) / 2) * 2);
    whole.set(halves, skew);
    bBuf = rt.upload(whole, [whole.length], 'f16');
  } else {
    bBuf = rt.upload(padded(bHost, skew), [bHost.length + skew]);
  }
  const b = view(bBuf, [s.batch, bRows, bCols], skew);
  const weight = s.prologue === 'norm' ? rt.upload(wHost, [s.K]) : null;
  const out = rt.empty([s.batch, s.M, s.N]);
  const eps = 1e-5;
  const opA = (bi: number, i: number, k: number): number => {
    const at = (row: number, col: number) => aHost[(bi * aRows + row) * aCols + col]!;
    if (s.prologue === 'swiglu') {
      const [g, u] = s.transA ? [at(k, i), at(k, s.M + i)] : [at(i, k), at(i, s.K + k)];
      return (g / (1 + Math.exp(-g))) * u;
    }
    if (s.prologue === 'norm') {
      let ss = 0;
      for (let kk = 0; kk < s.K; kk++) ss += at(i, kk) ** 2;
      return (at(i, k) / Math.sqrt(ss / s.K + eps)) * wHost[k]!;
    }
    return s.transA ? at(k, i) : at(i, k);
  };
  const opB = (bi: number, k: number, j: number) => bHost[bi * bRows * bCols + (s.transB ? j * bCols + k : k * bCols + j)]!;
  const picks: [number, number, number][] = [[0, 0, 0], [s.batch - 1, s.M - 1, s.N - 1], [0, s.M - 1, 0], [s.batch - 1, 0, s.N - 1]];
  while (picks.length < CHECKED_ENTRIES) picks.push([Math.floor(r() * s.batch), Math.floor(r() * s.M), Math.floor(r() * s.N)]);
  const reference = picks.map(([bi, i, j]) => {
    let value = 0;
    let scale = 0;
    for (let k = 0; k < s.K; k++) {
      const p = opA(bi, i, k) * opB(bi, k, j);
      value += p;
      scale += Math.abs(p);
    }
    return { index: (bi * s.M + i) * s.N + j, value, scale };
  });
  const args: MatmulArgs = {
    a, b, out, transA: s.transA, transB: s.transB,
    ...(s.prologue === 'swiglu' ? { swiglu: true } : {}),
    ...(weight ? { norm: { weight, eps } } : {}),
  };
  return { args, reference, release: () => rt.release(aBuf, bBuf, out, ...(weight ? [weight] : [])) };
}

function padded(x: Float32Array, skew: number): Float32Array {
  if (!skew) return x;
  const out = new Float32Array(x.length + skew);
  out.set(x, skew);
  return out;
}

/** Whether `got` holds the reference's values within CHECK_TOLERANCE of each entry's scale (NaN never does). */
function matchesReference(got: Float32Array, reference: TuningInputs['reference']): boolean {
  return reference.every((e) => Math.abs(got[e.index]! - e.value) <= CHECK_TOLERANCE * e.scale + 1e-30);
}

/**
 * The variants worth timing for a shape: gemv only up to GEMV_TUNE_MAX_ROWS, split-K up to
 * SPLITK_TUNE_MAX_ROWS, where they can win; reg-vec4 only where M, N, K and the offsets are
 * multiples of 4 (elsewhere it runs as reg); splitk-sg where the adapter has subgroups.
 */
function tuneCandidates(s: MatmulShape, subgroups: boolean): MatmulVariant[] {
  const aligned = s.M % 4 === 0 && s.N % 4 === 0 && s.K % 4 === 0 && s.aligned !== false;
  return MATMUL_VARIANTS.filter(
    (v) =>
      (v !== 'gemv' || s.M <= GEMV_TUNE_MAX_ROWS) &&
      (!v.startsWith('splitk') || s.M <= SPLITK_TUNE_MAX_ROWS) &&
      (v !== 'reg-vec4' || aligned) &&
      (v !== 'splitk-sg' || subgroups),
  );
}

/** gemv's workgroup covers 4 rows and reads the weights again for every 4: beyond a decode step of a few rows it only lengthens tuning. */
const GEMV_TUNE_MAX_ROWS = 16;

/**
 * Split-K reads the weights once per 8 rows, but spreads K over a workgroup per 4 columns. RL
 * decodes its rollouts in batches of 8-64 rows, where a 64×64 tile leaves a large GPU idle: on
 * an H200 a 32-row Qwen2.5-0.5B step gave its 896-wide projections 14 tiled workgroups, 62% of
 * the step's GPU time (bench/results/h200-2026-11-28). The tuner weighs the two there.
 */
const SPLITK_TUNE_MAX_ROWS = 64;

const tuners = new WeakMap<Runtime, MatmulTuner>();

export function matmulTuner(rt: Runtime): MatmulTuner {
  let t = tuners.get(rt);
  if (!t) {
    t = new MatmulTuner(rt);
    tuners.set(rt, t);
  }
  return t;
}
