import type { Batch, Transformer } from '../model/transformer';
import type { Tokenizer } from '../model/tokenizer';
import { rng, shuffle } from '../util/random';
import { AdamW, DEFAULT_ADAMW, type AdamWConfig } from './adamw';
import { learningRate, type LrSchedule } from './schedule';
import { trainStep } from './step';

/** One supervised example: the loss covers only the response (and its closing EOS). */
export interface SftPair {
  prompt: string;
  response: string;
  /**
   * Character spans [start, end) of the response read but not trained on: text a target needs
   * in place without teaching the model to write it (the warm-up's Challenger format, whose
   * question is left to pretraining). Each part of the response is encoded on its own.
   */
  untrained?: readonly (readonly [number, number])[];
}

/** The response's tokens and, per token, whether it carries loss (its untrained spans not). */
function encodeResponse(tokenizer: Tokenizer, pair: SftPair): { ids: number[]; loss: number[] } {
  const ids: number[] = [];
  const loss: number[] = [];
  const add = (text: string, trained: boolean) => {
    const part = tokenizer.encode(text);
    ids.push(...part);
    loss.push(...part.map(() => (trained ? 1 : 0)));
  };
  let at = 0;
  for (const [start, end] of [...(pair.untrained ?? [])].sort((a, b) => a[0] - b[0])) {
    if (start < at || end < start || end > pair.response.length) throw new Error(`untrained span [${start}, ${end}) is not inside the response (${pair.response.length} characters) or overlaps another`);
    if (start > at) add(pair.response.slice(at, start), true);
    if (end > start) add(pair.response.slice(start, end), false);
    at = end;
  }
  if (at < pair.response.length) add(pair.response.slice(at), true);
  return { ids: [...ids, tokenizer.specials.eos], loss: [...loss, 1] };
}

/** A tokenised example: ids and which of them are trained on. */
export interface SftSequence {
  ids: number[];
  /** 1 where the token is predicted with loss (response tokens and EOS). */
  lossMask: number[];
}

/**
 * The framed prompt (Tokenizer.encodePrompt: BOS, or the chat template's turns), the response and
 * EOS in at most maxLen tokens. When too long, the prompt loses its beginning after its first
 * token (the end of a question is what the answer follows) and keeps at most half the budget if
 * the response needs it; the response is cut at the end last.
 */
export function encodePair(tokenizer: Tokenizer, pair: SftPair, maxLen: number): SftSequence {
  const prompt = tokenizer.encodePrompt(pair.prompt);
  const response = encodeResponse(tokenizer, pair);
  const responseLen = Math.min(response.ids.length, maxLen - Math.min(prompt.length, Math.floor(maxLen / 2)));
  const promptLen = Math.min(prompt.length, maxLen - responseLen);
  const kept = promptLen === prompt.length ? prompt : [prompt[0]!, ...prompt.slice(prompt.length - promptLen + 1)];
  const ids = [...kept, ...response.ids.slice(0, responseLen)];
  const lossMask = [...kept.map(() => 0), ...response.loss.slice(0, responseLen)];
  return { ids, lossMask };
}

/** A batch built here: plain arrays, so counting and re-weighting need no casts. */
export interface SftBatch extends Batch {
  tokens: number[];
  mask: number[];
  targets: number[];
  weights: number[];
  /** The examples' tokens in the batch (a packed row's remainder is masked in but not counted). */
  real: number;
}

/** Open rows a whole example may still join: a bounded window keeps packing linear in the examples. */
const OPEN_ROWS = 64;

/** A row's examples back to back; `starts` holds the column where each begins. */
type Row = { ids: number[]; loss: number[]; starts: number[] };

/**
 * Rows of B × T for next-token training. Padding mode: one example per row, padded on the
 * right and masked. Packing mode (padding-free, as TRL's best-fit packing with position ids):
 * whole examples side by side in a row, each put in the open row it fills best (best fit, in
 * the examples' order, over the last OPEN_ROWS rows), its positions restarting at 0 and its
 * tokens attending only its own (the attention mask's sequence starts, as packed rollouts
 * use), the row's remainder a sequence of its own without targets. Each example is then
 * trained exactly as in its own row: a response is never cut from its prompt at a row's end,
 * and never read beside another example's (a Critic's score beside another problem's plan).
 * An example longer than the row is cut as in padding mode.
 */
