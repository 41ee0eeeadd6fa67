/**
 * A matmul case on random inputs against float64: the kernel tests' check (matmulTestUtils.ts)
 * and the GPU report's on-card check of the variant only a GPU with subgroup matrices runs
 * (bench/mmaCheck.ts).
 */
import { assertClose, poisoned, uploadHalf } from '../checks';
import { matmulRef } from '../reference';
import type { Runtime } from '../runtime';
import { view } from '../tensor';
import { rng, uniform } from '../../util/random';
import { matmul } from './matmul';
import { rowMagnitude } from './autotune';
import type { MatmulShape, MatmulVariant } from './matmulVariants';

export interface Case extends Pick<MatmulShape, 'batch' | 'M' | 'N' | 'K' | 'transA' | 'transB'> {
  broadcastB?: boolean;
  bias?: boolean;
  beta?: number;
  alpha?: number;
  /** B and the bias stored as f16 (at an offset that is odd where the variant allows it). */
  half?: boolean;
  /** A stored as fused gate|up rows, op(A) = silu(gate)·up. */
  swiglu?: boolean;
  /** op(A) = RMSNorm(A)·w (w f16 too with `half`). */
  norm?: boolean;
  /** Products allowed in f16 (MatmulArgs.halfMath): checked within its bound, 5·2^-11 of the scale. */
  halfMath?: boolean;
  /** A's rows from 2^-40 to 2^20 (rowMagnitude), past f16's range either way, with MatmulArgs.scaleRows. */
  scaleRows?: boolean;
  /** A LoRA term of this width (MatmulArgs.lora; one batch): u [M, R] and b [N, R] at offsets (see loraTerm), scale 0.75. */
  lora?: number;
}

const EPS = 1e-5;

/** x · rstd · w per row of [rows, cols] (rstd = 1/sqrt(mean x² + eps)), in float64. */
function rmsnormRows(x: ArrayLike<number>, w: ArrayLike<number>, cols: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / cols; r++) {
    let ss = 0;
    for (let j = 0; j < cols; j++) ss += x[r * cols + j]! ** 2;
    const rstd = 1 / Math.sqrt(ss / cols + EPS);
    for (let j = 0; j < cols; j++) out[r * cols + j] = x[r * cols + j]! * rstd * w[j]!;
  }
  return out;
}

/** silu(gate)·up of each fused row [gate | up] (width 2·cols), in float64. */
function swigluRows(gu: Float32Array, cols: number): Float64Array {
  const rows = gu.length / (2 * cols);
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < cols; j++) {
      const g = gu[r * 2 * cols + j]!;
      out[r * cols + j] = (g / (1 + Math.exp(-g))) * gu[r * 2 * cols + cols + j]!;
    }
  }
  return out;
}

/** reg-vec4 runs only on dimensions that are multiples of 4: its cases round up to them. */
const fit = (variant: MatmulVariant, n: number) => (variant === 'reg-vec4' ? Math.ceil(n / 4) * 4 : n);

/**
 * Runs one case of a variant on `rt` with random inputs from `seed` (B poisoned around its
 * values, the output poisoned unless it accumulates) against float64; throws, naming the case,
 * the seed and the worst element, where they differ.
 */
export async function checkMatmul(rt: Runtime, variant: MatmulVariant, shape: Case, seed: number): Promise<void> {
  const c = { ...shape, M: fit(variant, shape.M), N: fit(variant, shape.N), K: fit(variant, shape.K) };
  const r = rng(seed);
  const w = c.swiglu ? 2 : 1;
  const stored = uniform(c.batch * c.M * c.K * w, r);
  // Row by row of op(A) as stored (scaleRows takes a plain, untransposed A).
  if (c.scaleRows) stored.forEach((v, i) => (stored[i] = v * rowMagnitude(Math.floor(i / c.K))));
  let a: ArrayLike<number> = c.swiglu ? swigluRows(stored, c.transA ? c.M : c.K) : stored;
  // A norm weight around 1 with a spread, as trained ones are.
  let normW = c.norm ? uniform(c.K, r).map((v) => 1 + v) : undefined;
  const bBatch = c.broadcastB ? 1 : c.batch;
  let b = uniform(bBatch * c.K * c.N, r);
  let bias = c.bias ? uniform(c.N, r) : undefined;
  const prior = c.beta ? uniform(c.batch * c.M * c.N, r) : undefined;
  const aT = rt.upload(stored, [c.batch, ...(c.transA ? [c.K, c.M * w] : [c.M, c.K * w])]);
  const bDims = c.transB ? [c.N, c.K] : [c.K, c.N];
  const bShape = c.broadcastB ? bDims : [c.batch, ...bDims];
  let bT, biasT, normT;
  if (c.half) {
    // vec4 loads need B on a 4-element boundary, mma's block loads on 8 (16 bytes); the scalar paths get an odd one.
    const half = uploadHalf(rt, b, bShape, variant === 'mma' ? 8 : ['reg-vec4', 'tiled-128', 'tiled-128-splitk', 'gemv', 'splitk', 'splitk-sg'].includes(variant) ? 4 : 3);
    [bT, b] = [half.tensor, half.values];
    if (bias) {
      const h = uploadHalf(rt, bias, [c.N], 1);
      [biasT, bias] = [h.tensor, h.values];
    }
    if (normW) {
      const h = uploadHalf(rt, normW, [c.K], 3);
      [normT, normW] = [h.tensor, h.values];
    }
  } else {
    normT = normW ? rt.upload(normW, [c.K]) : undefined;
    bT = rt.upload(b, bShape);
    biasT = bias ? rt.upload(bias, [c.N]) : undefined;
  }
  if (normW) a = rmsnormRows(a, normW, c.K);
  const out = prior ? rt.upload(prior, [c.batch, c.M, c.N]) : poisoned(rt, [c.batch, c.M, c.N]);
  const lora = c.lora ? loraTerm(rt, c.M, c.N, c.lora, r) : undefined;
  matmul(rt, { a: aT, b: bT, out, bias: biasT, transA: c.transA, transB: c.transB, alpha: c.alpha, beta: c.beta, swiglu: c.swiglu, norm: normT && { weight: normT, eps: EPS }, halfMath: c.halfMath, scaleRows: c.scaleRows, lora: lora?.args, variant });
  const got = await rt.read(out);
  const ref = matmulRef({ a, b, ...c, bias, c: prior });
  const abs = (x: Float32Array | undefined) => x?.map(Math.abs);
  const scale = matmulRef({ a: Float64Array.from(a, Math.abs), b: abs(b)!, ...c, alpha: Math.abs(c.alpha ?? 1), beta: Math.abs(c.beta ?? 0), bias: abs(bias), c: abs(prior) });
  if (lora) {
    const term = { M: c.M, N: c.N, K: c.lora!, batch: 1, transA: false, transB: true, alpha: lora.args.scale };
    const [add, addScale] = [matmulRef({ ...term, a: lora.u, b: lora.b }), matmulRef({ ...term, a: abs(lora.u)!, b: abs(lora.b)! })];
    for (let i = 0; i < ref.length; i++) {
      ref[i]! += add[i]!;
      scale[i]! += addScale[i]!;
    }
    rt.release(...lora.tensors);
  }
  const path = rt.subgroupMatmul ? ' (subgroup rows)' : '';
  assertClose(`${variant}${path} ${JSON.stringify(c)} seed ${seed}`, got, ref, c.N, c.halfMath ? 5 * 2 ** -11 + 1e-5 : 1e-5, scale);
  rt.release(aT, bT, out, ...(biasT ? [biasT] : []), ...(normT ? [normT] : []));
}

