import { matmulTuner } from '../gpu/ops/autotune';
import { sum } from '../gpu/ops/reduce';
import { view } from '../gpu/tensor';
import type { Batch, Transformer } from '../model/transformer';
import type { Tokenizer } from '../model/tokenizer';
import type { SftPair } from '../data/sftPairs';
import { rng, shuffle } from '../util/random';
import { AdamW, DEFAULT_ADAMW, type AdamWConfig } from './adamw';
import { learningRate, type LrSchedule } from './schedule';
import { trainStep } from './step';
import { traceLossHeads } from './tuneRun';

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
  const response = [...tokenizer.encode(pair.response), tokenizer.specials.eos];
  const responseLen = Math.min(response.length, maxLen - Math.min(prompt.length, Math.floor(maxLen / 2)));
  const promptLen = Math.min(prompt.length, maxLen - responseLen);
  const kept = promptLen === prompt.length ? prompt : [prompt[0]!, ...prompt.slice(prompt.length - promptLen + 1)];
  const ids = [...kept, ...response.slice(0, responseLen)];
  const lossMask = ids.map((_, i) => (i >= kept.length ? 1 : 0));
  return { ids, lossMask };
}

/** A document of plain text, trained with the loss on every token after BOS (pretraining). */
export interface SftDocument {
  text: string;
}

/** What the trainer learns from: a pair (the loss on its response) or a document (on all of it). */
export type SftExample = SftPair | SftDocument;

/**
 * A document as BOS, its tokens and EOS, every token after BOS trained on. BOS is the plain one
 * even where the tokenizer has a chat template: a document is not a turn. A document longer
 * than maxLen is cut into windows of maxLen overlapping by one token (a window's last token is
 * the next one's first, read there but not predicted), so each token is predicted exactly once
 * and none is lost. Without a chat template, a document that fits is encodePair's
 * {prompt: '', response: text}; a longer one is where they differ (encodePair cuts the response).
 */
export function encodeDocument(tokenizer: Tokenizer, text: string, maxLen: number): SftSequence[] {
  if (maxLen < 2) throw new Error(`a window must hold at least 2 tokens (got ${maxLen})`);
  const ids = [tokenizer.specials.bos, ...tokenizer.encode(text), tokenizer.specials.eos];
  const windows: SftSequence[] = [];
  for (let start = 0; start === 0 || start < ids.length - 1; start += maxLen - 1) {
    const window = ids.slice(start, start + maxLen);
    windows.push({ ids: window, lossMask: window.map((_, i) => (i === 0 ? 0 : 1)) });
  }
  return windows;
}

/** An example's sequences: one for a pair, a document's windows. */
export function encodeExample(tokenizer: Tokenizer, example: SftExample, maxLen: number): SftSequence[] {
  return 'text' in example ? encodeDocument(tokenizer, example.text, maxLen) : [encodePair(tokenizer, example, maxLen)];
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
  /** Where to start in the data (a resumed run's cursor); default the beginning. */
  cursor?: DataCursor;
}

/**
 * Where a trainer is in its data: epochs begun (each a shuffle of the examples with the run's
 * seed) and micro-batches taken from the current one. A trainer started at a cursor goes on
 * with the batches the trainer that reached it would have made next.
 */
export interface DataCursor {
  epoch: number;
  batch: number;
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

/**
 * Supervised fine-tuning and pretraining of a Transformer, on pairs, documents or both: the
 * engine API behind the warm-up, `npm run sft`, `npm run pretrain` and the lab's panel.
 */
export class SftTrainer {
  readonly optimizer: AdamW;
  private readonly random: () => number;
  private queue: SftBatch[] = [];
  private epoch = 0;
  private taken = 0;

  constructor(
    readonly model: Transformer,
    readonly tokenizer: Tokenizer,
    readonly examples: SftExample[],
    readonly options: SftOptions,
  ) {
    if (examples.length === 0) throw new Error('SFT needs at least one example');
    this.optimizer = new AdamW(model.rt, model.trainable.params.size, model.trainable.specs, options.adamw ?? DEFAULT_ADAMW);
    this.random = rng(options.seed ?? 0);
    if (options.cursor) this.seek(options.cursor);
  }

  /** The examples' sequences in this order, as the trainer batches them. */
  batchesOf(examples: readonly SftExample[]): SftBatch[] {
    const { batchSize, seqLen, packing } = this.options;
    const seqs = examples.flatMap((e) => encodeExample(this.tokenizer, e, seqLen + 1));
    return makeBatches(seqs, batchSize, seqLen, this.tokenizer.specials.pad, packing ?? false);
  }

  /** Where the next micro-batch comes from. */
  get cursor(): DataCursor {
    return { epoch: this.epoch, batch: this.taken };
  }

  /** An epoch: the examples shuffled with the run's seed. */
  private nextEpoch(): void {
    this.queue = this.batchesOf(shuffle([...this.examples], this.random));
    this.epoch++;
    this.taken = 0;
  }

  /** Replays the shuffles before the cursor's epoch (the same draws: a shuffle's depend on the length alone), then drops its taken batches. */
  private seek(c: DataCursor): void {
    if (!(Number.isInteger(c.epoch) && Number.isInteger(c.batch) && c.epoch >= 0 && c.batch >= 0) || (c.epoch === 0 && c.batch > 0)) {
      throw new Error(`bad data cursor ${JSON.stringify(c)}`);
    }
    if (c.epoch === 0) return;
    for (let e = 1; e < c.epoch; e++) shuffle([...this.examples], this.random);
    this.epoch = c.epoch - 1;
    this.nextEpoch();
    if (c.batch > this.queue.length) {
      throw new Error(`the data cursor is at batch ${c.batch} of epoch ${c.epoch}, which holds ${this.queue.length}: the examples or the batch settings are not the run's`);
    }
    this.queue.splice(0, c.batch);
    this.taken = c.batch;
  }

  private nextBatch(): SftBatch {
    if (this.queue.length === 0) this.nextEpoch();
    this.taken++;
    return this.queue.shift()!;
  }

  /**
   * Tunes the matmul kernels of a step's shapes before the first step (traced, not run; see
   * tuneRun.ts), so that every step, the first included, runs on the kernels this machine
   * measured: a run and the same run resumed then compute alike. Returns how many shape
   * classes were tuned (none where an earlier run measured them).
   */
  async prepare(onProgress?: (done: number, total: number) => void): Promise<number> {
    const { batchSize: B, seqLen: T } = this.options;
    const zeros = new Array<number>(B * T).fill(0);
    this.model.rt.trace(() => {
      this.model.forwardLoss({ B, T, tokens: zeros, targets: zeros, weights: zeros });
      this.model.backward();
      traceLossHeads(this.model, B, T);
    });
    return matmulTuner(this.model.rt).tunePending(3, onProgress);
  }

  /** The mean loss per trained token over `batches` (batchesOf's) with the weights as they are: a held-out loss. */
  async meanLoss(batches: readonly SftBatch[]): Promise<number> {
    const { model } = this;
    const rt = model.rt;
    const count = batches.reduce((n, b) => n + b.targets.filter((t) => t >= 0).length, 0);
    if (count === 0) throw new Error('no token to compute a loss on');
    const sums = rt.empty([batches.length]);
    batches.forEach((b, i) => {
      const out = model.forwardLoss({ ...b, weights: b.targets.map((t) => (t >= 0 ? 1 / count : 0)) });
      sum(rt, out.loss, view(sums, [1], i));
    });
    const read = await rt.read(sums);
    rt.release(sums);
    return read.reduce((a, x) => a + x, 0);
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
