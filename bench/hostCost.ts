/**
 * The host's share of a decode step: the wall time the host spends recording one step (the
 * decoder's dispatches and the sampler's), submitting it and starting the read of its tokens,
 * divided by the step's dispatches. Not GPU time: the queue is drained before each measured
 * step and the clock stops at the submit, so what is timed is JavaScript and the WebGPU
 * implementation's own calls on the host, the same code on SwiftShader as on a GPU.
 *
 * Two ways of making the step: replayed from the plan its first step captured (the decoder's
 * way, Runtime.capture), and recorded through the model's code every token (the way before
 * plans, kept as the decoder's `replay` off): the ratio of the two is the plan's saving.
 */
import type { Runtime } from '../src/gpu/runtime';
import { view } from '../src/gpu/tensor';
import type { LlamaConfig, ParamSpec } from '../src/model/config';
import { initialLora, type LoraConfig } from '../src/model/lora';
import { Decoder } from '../src/model/decoder';
import { DEFAULT_GENERATE } from '../src/model/generateSettings';
import { sampleTokens, SAMPLE_FIELDS } from '../src/model/kernels/sampling';
import { Transformer } from '../src/model/transformer';
import { rng, uniform } from '../src/util/random';

export interface HostCost {
  rows: number;
  /** The step replayed from a captured plan (else recorded through the model's code). */
  replay: boolean;
  /** Dispatches one decode step records (the decoder's and the sampler's). */
  dispatches: number;
  /** Steps timed (after the warm-up). */
  steps: number;
  /** Mean over the timed steps of the host time per step, µs. */
  usPerStep: number;
  /** usPerStep over the dispatches. */
  usPerDispatch: number;
  /** Of usPerDispatch, recording the dispatches (the model's and the runtime's JavaScript). */
  usRecordPerDispatch: number;
  /** Of usPerDispatch, encoding and submitting them and starting the read (mostly the WebGPU implementation's calls). */
  usSubmitPerDispatch: number;
}

export interface HostCostOptions {
  /** Steps timed (default 50). */
  steps?: number;
  /** Untimed steps first: pipelines compiled, bind groups made, the JIT warm (default 5). */
  warmup?: number;
  /** Prompt tokens per row (default 64). */
  prompt?: number;
  /**
   * Cache slots per prefill (default 512, the Solver's token budget on a pretrained model,
   * PRETRAINED_MAX_NEW_TOKENS): the decoder is prefilled again, untimed, when its steps have
   * used them, so the timed steps are a rollout's, the captures its attention's schedules
   * need (a few per prefill) among them.
   */
  slots?: number;
  /**
   * The clock, in ms (default the wall clock): a thread's CPU time (bench/threadClock.ts)
   * leaves out what the OS gave other threads meanwhile, which on a CPU implementation of
   * WebGPU includes the submitted work itself. Its own cost (two readings back to back) is
   * taken off each reading. Steps are averaged (not their median): a clock that advances in
   * ticks, as a thread's CPU time does, is right on average only.
   */
  clock?: () => number;
  /** Replay the step from its captured plan (default true, as generation does). */
  replay?: boolean;
}

/**
 * The host time per dispatch of one decode step of `rows` rows of `model`, sampled at the
 * default settings with the tokens fed on the GPU, as generation's pipelined path records it.
 */
