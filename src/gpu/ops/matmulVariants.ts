/**
 * The matmul op's variants: the checks of a call, each variant's kernel and launch (plan), and
 * the dispatch of a call once its variant is chosen. Which variant that is, the op (matmul.ts)
 * asks the autotuner (autotune.ts), which runs the variants from here to time them.
 */
import type { GpuContext, SubgroupMatrixShape } from '../device';
import type { Runtime } from '../runtime';
import { Params } from '../params';
import type { KernelSpec } from '../pipelines';
import type { Tensor } from '../tensor';
import { BYTES_PER_ELEMENT, shapeString } from '../tensor';
import { grid } from './common';

/**
 * Kernel variants; see shaders/matmul.wgsl. splitk-sg reduces with subgroup operations and
 * exists only where the adapter has them (see availableVariants). tiled-128 is the large-tile
 * kernel for training-sized shapes on GPUs (128×128 per workgroup, double-buffered);
 * tiled-128-splitk the same with a long K cut into slices where its tiles are too few to fill
 * a GPU (see bigSlices). rows is the rollout-batch kernel (9-64 rows): all of a workgroup's
 * rows over one staged tile of the weights, which split-K reads again for every 8 rows. mma
 * multiplies on the GPU's matrix units (subgroup matrices) where the device has them, for
 * x·Wᵀ or x·W over an f16 W with f16 products allowed (see mmaTakes).
 */
export const MATMUL_VARIANTS = ['reg', 'reg-wide', 'reg-vec4', 'tiled', 'tiled-128', 'tiled-128-splitk', 'gemv', 'splitk', 'splitk-sg', 'rows', 'mma'] as const;
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
   * Products may be computed in f16, on a device with shader-f16 (refused elsewhere): the
   * variants that can do so do, the others compute in f32 as ever. tiled-128 and
   * tiled-128-splitk round op(A) and op(B) to half and add each product to an f32 sum; split-K
   * over an f16 B read as vec4s (x·Wᵀ, the decode projections) multiplies B's halves as stored
   * by A rounded to half, four products summed in f16, then in f32. Values past ±65,504 overflow;
   * error at most 5·2^-11 of Σ|op(A)||op(B)|. An option a caller asks for, never a tuning choice.
   */
  halfMath?: boolean;
  /**
   * With halfMath: A's rows may lie outside f16's range (gradients, whose small values half
   * would flush to zero). mma scales each row by a power of two before rounding it to half and
   * unscales its results (exact), so the bound above holds at any scale; the variants that
   * cannot scale compute such a call in f32. A plain, untransposed A only.
   */
  scaleRows?: boolean;
  /**
   * Adds scale · u·bᵀ to every output as it is stored (u [M, R], b [N, R], f32, one batch): a
   * LoRA adapter's up-projection over its down-projection u = x·Aᵀ, computed before. Inference
   * over an adapter kept apart from its base then costs one dispatch a projection more than the
   * base's, not two. Not part of the tuned shape: R products an output against K.
   */
  lora?: { u: Tensor; b: Tensor; scale: number };
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
  /** Whether the products may be computed in f16 (MatmulArgs.halfMath; default false). */
  half?: boolean;
  /** With half, whether A's rows must be scaled to f16's range first (MatmulArgs.scaleRows; default false). */
  scaled?: boolean;
}

interface Geometry extends MatmulShape {
  strideA: number;
  strideB: number;
  /** Distance between stored rows of A, and (with swiglu) from a gate to its up. */
  ldA: number;
  upA: number;
}

