/**
 * Batched generation on the GPU: prefill, then cached decode steps of one token per running
 * row, sampled on the GPU. Each step reads back only the chosen ids and their two
 * log-probabilities (3 words per running row), never the logits; the host decodes text,
 * watches for EOS, stop strings and the token limit, and drops finished rows from the next
 * step it records.
 *
 * The host never stalls the queue: the sampler writes each token where the next step's
 * embedding reads it, and the host records and submits up to `stepsInFlight` steps before it
 * reads a step's tokens (one submit per step, its read mapped while later steps run). A row
 * that ended is learnt of late, so it runs up to that many steps more; those tokens are
 * discarded, and the tokens kept are those the synchronous schedule gives (every row's
 * computation is its own: its sampling stream, its cache rows, its matmul rows).
 */
import { view, type Tensor } from '../gpu/tensor';
import type { PendingRead, Runtime } from '../gpu/runtime';
import { stopTokenIds } from './config';
import { Decoder, distinctRows } from './decoder';
import { findStop, IncrementalText } from './detokenize';
import { checkGenerateOptions, DEFAULT_GENERATE, type GenerateOptions } from './generateSettings';
import { sampleTokens, SAMPLE_FIELDS, unpackSamples, type Sampled } from './kernels/sampling';
import { checkGenerationFits, checkKvCache, type KvDtype } from './memory';
import type { Tokenizer } from './tokenizer';
import type { Transformer } from './transformer';
import { maxOf } from '../util/stats';

export type FinishReason = 'eos' | 'stop' | 'length';

export interface GeneratedRow {
  promptIds: number[];
  /** Every sampled token, a final EOS included. */
  completionIds: number[];
  /** The completion decoded (without EOS), ending with the stop string that ended it. */
  text: string;
  /** log q(token) under the distribution it was drawn from (temperature, top-k, top-p); 0 when greedy. */
  logprobs: number[];
  /** log p(token) under the model at the sampling temperature (softmax(z / T), not truncated; untempered when greedy): the policy-gradient ratio's denominator. */
  modelLogprobs: number[];
  finishReason: FinishReason;
}

export interface GenerateTiming {
  prefillMs: number;
  decodeMs: number;
  sampleMs: number;
  readbackMs: number;
}

export interface GenerateStats {
  promptTokens: number;
  newTokens: number;
  /** Decode steps after the prefill. */
  steps: number;
  ms: number;
  timing?: GenerateTiming;
}

export interface GenerateResult {
  rows: GeneratedRow[];
  stats: GenerateStats;
}

/** Each row's text so far, after every step. */
export interface GenerateProgress {
  step: number;
  texts: string[];
  finished: boolean[];
}

/** Cache slots come in multiples of this, so that calls with similar lengths reuse one cache. */
export const SLOT_GRANULE = 32;
/** Decode steps recorded ahead of the host's reads (GenerateOptions.stepsInFlight). */
const STEPS_IN_FLIGHT = 2;

/** A step's samples being read: its index, the batch rows it sampled (in order) and the read. */
interface InFlight {
  k: number;
  rows: number[];
  read: PendingRead<'u32'>;
}

class Row {
  readonly completion: number[] = [];
  readonly logq: number[] = [];
  readonly logp: number[] = [];
  readonly text: IncrementalText;
  finish: FinishReason | null = null;
  /** Where a stop string ended in the streamed text. */
  private stopEnd = -1;

  constructor(
    readonly prompt: number[],
    private readonly tokenizer: Tokenizer,
    private readonly o: GenerateOptions,
    private readonly eos: ReadonlySet<number>,
  ) {
    this.text = new IncrementalText(tokenizer);
  }

  add(s: Sampled): void {
    const { o, eos } = this;
    this.completion.push(s.token);
    this.logq.push(s.logq);
    this.logp.push(s.logp);
    if (eos.has(s.token)) {
      this.finish = 'eos';
      return;
    }
    const added = this.text.push(s.token);
    if (added && o.stop.length) {
      this.stopEnd = findStop(this.text.text, added.length, o.stop);
      if (this.stopEnd >= 0) this.finish = 'stop';
    }
    if (!this.finish && this.completion.length >= o.maxNewTokens) this.finish = 'length';
  }

