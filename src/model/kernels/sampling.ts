import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

/** How the next token is drawn from the logits (see shaders/sampling.wgsl). */
export interface SamplingSettings {
  /** 0 = greedy (arg-max). */
  temperature: number;
  /** Keep the k most likely tokens (ties at the k-th kept); 0 = all. */
  topK: number;
  /** Keep the smallest top set with at least this probability; 1 = all. */
  topP: number;
  /** Seeds every row's random stream. */
  seed: number;
}

/** Per row in `out`: token id, log q(token) under the sampling distribution, log p(token) untempered. */
export const SAMPLE_FIELDS = 3;

/** Invocations per row on adapters with cheap barriers; 1 where each costs a coroutine switch. */
const WORKGROUP = 64;

export function checkSampling(s: SamplingSettings): void {
  if (!(s.temperature >= 0) || !Number.isFinite(s.temperature)) throw new Error(`temperature must be ≥ 0 (got ${s.temperature})`);
  if (!Number.isInteger(s.topK) || s.topK < 0) throw new Error(`topK must be an integer ≥ 0 (got ${s.topK})`);
  if (!(s.topP > 0 && s.topP <= 1)) throw new Error(`topP must be in (0, 1] (got ${s.topP})`);
  if (!Number.isInteger(s.seed) || s.seed < 0 || s.seed > 0xffffffff) throw new Error(`seed must be an integer in 0..2³²−1 (got ${s.seed})`);
}

/**
 * Samples one token per row of `logits` [rows, vocab]. `streams` [rows] (u32) names each
 * row's random stream and `step` its position in it, so that a row draws the same numbers
 * whatever else is in the batch. Writes SAMPLE_FIELDS u32 per row into `out`.
 */
export function sampleTokens(
  rt: Runtime,
  t: { logits: Tensor; streams: Tensor<'u32'>; out: Tensor<'u32'> },
  s: SamplingSettings,
  step: number,
): void {
  checkSampling(s);
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  if (t.streams.size < rows) throw new Error(`sample: ${t.streams.size} streams for ${rows} rows`);
  if (t.out.size < rows * SAMPLE_FIELDS) throw new Error(`sample: output holds ${t.out.size}, need ${rows}×${SAMPLE_FIELDS}`);
  const wg = rt.serialRows ? 1 : WORKGROUP;
  rt.dispatch({
    kernel: { shader: 'sampling', entry: 'sample', constants: { WG: wg } },
    params: new Params()
      .u32(rows, vocab, t.logits.offset, t.streams.offset)
      .u32(s.topK, s.seed, step, t.out.offset)
      .f32(s.temperature > 0 ? 1 / s.temperature : 0, s.topP)
      .u32(0, 0),
    buffers: [t.logits.buffer, t.streams.buffer, t.out.buffer],
    workgroups: grid(rt, rows, 1),
    label: 'sample',
  });
}

/** One row's outcome, decoded from the kernel's u32 triple. */
export interface Sampled {
  token: number;
  logq: number;
  logp: number;
}

export function unpackSamples(raw: Uint32Array, rows: number): Sampled[] {
  const f = new Float32Array(raw.buffer, raw.byteOffset, raw.length);
  return Array.from({ length: rows }, (_, i) => ({
    token: raw[i * SAMPLE_FIELDS]!,
    logq: f[i * SAMPLE_FIELDS + 1]!,
    logp: f[i * SAMPLE_FIELDS + 2]!,
  }));
}