/** A call's sizes and strides, checked (exported for the tuner, which plans on its inputs). */
export function resolveShape(args: MatmulArgs): Geometry {
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

/**
 * A variant's kernel and launch for a call (exported for the tuner, which compiles every
 * candidate's before timing); `mma` is the device's subgroup matrices, which only mma uses.
 */
export function plan(variant: MatmulVariant, g: Geometry, subgroups: boolean, args: MatmulArgs, mma: SubgroupMatrixShape | null = null): Plan {
  const defines = {
    TRANS_A: g.transA,
    TRANS_B: g.transB,
    B_F16: args.b.dtype === 'f16',
    BIAS_F16: args.bias?.dtype === 'f16',
    A_SWIGLU: args.swiglu ?? false,
    A_NORM: args.norm !== undefined,
    NORM_F16: args.norm?.weight.dtype === 'f16',
    ...loraDefines(args),
  };
  const whole = { slices: 1, kSlice: 0 };
  // f16 products where the variant needs no scaling of A's rows (only mma scales them).
  const halfMath = (args.halfMath ?? false) && !args.scaleRows;
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
    case 'tiled-128-splitk': {
      const slices = variant === 'tiled-128-splitk' ? bigSlices(g, args.norm !== undefined) : 1;
      return {
        kernel: {
          shader: 'matmul',
          entry: 'matmul_big',
          defines: { ...defines, VEC4: quadsAligned(g, args), HALF_MATH: halfMath, SK_SLICED: slices > 1 },
        },
        workgroups: [ceil(g.N, BIG_TILE), ceil(g.M, BIG_TILE), slices > 1 ? slices : g.batch] as const,
        slices,
        // Whole K steps of matmul_big, so that every slice but the last is read as vec4s.
        kSlice: slices > 1 ? Math.ceil(g.K / slices / BIG_K) * BIG_K : 0,
      };
    }
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
      const vec4 = rowsVec4(g, args);
      return {
        kernel: {
          shader: 'matmul',
          entry: 'matmul_splitk',
          defines: { ...defines, VEC4: vec4, SUBGROUP: subgroup, SK_ROWS: rows, SK_SLICED: slices > 1, SK_HALF: halfMath && vec4 && args.b.dtype === 'f16' },
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
    case 'mma': {
      if (!mma) throw new Error('matmul variant mma needs a device with f16 subgroup matrices');
      const slices = mmaSlices(g, mma);
      return {
        kernel: {
          shader: 'matmul',
          entry: 'matmul_mma',
          defines: {
            ...defines, MMA: true, MMA_EMULATED: mma.emulated ?? false, MMA_M: mma.M, MMA_N: mma.N, MMA_K: mma.K, MMA_TM: MMA_ROWS / mma.M,
            A_SCALE: args.scaleRows ?? false, SK_SLICED: slices > 1,
          },
          constants: { MM_WG: MMA_SUBGROUPS * mma.subgroupMaxSize },
        },
        workgroups: [ceil(g.N, MMA_SUBGROUPS * mma.N), ceil(g.M, MMA_ROWS), slices > 1 ? slices : g.batch] as const,
        slices,
        // Whole staging steps of matmul_mma.
        kSlice: slices > 1 ? Math.ceil(g.K / slices / MMA_K_STEP) * MMA_K_STEP : 0,
      };
    }
    case 'rows': {
      // A workgroup per ROWS_COLS columns × `rows` rows (the next power of two of M, 8 to 64).
      const rows = Math.min(64, Math.max(8, 2 ** Math.ceil(Math.log2(g.M))));
      const slices = kSlices(g, args.norm !== undefined, ceil(g.N, ROWS_COLS) * ceil(g.M, rows), ROWS_SLICE_MIN_K, ROWS_SLICE_WORKGROUPS);
      return {
        kernel: {
          shader: 'matmul',
          entry: 'matmul_rows',
          defines: { ...defines, RW_RPI: rows / 8, SK_SLICED: slices > 1 },
          constants: { RW_ROWS_U: rows, RW_RPI_U: rows / 8 },
        },
        workgroups: [ceil(g.N, ROWS_COLS), ceil(g.M, rows), slices > 1 ? slices : g.batch] as const,
        slices,
        // Whole K steps of matmul_rows.
        kSlice: slices > 1 ? Math.ceil(g.K / slices / ROWS_K) * ROWS_K : 0,
      };
    }
  }
}

/** The LoRA term's defines: a row's length in the elements it is read as, vec4s where R and both offsets are multiples of 4. */
function loraDefines(args: MatmulArgs): Record<string, number | boolean> {
  const lora = args.lora;
  if (!lora) return {};
  const R = lora.u.shape.at(-1)!;
  const vec4 = [R, lora.u.offset, lora.b.offset].every((x) => x % 4 === 0);
  return { LORA_W: vec4 ? R / 4 : R, LORA_VEC4: vec4 };
}

/** Rows of C a workgroup of matmul_mma computes (MM_ROWS), its multiplying subgroups (MM_SG, one column block of the configuration's N each) and the elements of K it stages a step (MM_KT). */
const MMA_ROWS = 32;
const MMA_SUBGROUPS = 4;
const MMA_K_STEP = 64;
/** The fewest elements of K a slice of matmul_mma covers, and the workgroups its slicing aims for (two per compute unit of an H100). */
const MMA_SLICE_MIN_K = 128;
const MMA_SLICE_WORKGROUPS = 264;

/**
 * Slices of K for matmul_mma, as for the other sliced kernels, the norm prologue included: each
 * workgroup sums its rows' Σ A² over all of K before it stages its slice. Qwen2.5-0.5B at 32
 * rows (16×16×16 matrices): the down projection (K 4,864 over 14 column blocks) 19 slices, the
 * fused q|k|v (K 896, 18 blocks) 7, the LM head (2,374 blocks) 1.
 */
export function mmaSlices(g: Pick<Geometry, 'M' | 'N' | 'K' | 'batch'>, mma: SubgroupMatrixShape): number {
  return kSlices(g, false, ceil(g.N, MMA_SUBGROUPS * mma.N) * ceil(g.M, MMA_ROWS), MMA_SLICE_MIN_K, MMA_SLICE_WORKGROUPS);
}

/**
 * Whether matmul_mma can compute a shape on these subgroup matrices: x·Wᵀ (A as stored, W
 * [N, K]) or x·W (W [K, N]) over an f16 W with f16 products allowed (halfMath: the activations
 * are rounded to half as they are staged), rows scaled only without a prologue, whole blocks
 * (N a multiple of the configuration's N, K of its K), 16-byte aligned block loads (W's row
 * length a multiple of 8, the offsets aligned).
 */
export function mmaFits(s: MatmulShape, mma: SubgroupMatrixShape): boolean {
  return (
    (s.half ?? false) && s.bDtype === 'f16' && !s.transA && s.aligned !== false && !(s.scaled && s.prologue) &&
    s.N % mma.N === 0 && s.K % mma.K === 0 && (s.transB ? s.K : s.N) % 8 === 0
  );
}

/** mmaFits for a call (its tuned shape), with W's offset and batch stride whole blocks of 8 halves (16 bytes). */
function mmaTakes(shape: MatmulShape, g: Geometry, args: MatmulArgs, rt: Runtime): boolean {
  const mma = rt.subgroupMatrix;
  return (
    mma !== null && mmaFits(shape, mma) &&
    args.b.offset % 8 === 0 && g.strideB % 8 === 0
  );
}

/** Output columns per workgroup of matmul_rows (RW_COLS) and the elements of K it stages a step (RW_K). */
const ROWS_COLS = 32;
const ROWS_K = 32;
/** The fewest elements of K a slice of matmul_rows covers, and the workgroups its slicing aims for (four per compute unit of an H100). */
const ROWS_SLICE_MIN_K = 256;
const ROWS_SLICE_WORKGROUPS = 528;

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
  return kSlices(g, args.norm !== undefined, ceil(g.N, SPLITK_COLS) * ceil(g.M, rows), SPLITK_SLICE_MIN_K, SPLITK_SLICE_WORKGROUPS);
}

/**
 * Slices of K that bring a launch of `launched` workgroups to `target`, each at least `minK`
 * long; 1 with the norm prologue (a row's Σ A² needs all of K) or a batch (wid.z is the slice).
 */
function kSlices(g: Pick<Geometry, 'K' | 'batch'>, norm: boolean, launched: number, minK: number, target: number): number {
  if (norm || g.batch > 1) return 1;
  return Math.max(1, Math.min(Math.floor(g.K / minK), ceil(target, launched)));
}

/** Output columns per workgroup of matmul_splitk, and its invocations (SK_WG). */
export const SPLITK_COLS = 4;
const SPLITK_WG = 64;

/** Output rows and columns per workgroup of matmul_big (tiled-128). */
const BIG_TILE = 128;

/** Elements of K matmul_big stages a step (its BIG_K). */
const BIG_K = 8;
/** The fewest elements of K a slice of tiled-128-splitk covers: 64 of matmul_big's K steps. */
export const BIG_SLICE_MIN_K = 512;
/** Workgroups tiled-128-splitk aims for: two per compute unit of a large GPU (an H100 has 132). */
const BIG_SLICE_WORKGROUPS = 264;

/**
 * Slices of K for tiled-128-splitk: enough that the launch reaches BIG_SLICE_WORKGROUPS, each at
 * least BIG_SLICE_MIN_K long; 1 (K whole, as tiled-128) with the norm prologue or a batch, as
 * splitkSlices. Qwen2.5-0.5B's LoRA step at 1,024 tokens: the down projection (K 4,864 on 8×7
 * tiles) and the backward of the fused gate|up (K 9,728) and of the LM head (K 151,936) 5
 * slices each, 280 workgroups where K whole launches 56.
 */
export function bigSlices(g: Pick<Geometry, 'M' | 'N' | 'K' | 'batch'>, norm: boolean): number {
  return kSlices(g, norm, ceil(g.N, BIG_TILE) * ceil(g.M, BIG_TILE), BIG_SLICE_MIN_K, BIG_SLICE_WORKGROUPS);
}

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

/**
 * C = alpha·op(A)·op(B) (+ bias) (+ beta·C), batched, by the variant `args` forces or else the
 * one `choose` gives for the call's shape (a forced variant the call cannot take is refused;
 * a chosen one falls back to one it can). Returns C.
 */
export function runMatmul(rt: Runtime, args: MatmulArgs, choose: (shape: MatmulShape) => MatmulVariant): Tensor {
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
  if (args.halfMath && !rt.ctx.features.has('shader-f16')) throw new Error('matmul halfMath needs a device with shader-f16');
  if (args.scaleRows && (g.transA || args.swiglu || norm)) throw new Error('matmul scaleRows scales the rows of a plain, untransposed A');
  const lora = args.lora;
  if (lora) checkLora(lora, g, out);
  const shape = tunedShape(g, args);
  let variant = args.variant ?? choose(shape);
  if (variant === 'reg-vec4' && !vec4Aligned(g, args)) {
    if (args.variant) {
      throw new Error(
        `matmul variant reg-vec4 needs M, N, K and the offsets of a and b to be multiples of 4 ` +
          `(got ${g.M}×${g.K}×${g.N}, offsets ${args.a.offset} and ${args.b.offset})`,
      );
    }
    variant = 'reg';
  }
  if (variant === 'mma' && !mmaTakes(shape, g, args, rt)) {
    if (args.variant) {
      throw new Error(
        `matmul variant mma needs f16 subgroup matrices and x·Wᵀ or x·W over an f16 W with halfMath, whole blocks and aligned offsets ` +
          `(got ${g.M}×${g.K}×${g.N}${g.transA ? ', A transposed' : ''}${args.halfMath ? '' : ', no halfMath'}, W ${args.b.dtype} at offset ${args.b.offset})`,
      );
    }
    variant = untunedVariant(shape, rt.ctx);
  }
  if (variant === 'splitk-sg' && !rt.ctx.features.has('subgroups')) {
    throw new Error('matmul variant splitk-sg needs an adapter with subgroups');
  }
  // Past the 65,535 column groups of one dispatch dimension (a vocabulary over 262,140), a
  // chosen split-K runs as gemv; a forced one is refused by the dispatch.
  if (variant.startsWith('splitk') && !args.variant && Math.ceil(g.N / SPLITK_COLS) > rt.ctx.limits.maxComputeWorkgroupsPerDimension) {
    variant = 'gemv';
  }
  const { kernel, workgroups, slices, kSlice } = plan(variant, g, rt.subgroupMatmul, args, rt.subgroupMatrix);
  const params = new Params()
    .u32(g.M, g.N, g.K, g.batch)
    .u32(args.a.offset, args.b.offset, out.offset, args.bias?.offset ?? 0)
    .u32(g.strideA, g.strideB, g.M * g.N, args.bias ? 1 : 0)
    .f32(args.alpha ?? 1, args.beta ?? 0)
    .u32(g.ldA, g.upA)
    .f32(norm?.eps ?? 0)
    .u32(norm?.weight.offset ?? 0, kSlice, slices)
    .u32(lora?.u.offset ?? 0, lora?.b.offset ?? 0)
    .f32(lora?.scale ?? 0);
  const loraBuffers = lora ? [lora.u, lora.b] : [];
  if (!rt.isTracing) {
    rt.counters.matmulFlops += 2 * g.batch * g.M * g.N * (g.K + (lora?.u.shape.at(-1) ?? 0));
    rt.counters.matmulWeightBytes += (g.strideB ? g.batch : 1) * g.K * g.N * BYTES_PER_ELEMENT[args.b.dtype] * workgroups[1];
  }
  if (slices > 1) {
    // The slices' raw sums [slices, M, N], then their reduction into C.
    const part = rt.empty([slices * g.M * g.N]);
    // The norm's weight where a sliced kernel normalises (matmul_mma: each slice sums its rows over all of K).
    rt.dispatch({ kernel, params, buffers: [args.a, args.b, null, null, norm?.weight ?? null, part], workgroups, label: `matmul_${variant}` });
    rt.dispatch({
      kernel: { ...kernel, entry: 'matmul_splitk_reduce' },
      params,
      buffers: [null, null, out, args.bias ?? rt.placeholder, null, part, ...loraBuffers],
      workgroups: [...grid(rt, g.M * g.N, 64), 1],
      label: 'matmul_splitk_reduce',
    });
    rt.release(part);
    return out;
  }
  rt.dispatch({
    kernel,
    params,
    buffers: [args.a, args.b, out, args.bias ?? rt.placeholder, norm?.weight ?? null, ...(lora ? [null, ...loraBuffers] : [])],
    workgroups,
    label: `matmul_${variant}`,
  });
  return out;
}

/** Refuses a LoRA term (MatmulArgs.lora) that does not fit the call's output. */
function checkLora(lora: NonNullable<MatmulArgs['lora']>, g: Geometry, out: Tensor): void {
  const { u, b } = lora;
  const R = u.shape.at(-1)!;
  if (g.batch !== 1) throw new Error('matmul: the LoRA term adds to one batch');
  if (u.shape.length !== 2 || u.shape[0] !== g.M || b.shape.length !== 2 || b.shape[0] !== g.N || b.shape[1] !== R) {
    throw new Error(`matmul LoRA term: u ${shapeString(u)} and b ${shapeString(b)} are not [${g.M}, R] and [${g.N}, R]`);
  }
  if (u.dtype !== 'f32' || b.dtype !== 'f32') throw new Error(`matmul LoRA term takes f32 (u ${shapeString(u)}, b ${shapeString(b)})`);
  if (u.buffer === out.buffer || b.buffer === out.buffer) throw new Error('matmul output shares a buffer with its LoRA term (WebGPU forbids it)');
}

/** What the tuner sees of a call: its shape, B's dtype, its prologue and its alignment. */
function tunedShape(g: Geometry, args: MatmulArgs): MatmulShape {
  const { batch, M, N, K, transA, transB } = g;
  const prologue = args.norm ? 'norm' : args.swiglu ? 'swiglu' : undefined;
  const aligned = quadsAligned(g, args) && g.strideA % 4 === 0 && g.strideB % 4 === 0;
  const half = args.halfMath ?? false;
  return { batch, M, N, K, transA, transB, bDtype: args.b.dtype === 'f16' ? 'f16' : 'f32', prologue, aligned, half, ...(half && args.scaleRows ? { scaled: true } : {}) };
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

/** Workgroups of matmul_big below which the untuned plan keeps the 64×64 tiles. */
const BIG_MIN_WORKGROUPS = 64;
