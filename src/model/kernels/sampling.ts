import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';
import { checkSampling, type SamplingSettings } from '../generateSettings';

/** Per row in `out`: token id, log q(token) under the sampling distribution, log p(token) untempered. */
export const SAMPLE_FIELDS = 3;

/** Vocabulary ids per workgroup of the two-level sampler's first pass (shaders/sampling.wgsl CHUNK). */
export const SAMPLE_CHUNK = 2048;

interface SampleTensors {
  logits: Tensor;
  streams: Tensor<'u32'>;
  out: Tensor<'u32'>;
  feed?: Tensor<'u32'>;
}

/** What every layout of the sampler is dispatched with. */
interface SampleCall {
  t: SampleTensors;
  params: Params;
  rows: number;
  vocab: number;
}

const kernel = (entry: string, serial: boolean) => ({ shader: 'sampling', entry, defines: { SERIAL: serial } });
const bound = (t: SampleTensors, rt: Runtime) => [t.logits, t.streams, t.out, t.feed ?? rt.placeholder];

/**
 * The sampler's layouts (shaders/sampling.wgsl), one definition and one random stream:
 * - serial: one invocation per row, 64 rows to a workgroup (bisection; CPU adapters, where a
 *   barrier costs a coroutine switch per invocation);
 * - workgroup: a workgroup of 256 per row (radix select for top-k and top-p);
 * - twoLevel: a workgroup per 2,048 ids of each row, then a workgroup per row combining them
 *   (greedy and plain temperature; a Qwen-sized vocabulary at one row: 75 + 1 workgroups
 *   instead of 1).
 */
const SAMPLERS = {
  serial(rt: Runtime, c: SampleCall): void {
    rt.dispatch({ kernel: kernel('sample', true), params: c.params, buffers: bound(c.t, rt), workgroups: grid(rt, c.rows, 64), label: 'sample' });
  },
  workgroup(rt: Runtime, c: SampleCall): void {
    rt.dispatch({ kernel: kernel('sample', false), params: c.params, buffers: bound(c.t, rt), workgroups: grid(rt, c.rows, 1), label: 'sample' });
  },
  twoLevel(rt: Runtime, c: SampleCall): void {
    const chunks = Math.ceil(c.vocab / SAMPLE_CHUNK);
    // Per chunk: its max, its mass relative to that max, its first arg-max id.
    const part = rt.empty([c.rows * chunks * 3]);
    rt.dispatch({
      kernel: kernel('sample_chunks', false),
      params: c.params,
      buffers: [c.t.logits, null, null, null, part],
      workgroups: grid(rt, c.rows * chunks, 1),
      label: 'sample_chunks',
    });
    rt.dispatch({ kernel: kernel('sample_combine', false), params: c.params, buffers: [...bound(c.t, rt), part], workgroups: grid(rt, c.rows, 1), label: 'sample_combine' });
    rt.release(part);
  },
} satisfies Record<string, (rt: Runtime, c: SampleCall) => void>;

export type SamplerLayout = keyof typeof SAMPLERS;

/**
 * The layout for these settings: serial where the runtime keeps rows to one invocation;
 * on GPUs two levels where the vocabulary spans several chunks and nothing is cut. Top-k and
 * top-p keep one workgroup a row: their radix select needs a histogram of the whole row per
 * byte, which two levels would make four more pairs of dispatches each.
 */
export function samplerLayout(rt: Runtime, s: SamplingSettings, vocab: number): SamplerLayout {
  if (rt.serialRows) return 'serial';
  const cuts = s.temperature > 0 && ((s.topK > 0 && s.topK < vocab) || s.topP < 1);
  return !cuts && vocab > SAMPLE_CHUNK ? 'twoLevel' : 'workgroup';
}

/**
 * Samples one token per row of `logits` [rows, vocab]. `streams` [rows] (u32) names each
 * row's random stream and `step` its position in it, so that a row draws the same numbers
 * whatever else is in the batch. Writes SAMPLE_FIELDS u32 per row into `out`, and with
 * `feed` each token also at feed[stream] (the next decode step's input, on the GPU).
 */
export function sampleTokens(rt: Runtime, t: SampleTensors, s: SamplingSettings, step: number): void {
  checkSampling(s);
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  if (t.streams.size < rows) throw new Error(`sample: ${t.streams.size} streams for ${rows} rows`);
  if (t.out.size < rows * SAMPLE_FIELDS) throw new Error(`sample: output holds ${t.out.size}, need ${rows}×${SAMPLE_FIELDS}`);
  const params = new Params()
    .u32(rows, vocab, t.logits.offset, t.streams.offset)
    .u32(s.topK, s.seed, step, t.out.offset)
    .f32(s.temperature > 0 ? 1 / s.temperature : 0, s.topP)
    .u32(t.feed?.offset ?? 0, t.feed ? 1 : 0);
  SAMPLERS[samplerLayout(rt, s, vocab)](rt, { t, params, rows, vocab });
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