export async function measureHostCost(model: Transformer, rows: number, options: HostCostOptions = {}): Promise<HostCost> {
  const { steps = 50, warmup = 5, prompt = 64, slots = 512, clock = () => performance.now(), replay = true } = options;
  if (!Number.isInteger(rows) || rows < 1) throw new Error(`host cost: rows must be an integer ≥ 1 (got ${rows})`);
  if (!Number.isInteger(steps) || steps < 1) throw new Error(`host cost: steps must be an integer ≥ 1 (got ${steps})`);
  const rt = model.rt;
  if (!Number.isInteger(prompt) || prompt < 1 || !Number.isInteger(slots) || slots <= prompt) throw new Error(`host cost: a prompt of ${prompt} tokens needs more than that many slots (got ${slots})`);
  const decoder = new Decoder(model, rows, slots, true, 'f32', replay);
  const streams = rt.upload(Uint32Array.from({ length: rows }, (_, b) => b), [rows], 'u32');
  const out = rt.empty([rows * SAMPLE_FIELDS], 'u32', 'sample.out');
  const all = Array.from({ length: rows }, (_, b) => b);
  const prompts = all.map((b) => Array.from({ length: prompt }, (_, t) => (31 * b + 7 * t + 3) % model.config.vocab_size));
  let k = 0;
  let slotsLeft = 0;
  try {
    const cost = clockCost(clock);
    let recordMs = 0;
    let submitMs = 0;
    let dispatches = 0;
    for (let i = 0; i < warmup + steps; i++) {
      if (slotsLeft === 0) {
        // A fresh prefill, untimed, when the cache is full.
        const logits = decoder.prefill(prompts);
        sampleTokens(rt, { logits, streams, out, feed: decoder.feed }, DEFAULT_GENERATE, k++);
        slotsLeft = decoder.T - prompt;
      }
      await rt.sync();
      const before = rt.counters.dispatches;
      const t0 = clock();
      const logits = decoder.step(all);
      sampleTokens(rt, { logits, streams, out, feed: decoder.feed }, DEFAULT_GENERATE, k++);
      const t1 = clock();
      const read = rt.readLater(view(out, [rows * SAMPLE_FIELDS]));
      const t2 = clock();
      slotsLeft--;
      if (i >= warmup) {
        recordMs += t1 - t0 - cost;
        submitMs += t2 - t1 - cost;
        dispatches = rt.counters.dispatches - before;
      }
      await read();
    }
    const us = (ms: number) => (1000 * ms) / steps;
    const usPerStep = us(recordMs + submitMs);
    return {
      rows, replay, dispatches, steps, usPerStep, usPerDispatch: usPerStep / dispatches,
      usRecordPerDispatch: us(recordMs) / dispatches, usSubmitPerDispatch: us(submitMs) / dispatches,
    };
  } finally {
    decoder.destroy();
    rt.release(streams, out);
  }
}

/** ms between two readings of `clock` back to back (the mean of 200). */
function clockCost(clock: () => number): number {
  const t0 = clock();
  for (let i = 0; i < 200; i++) clock();
  return (clock() - t0) / 201;
}

/**
 * A model of `config` with random weights (norms at 1), in f16 as the GPU report loads its
 * bases: drawn tensor by tensor (never the whole set in host memory), in buffers of at most
 * 300 MiB (Qwen2.5-0.5B's embedding alone is 260), which SwiftShader's memory can place, and
 * within the adapter's limits.
 */
export function randomModel(rt: Runtime, config: LlamaConfig, dtype: 'f32' | 'f16' = 'f16'): Transformer {
  const r = rng(1);
  const weights = (s: ParamSpec) => (s.name.endsWith('norm.weight') ? new Float32Array(s.size).fill(1) : uniform(s.size, r, 0.02));
  const { maxBufferSize, maxStorageBufferBindingSize } = rt.ctx.limits;
  return Transformer.load(rt, config, weights, { dtype, maxBufferBytes: Math.min(300 * 2 ** 20, maxBufferSize, maxStorageBufferBindingSize) });
}

/**
 * measureHostCost with each of `options` in turn, on one model of `config` with random weights
 * (and `lora`'s fresh adapter, kept apart from the f16 base as rollouts run) made for them and
 * destroyed after, the pool's freed buffers with it (the next shape's caches are other sizes:
 * an adapter with little memory, Dawn's null backend, holds one shape at a time).
 */
export async function hostCostPerDispatch(rt: Runtime, config: LlamaConfig, rows: number, options: HostCostOptions[], lora?: LoraConfig): Promise<HostCost[]> {
  const model = randomModel(rt, config);
  try {
    if (lora) model.enableLora(lora, initialLora(config, lora, 1));
    const out: HostCost[] = [];
    for (const o of options) out.push(await measureHostCost(model, rows, o));
    return out;
  } finally {
    model.destroy();
    rt.pool.trim();
  }
}