  get streamed(): string {
    return this.stopEnd >= 0 ? this.text.text.slice(0, this.stopEnd) : this.text.text;
  }

  result(): GeneratedRow {
    const ids = this.finish === 'eos' ? this.completion.slice(0, -1) : this.completion;
    let text = this.tokenizer.decode(ids);
    if (this.finish === 'stop') {
      // Found again in the whole text, which a tokenizer may decode differently from its pieces.
      const end = findStop(text, text.length, this.o.stop);
      if (end >= 0) text = text.slice(0, end);
    }
    return {
      promptIds: this.prompt,
      completionIds: this.completion,
      text,
      logprobs: this.logq,
      modelLogprobs: this.logp,
      finishReason: this.finish ?? 'length',
    };
  }
}

/** Generation with one model: keeps its KV cache and step buffers for the next call of the same shape. */
export class Generator {
  private held: { decoder: Decoder; streams: Tensor<'u32'>; out: Tensor<'u32'> } | null = null;

  constructor(
    readonly model: Transformer,
    readonly tokenizer: Tokenizer,
  ) {}

  private get rt(): Runtime {
    return this.model.rt;
  }

  /** The decoder for B rows of T slots: the held one when it matches, else a fresh one. */
  private buffers(B: number, T: number, useCache: boolean, kvDtype: KvDtype, replay: boolean) {
    const h = this.held;
    const d = h?.decoder;
    if (h && d && d.B === B && d.T === T && d.useCache === useCache && d.kvDtype === kvDtype && d.replay === replay) return h;
    this.release();
    const rt = this.rt;
    this.held = {
      decoder: new Decoder(this.model, B, T, useCache, kvDtype, replay),
      streams: rt.empty([B], 'u32', 'sample.streams'),
      out: rt.empty([B * SAMPLE_FIELDS], 'u32', 'sample.out'),
    };
    return this.held;
  }

