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
