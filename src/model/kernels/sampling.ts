import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';
import { checkSampling, type SamplingSettings } from '../generateSettings';

/** Per row in `out`: token id, log q(token) under the sampling distribution, log p(token) untempered. */
export const SAMPLE_FIELDS = 3;

/**
 * Samples one token per row of `logits` [rows, vocab]. `streams` [rows] (u32) names each
 * row's random stream and `step` its position in it, so that a row draws the same numbers
 * whatever else is in the batch. Writes SAMPLE_FIELDS u32 per row into `out`, and with
 * `feed` each token also at feed[stream] (the next decode step's input, on the GPU).
 */
export function sampleTokens(
  rt: Runtime,
  t: { logits: Tensor; streams: Tensor<'u32'>; out: Tensor<'u32'>; feed?: Tensor<'u32'> },
  s: SamplingSettings,
  step: number,
): void {
  checkSampling(s);
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  if (t.streams.size < rows) throw new Error(`sample: ${t.streams.size} streams for ${rows} rows`);
  if (t.out.size < rows * SAMPLE_FIELDS) throw new Error(`sample: output holds ${t.out.size}, need ${rows}×${SAMPLE_FIELDS}`);
  rt.dispatch({
    // A workgroup of 256 per row where barriers are cheap (radix select); elsewhere one
    // invocation per row, 64 rows to a workgroup (bisection).
    kernel: { shader: 'sampling', entry: 'sample', defines: { SERIAL: rt.serialRows } },
    params: new Params()
      .u32(rows, vocab, t.logits.offset, t.streams.offset)
      .u32(s.topK, s.seed, step, t.out.offset)
      .f32(s.temperature > 0 ? 1 / s.temperature : 0, s.topP)
      .u32(t.feed?.offset ?? 0, t.feed ? 1 : 0),
    buffers: [t.logits, t.streams, t.out, t.feed ?? rt.placeholder],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
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
