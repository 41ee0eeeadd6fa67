/**
 * Float64 CPU references for the kernels, used by tests and by the in-browser self-check.
 * Plain loops, written for obviousness rather than speed.
 */
export interface MatmulRefArgs {
  a: ArrayLike<number>;
  b: ArrayLike<number>;
  batch: number;
  M: number;
  N: number;
  K: number;
  transA?: boolean;
  transB?: boolean;
  /** b is one matrix shared by every batch entry. */
  broadcastB?: boolean;
  bias?: ArrayLike<number>;
  alpha?: number;
  beta?: number;
  c?: ArrayLike<number>;
}

export function matmulRef(x: MatmulRefArgs): Float64Array {
  const { M, N, K, batch } = x;
  const alpha = x.alpha ?? 1;
  const beta = x.beta ?? 0;
  const out = new Float64Array(batch * M * N);
  for (let bi = 0; bi < batch; bi++) {
    const aBase = bi * M * K;
    const bBase = x.broadcastB ? 0 : bi * K * N;
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) {
          const av = x.a[aBase + (x.transA ? k * M + m : m * K + k)]!;
          const bv = x.b[bBase + (x.transB ? n * K + k : k * N + n)]!;
          s += av * bv;
        }
        const o = bi * M * N + m * N + n;
        let v = alpha * s;
        if (x.bias) v += x.bias[n]!;
        if (beta !== 0) v += beta * x.c![o]!;
        out[o] = v;
      }
    }
  }
  return out;
}

/** The worst element of a comparison: its error relative to its row's scale, and where. */
export interface RowError {
  error: number;
  at: number;
}

/**
 * Largest error of `got` against `ref`, each element relative to its row's scale: the
 * largest magnitude in that row of `scaleOf` (by default `ref`). f32 rounding in a sum
 * follows the magnitude of its terms, not of the result, so for sums that can cancel pass
 * the same computation over absolute values (Σ|a||b| for a matmul). NaN counts as Infinity.
 */
export function rowRelativeError(
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  rowLength: number,
  scaleOf: ArrayLike<number> = ref,
): RowError {
  if (got.length !== ref.length) return { error: Number.POSITIVE_INFINITY, at: -1 };
  let worst: RowError = { error: 0, at: -1 };
  for (let start = 0; start < ref.length; start += rowLength) {
    const end = Math.min(ref.length, start + rowLength);
    let scale = 0;
    for (let i = start; i < end; i++) scale = Math.max(scale, Math.abs(scaleOf[i]!));
    scale = Math.max(scale, 1e-30);
    for (let i = start; i < end; i++) {
      const err = Math.abs(got[i]! - ref[i]!) / scale;
      const e = Number.isNaN(err) ? Number.POSITIVE_INFINITY : err;
      if (e > worst.error || worst.at < 0) worst = { error: e, at: i };
    }
  }
  return worst;
}