/** A case's LoRA term: u [M, R] and b [N, R] as views past NaNs, at an odd offset where R is odd (the scalar loads), else at 4 (the vec4 loads). */
function loraTerm(rt: Runtime, M: number, N: number, R: number, r: () => number) {
  const [u, b] = [uniform(M * R, r), uniform(N * R, r)];
  const at = R % 4 === 0 ? 4 : 3;
  const [uBuf, bBuf] = [u, b].map((x) => rt.upload(Float32Array.from({ length: at + x.length }, (_, i) => (i < at ? Number.NaN : x[i - at]!)), [at + x.length]));
  return {
    u, b, tensors: [uBuf!, bBuf!],
    args: { u: view(uBuf!, [M, R], at), b: view(bBuf!, [N, R], at), scale: 0.75 },
  };
}

/**
 * The cases of matmul_mma (x·Wᵀ and x·W over an f16 W, products in f16), for a device with
 * subgroup matrices: its tests, and the GPU report, which runs them on the card. Rows that fill
 * no block (1, 5, 70), N past the last workgroup's four blocks (80), a long K cut in slices
 * (4,864, the down projection's), each prologue, the epilogue's bias, alpha and beta, a batch;
 * then W not transposed (the backward pass's dX = dY·W) and rows scaled past f16's range
 * (two cases with neither bias nor beta, whose values would hide a row flushed to zero).
 */
export const MMA_CASES: readonly Case[] = [
  { batch: 1, M: 32, N: 128, K: 896, transA: false, transB: true, half: true, halfMath: true },
  { batch: 1, M: 1, N: 64, K: 64, transA: false, transB: true, half: true, halfMath: true },
  { batch: 1, M: 5, N: 80, K: 48, transA: false, transB: true, half: true, halfMath: true, bias: true },
  { batch: 1, M: 70, N: 96, K: 256, transA: false, transB: true, half: true, halfMath: true, beta: 1, alpha: 0.5 },
  { batch: 1, M: 32, N: 64, K: 4864, transA: false, transB: true, half: true, halfMath: true, beta: 1 },
  { batch: 2, M: 17, N: 48, K: 128, transA: false, transB: true, half: true, halfMath: true, bias: true },
  { batch: 1, M: 32, N: 64, K: 896, transA: false, transB: true, half: true, halfMath: true, swiglu: true, beta: 1 },
  { batch: 1, M: 9, N: 112, K: 896, transA: false, transB: true, half: true, halfMath: true, norm: true },
  { batch: 1, M: 32, N: 64, K: 2048, transA: false, transB: true, half: true, halfMath: true, norm: true, bias: true },
  { batch: 1, M: 5, N: 80, K: 48, transA: false, transB: false, half: true, halfMath: true, scaleRows: true, bias: true },
  { batch: 1, M: 70, N: 96, K: 256, transA: false, transB: false, half: true, halfMath: true, scaleRows: true, bias: true, beta: 1, alpha: 0.5 },
  { batch: 2, M: 17, N: 48, K: 128, transA: false, transB: false, half: true, halfMath: true, scaleRows: true, bias: true },
  { batch: 1, M: 32, N: 64, K: 4864, transA: false, transB: false, half: true, halfMath: true, scaleRows: true },
  { batch: 1, M: 9, N: 112, K: 896, transA: false, transB: true, half: true, halfMath: true, scaleRows: true },
  { batch: 1, M: 5, N: 80, K: 48, transA: false, transB: true, half: true, halfMath: true, lora: 5, bias: true },
  { batch: 1, M: 32, N: 64, K: 4864, transA: false, transB: true, half: true, halfMath: true, lora: 48, beta: 1 },
];