  /**
   * Completes every prompt (text, framed as in training: BOS then its tokens; or token ids
   * as they are). `onToken` sees every row's text after each step.
   */
  async generate(
    prompts: readonly (string | readonly number[])[],
    options: Partial<GenerateOptions> = {},
    onToken?: (progress: GenerateProgress) => void,
  ): Promise<GenerateResult> {
    const o: GenerateOptions = { ...DEFAULT_GENERATE, ...options };
    checkGenerateOptions(o);
    if (prompts.length === 0) throw new Error('no prompts to complete');
    const c = this.model.config;
    const ids = prompts.map((p) => (typeof p === 'string' ? this.tokenizer.encodePrompt(p) : [...p]));
    ids.forEach((p, i) => {
      if (p.length === 0) throw new Error(`prompt ${i} has no tokens`);
      const bad = p.find((t) => !Number.isInteger(t) || t < 0 || t >= c.vocab_size);
      if (bad !== undefined) throw new Error(`prompt ${i}: token ${bad} is outside the vocabulary (0..${c.vocab_size - 1})`);
    });
    const B = ids.length;
    const P = maxOf(ids, (p) => p.length);
    const kvDtype = o.kvCache ?? 'f32';
    checkKvCache(c, kvDtype);
    const useCache = o.useCache ?? true;
    // With the cache, rows sharing a prompt share its prefill (Decoder.prefill): only the distinct ones are computed.
    const prefillRows = useCache ? distinctRows(ids).unique.length : B;
    const needed = checkGenerationFits(c, B, P, o.maxNewTokens, this.rt.ctx.limits.maxStorageBufferBindingSize, kvDtype, prefillRows).slots;
    const T = Math.min(Math.ceil(needed / SLOT_GRANULE) * SLOT_GRANULE, c.max_position_embeddings);
    const { decoder, streams, out } = this.buffers(B, T, useCache, kvDtype, o.replay ?? true);
    const eos = new Set(o.eosTokenIds ?? stopTokenIds(this.model.config, this.tokenizer.specials.eos));
    const rows = ids.map((p) => new Row(p, this.tokenizer, o, eos));
    const rt = this.rt;
    const t0 = performance.now();
    const timing: GenerateTiming | undefined = o.timing ? { prefillMs: 0, decodeMs: 0, sampleMs: 0, readbackMs: 0 } : undefined;
    /** Adds the time since the last mark to `phase` (after syncing the GPU) when timing. */
    let mark = performance.now();
    const phase = async (key: keyof GenerateTiming) => {
      if (!timing) return;
      await rt.sync();
      const now = performance.now();
      timing[key] += now - mark;
      mark = now;
    };

    // Timing syncs between phases, and recomputing needs each token on the host: both read
    // every step before recording the next.
    const ahead = o.timing || !useCache ? 0 : (o.stepsInFlight ?? STEPS_IN_FLIGHT);
    const feed = useCache ? decoder.feed : undefined;
    const inFlight: InFlight[] = [];
    let streamRows = 0;
    /**
     * Each row samples from its own stream (its batch index), rewritten only when rows ended;
     * written before a step is recorded, so that the step and its sampling share one submit.
     */
    const setStreams = (stepRows: number[]) => {
      if (stepRows.length !== streamRows) rt.write(view(streams, [stepRows.length]), Uint32Array.from(stepRows));
      streamRows = stepRows.length;
    };
    /** Samples step k's logits for `stepRows`, feeding the tokens to the next step, and starts reading them. */
    const sample = async (k: number, stepRows: number[], logits: Tensor) => {
      const n = stepRows.length;
      const picked = view(out, [n * SAMPLE_FIELDS]);
      sampleTokens(rt, { logits, streams: view(streams, [n]), out: picked, feed }, o, k);
      await phase('sampleMs');
      inFlight.push({ k, rows: stepRows, read: rt.readLater(picked) });
    };

    let stepRows = rows.map((_, b) => b);
    setStreams(stepRows);
    const first = decoder.prefill(ids);
    await phase('prefillMs');
    await sample(0, stepRows, first);
    let k = 0;
    let steps = 0;
    for (;;) {
      // The next step: the rows not known to have ended, while the token limit allows one more.
      const next = stepRows.filter((b) => rows[b]!.finish === null);
      if (next.length > 0 && k + 1 < o.maxNewTokens && inFlight.length <= ahead) {
        setStreams(next);
        const logits = decoder.step(next, feed ? undefined : next.map((b) => rows[b]!.completion[k]!));
        steps++;
        await phase('decodeMs');
        stepRows = next;
        await sample(++k, stepRows, logits);
        continue;
      }
      const done = inFlight.shift();
      if (!done) break;
      const sampled = unpackSamples(await done.read(), done.rows.length);
      await phase('readbackMs');
      // Rows that ended at an earlier step ran on until the host learnt of it: their tokens are dropped.
      let added = false;
      done.rows.forEach((b, i) => {
        if (rows[b]!.finish !== null) return;
        rows[b]!.add(sampled[i]!);
        added = true;
      });
      if (added) onToken?.({ step: done.k, texts: rows.map((r) => r.streamed), finished: rows.map((r) => r.finish !== null) });
    }
    const results = rows.map((r) => r.result());
    return {
      rows: results,
      stats: {
        promptTokens: ids.reduce((n, p) => n + p.length, 0),
        newTokens: results.reduce((n, r) => n + r.completionIds.length, 0),
        steps,
        ms: performance.now() - t0,
        timing,
      },
    };
  }

  /** Returns the cache and step buffers to the pool (a later call allocates them again). */
  release(): void {
    if (!this.held) return;
    this.held.decoder.destroy();
    this.rt.release(this.held.streams, this.held.out);
    this.held = null;
  }
}