export function makeBatches(seqs: SftSequence[], B: number, T: number, pad: number, packing: boolean): SftBatch[] {
  const rows: Row[] = [];
  for (const s of seqs) {
    const ids = s.ids.slice(0, T + 1);
    const loss = s.lossMask.slice(0, T + 1);
    let best: Row | undefined;
    if (packing) {
      for (let r = Math.max(0, rows.length - OPEN_ROWS); r < rows.length; r++) {
        const row = rows[r]!;
        if (row.ids.length + ids.length <= T + 1 && (!best || row.ids.length > best.ids.length)) best = row;
      }
    }
    if (best) {
      best.starts.push(best.ids.length);
      best.ids.push(...ids);
      best.loss.push(...loss);
    } else rows.push({ ids: [...ids], loss: [...loss], starts: [0] });
  }
  const batches: SftBatch[] = [];
  for (let first = 0; first < rows.length; first += B) {
    const group = rows.slice(first, first + B);
    const N = B * T;
    const tokens = new Array<number>(N).fill(pad);
    const mask = new Array<number>(N).fill(0);
    const positions = new Array<number>(N).fill(0);
    const targets = new Array<number>(N).fill(-1);
    let real = 0;
    group.forEach((row, b) => {
      const ends = [...row.starts.slice(1), row.ids.length];
      row.starts.forEach((start, k) => {
        const end = ends[k]!;
        for (let t = start; t < Math.min(T, end); t++) {
          tokens[b * T + t] = row.ids[t]!;
          mask[b * T + t] = start + 1;
          positions[b * T + t] = t - start;
          // Column t predicts the example's next token when that token carries loss.
          if (t + 1 < end && row.loss[t + 1]) targets[b * T + t] = row.ids[t + 1]!;
        }
      });
      // Packed rows hold no padding query (shaders/attention.wgsl): the remainder is a sequence of its own.
      const used = Math.min(T, row.ids.length);
      real += used;
      if (packing && row.starts.length > 1) {
        for (let t = used; t < T; t++) {
          mask[b * T + t] = used + 1;
          positions[b * T + t] = t - used;
        }
      }
    });
    batches.push({ B, T, tokens, mask, positions, targets, weights: new Array<number>(N).fill(0), real });
  }
  return batches;
}

export interface SftOptions {
  /** Sequences per micro-batch. */
  batchSize: number;
  /** Tokens per sequence. */
  seqLen: number;
  /** Micro-batches whose gradients are accumulated into one update. */
  accumulation: number;
  schedule: LrSchedule;
  adamw?: AdamWConfig;
  packing?: boolean;
  seed?: number;
  /**
   * After the first step, measure the matmul variants for every shape the step used (once
   * per adapter; cached). Default true. Off makes runs bit-reproducible from the first step.
   */
  autotune?: boolean;
}

export interface SftStepResult {
  step: number;
  /** Mean loss per trained token over the step's micro-batches. */
  loss: number;
  gradNorm: number;
  lr: number;
  /** False when a gradient was NaN/inf: the update was skipped, weights unchanged. */
  finite: boolean;
  tokens: number;
  ms: number;
}

/** Supervised fine-tuning of a Transformer: the engine API behind warm-up and the CLI. */
export class SftTrainer {
  readonly optimizer: AdamW;
  private readonly random: () => number;
  private queue: SftBatch[] = [];

  constructor(
    readonly model: Transformer,
    readonly tokenizer: Tokenizer,
    readonly pairs: SftPair[],
    readonly options: SftOptions,
  ) {
    if (pairs.length === 0) throw new Error('SFT needs at least one example');
    this.optimizer = new AdamW(model.rt, model.trainable.params.size, model.trainable.specs, options.adamw ?? DEFAULT_ADAMW);
    this.random = rng(options.seed ?? 0);
  }

  /** The next micro-batch: an epoch is the examples shuffled with the run's seed. */
  private nextBatch(): SftBatch {
    if (this.queue.length === 0) {
      const { batchSize, seqLen, packing } = this.options;
      const seqs = shuffle([...this.pairs], this.random).map((p) => encodePair(this.tokenizer, p, seqLen + 1));
      this.queue = makeBatches(seqs, batchSize, seqLen, this.tokenizer.specials.pad, packing ?? false);
    }
    return this.queue.shift()!;
  }

  /** One optimizer step over `accumulation` micro-batches. */
  async step(): Promise<SftStepResult> {
    const t0 = performance.now();
    const { model } = this;
    const micro = Array.from({ length: this.options.accumulation }, () => this.nextBatch());
    const counted = micro.reduce((n, b) => n + b.targets.filter((t) => t >= 0).length, 0);
    // Every trained token weighs 1/count, so the summed loss is the step's mean.
    const weighted = micro.map((b) => ({ ...b, weights: b.targets.map((t) => (t >= 0 && counted > 0 ? 1 / counted : 0)) }));
    const lr = learningRate(this.options.schedule, this.optimizer.step);
    const { loss, gradNorm, finite } = await trainStep(model, this.optimizer, weighted, lr, this.options.autotune !== false);
    return {
      step: this.optimizer.step,
      loss,
      gradNorm,
      lr,
      finite,
      tokens: micro.reduce((n, b) => n + b.real, 0),
      ms: performance.now() - t0,
    };
  }

  destroy(): void {
    this.optimizer.destroy();
  }
}
