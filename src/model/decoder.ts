/**
 * The inference forward of a Transformer for batched generation: a prefill over B
 * left-padded prompts that fills a per-layer KV cache, then decode steps of one new token
 * per still-running row that read it. Rows that finished are left out of a step (the batch
 * is compacted: every matmul shrinks to the rows left), while their cache stays in place.
 * Decode-shaped matmuls (M = running rows) go through the matmul autotuner like any other,
 * which picks the gemv kernel where it wins.
 *
 * Rows with the same prompt (a phase's n samples of one problem) share one prefill.
 *
 * Without the cache (`useCache` false) every step recomputes the whole sequences: the
 * reference the cached decode is tested against, and the benchmark's baseline.
 *
 * A decode step records the same dispatches every token but for its cache slot, so the first
 * step of each shape (rows stepped, attention's schedule) is captured as a plan and the
 * steps after it replay that plan (Runtime.capture): the host's work per token is then a few
 * words written and three native calls per dispatch, not the model's code run again.
 */
import type { DispatchPlan } from '../gpu/dispatchPlan';
import { Cell } from '../gpu/params';
import type { Runtime } from '../gpu/runtime';
import { view, type DType, type Tensor } from '../gpu/tensor';
import { headDim, type LlamaConfig } from './config';
import { attentionForward } from './kernels/attention';
import { embeddingForward } from './kernels/embedding';
import { attentionSchedule, kvLayerSize, ropeKvAttend, ropeKvStore, type KvLayout } from './kernels/kvcache';
import type { KvDtype } from './memory';
import { actsRows, layerActs, type LayerActs } from './activations';
import { loraStage } from './loraAdapter';
import { attentionShape, type Transformer } from './transformer';
import { maxOf } from '../util/stats';

/** The first n rows of a [rows, ...] tensor. */
function firstRows(t: Tensor, n: number): Tensor {
  return view(t, [n, ...t.shape.slice(1)]);
}

/** Plans a decoder keeps (the least recently used goes first): a generation whose rows end one by one steps many row counts, each for a while. */
const MAX_PLANS = 8;

/** Activations of an inference forward over N rows: the residual stream, updated in place, and one layer's scratch for every layer. */
class Scratch {
  readonly x: Tensor;
  readonly acts: LayerActs;
  private readonly all: Tensor[] = [];

  constructor(private readonly rt: Runtime, model: Transformer, N: number) {
    const c = model.config;
    const f = (shape: number[], label: string) => this.track(rt.empty(shape, 'f32', label));
    this.x = f([N, c.hidden_size], 'x');
    const lora = model.lora;
    this.acts = layerActs(c, N, f, lora ? { config: lora, stage: loraStage(c, lora, N, f) } : undefined);
  }

  private track<D extends DType>(t: Tensor<D>): Tensor<D> {
    this.all.push(t);
    return t;
  }

  /** Views of the first n rows. */
  rows(n: number): { x: Tensor; acts: LayerActs } {
    return { x: firstRows(this.x, n), acts: actsRows(this.acts, n) };
  }

  release(): void {
    this.rt.release(...this.all);
    this.all.length = 0;
  }
}

/** The distinct sequences in order of first appearance, and which one each row is. */
export function distinctRows(seqs: readonly (readonly number[])[]): { unique: number[][]; of: number[] } {
  const seen = new Map<string, number>();
  const unique: number[][] = [];
  const of = seqs.map((seq) => {
    const key = seq.join(',');
    let u = seen.get(key);
    if (u === undefined) {
      seen.set(key, (u = unique.length));
      unique.push([...seq]);
    }
    return u;
  });
  return { unique, of };
}

export class Decoder {
  readonly layout: KvLayout;
  private readonly rt: Runtime;
  private readonly cache: Tensor[] = [];
  /** Decode-step activations for up to B rows; its residual also holds the prefill's last rows. */
  private readonly scratch: Scratch;
  /**
   * A decode step's inputs: each batch row's latest token (B, see `feed`), then positions,
   * rows and cache starts of the n rows stepped.
   */
  private readonly io: Tensor<'u32'>;
  /**
   * Each batch row's latest token [B], read by the next step's embedding: written by the
   * sampler on the GPU (sampleTokens' `feed`), so a step can be recorded before the host
   * has seen the tokens it consumes; or by the host (`step` with tokens).
   */
  readonly feed: Tensor<'u32'>;
  private readonly lnf: Tensor;
  private readonly rstdf: Tensor;
  private readonly logits: Tensor;
  private promptLen = 0;
  private lengths: number[] = [];
  /** Tokens decoded since the prefill. */
  private decoded = 0;
  /** Every row's tokens so far (recompute mode only). */
  private seqs: number[][] = [];
  /** The slot a replayed step writes into its parameters. */
  private readonly slot = new Cell();
  /** Captured steps by rows stepped and attention's schedule, the most recently used last (see replay). */
  private readonly plans = new Map<string, DispatchPlan>();

  /**
   * B rows with T cache slots each (prompt and completion), the cache holding `kvDtype`.
   * Allocates everything it will use.
   */
  constructor(
    readonly model: Transformer,
    readonly B: number,
    readonly T: number,
    readonly useCache = true,
    readonly kvDtype: KvDtype = 'f32',
    /** Replay captured steps (default); off, every step runs the model's code (the host-cost benchmark's baseline). */
    readonly replay = true,
  ) {
    const c = model.config;
    const rt = (this.rt = model.rt);
    this.layout = { B, T, kvHeads: c.num_key_value_heads, hd: headDim(c), dtype: kvDtype };
    if (useCache) {
      for (let l = 0; l < c.num_hidden_layers; l++) this.cache.push(rt.empty([kvLayerSize(this.layout)], kvDtype, `kv.${l}`));
    }
    this.scratch = new Scratch(rt, model, B);
    this.io = rt.empty([4 * B], 'u32', 'decode.io');
    this.feed = view(this.io, [B]);
    this.lnf = rt.empty([B, c.hidden_size], 'f32', 'lnf');
    this.rstdf = rt.empty([B], 'f32', 'rstdf');
    this.logits = rt.empty([B, c.vocab_size], 'f32', 'logits');
  }

  /**
   * Records the prefill of B prompts (token ids, each at least one): fills the cache and
   * returns the logits [B, vocab] of each prompt's last token (valid until the next call).
   */
  prefill(prompts: number[][]): Tensor {
    if (prompts.length !== this.B) throw new Error(`decoder: ${prompts.length} prompts for a batch of ${this.B}`);
    const P = maxOf(prompts, (p) => p.length);
    if (prompts.some((p) => p.length === 0)) throw new Error('decoder: an empty prompt (it needs at least one token)');
    if (P > this.T) throw new Error(`decoder: a prompt of ${P} tokens exceeds the ${this.T} cache slots`);
    // The plans bind what the model's code chose until now (its adapter, its kernels): recaptured after each prefill.
    this.dropPlans();
    this.promptLen = P;
    this.lengths = prompts.map((p) => p.length);
    this.decoded = 0;
    this.seqs = this.useCache ? [] : prompts.map((p) => [...p]);
    return this.forwardFull(prompts, this.useCache);
  }

  /**
   * Records one decode step for the running rows `rows` (batch indices, ascending or not),
   * whose latest tokens are `tokens`, or without `tokens` those the sampler wrote into `feed`
   * (with the cache only); returns their next-token logits [rows.length, vocab].
   */
  step(rows: readonly number[], tokens?: readonly number[]): Tensor {
    const n = rows.length;
    if (n === 0 || n > this.B || (tokens && tokens.length !== n)) throw new Error(`decoder: a step of ${n} rows and ${tokens?.length} tokens`);
    const slot = this.promptLen + this.decoded;
    if (slot >= this.T) throw new Error(`decoder: step ${this.decoded + 1} needs slot ${slot} of ${this.T}`);
    this.decoded++;
    if (!this.useCache) {
      if (!tokens) throw new Error('decoder: recomputing every step needs the tokens on the host');
      rows.forEach((b, i) => this.seqs[b]!.push(tokens[i]!));
      return this.forwardFull(rows.map((b) => this.seqs[b]!), false);
    }
    const rt = this.rt;
    // The host's tokens go into `feed` in the same write; tokens fed on the GPU are left alone.
    const fed = tokens ? this.B : 0;
    const io = new Uint32Array(fed + 3 * n);
    rows.forEach((b, i) => {
      if (tokens) io[b] = tokens[i]!;
      io[fed + i] = this.lengths[b]! + this.decoded - 1;
      io[fed + n + i] = b;
      io[fed + 2 * n + i] = this.promptLen - this.lengths[b]!;
    });
    rt.write(view(this.io, [fed + 3 * n], this.B - fed), io);
    if (!this.replay || rt.isTracing) return this.record(n, slot);
    this.slot.set(slot);
    const { splits, chunk } = attentionSchedule(rt, this.layout, n, this.model.config.num_attention_heads, slot);
    const key = `${n} ${splits} ${chunk}`;
    let plan = this.plans.get(key);
    if (plan) {
      this.plans.delete(key);
    } else {
      plan = rt.capture(() => void this.record(n, this.slot));
      const oldest = this.plans.size >= MAX_PLANS ? this.plans.keys().next().value : undefined;
      if (oldest !== undefined) {
        rt.dropPlan(this.plans.get(oldest)!);
        this.plans.delete(oldest);
      }
    }
    this.plans.set(key, plan);
    rt.replay(plan);
    return firstRows(this.logits, n);
  }

  /** Records a decode step of the first n rows of `io` (written by step) at `slot`; returns their logits. */
  private record(n: number, slot: number | Cell): Tensor {
    const rt = this.rt;
    const c = this.model.config;
    const [pos, rowsT, starts] = [0, 1, 2].map((k) => view(this.io, [n], this.B + k * n)) as Tensor<'u32'>[];
    const s = this.scratch.rows(n);
    const heads = c.num_attention_heads;
    const where = { rows: rowsT!, starts: starts!, slot };
    this.model.embed(this.feed, s.x, rowsT);
    for (let l = 0; l < c.num_hidden_layers; l++) {
      this.model.layerForward(
        l, s.x, s.x, s.acts, pos!,
        (qkv, out) => {
          const f = this.fused(qkv.q, n);
          ropeKvAttend(rt, this.layout, this.cache[l]!, f, where, heads, pos!, this.model.rope, out.o);
        },
        true,
      );
    }
    return this.head(s.x, n);
  }

  /** The fused q|k|v rows of a layer, as the cache kernels read them. */
  private fused(q: Tensor, n: number) {
    const c = this.model.config;
    const qd = c.num_attention_heads * this.layout.hd;
    return { qkv: q, stride: qd + 2 * this.layout.kvHeads * this.layout.hd, colK: qd, n };
  }

  /**
   * Full causal forward over the sequences, left-padded to the longest (masks, positions
   * from 0 at each first real token): the training forward's layers with activations
   * shared across layers. `store` writes every layer's k and v into the cache.
   */
  private forwardFull(seqs: number[][], store: boolean): Tensor {
    const rt = this.rt;
    const c = this.model.config;
    const n = seqs.length;
    const P = maxOf(seqs, (s) => s.length);
    // Rows with the same prompt (n samples of one problem) share one forward: each distinct
    // sequence is computed once, its cache rows and last hidden state then copied to every row.
    const { unique, of } = distinctRows(seqs);
    const U = unique.length;
    const shared = store && U < n;
    const forward = shared ? unique : seqs;
    const R = forward.length;
    const N = R * P;
    const host = new Uint32Array(3 * N + 3 * n);
    forward.forEach((seq, b) => {
      const pad = P - seq.length;
      seq.forEach((token, t) => {
        const i = b * P + pad + t;
        host[i] = token;
        host[N + i] = 1;
        host[2 * N + i] = t;
      });
    });
    // Left padding puts every row's last token in column P − 1; the embedding gather
    // doubles as the row gather that picks them (and, when shared, copies cache rows: K rows
    // u(b), then V rows U + u(b)).
    for (let b = 0; b < n; b++) {
      const u = shared ? of[b]! : b;
      host[3 * N + b] = u * P + P - 1;
      host[3 * N + n + b] = u;
      host[3 * N + 2 * n + b] = U + u;
    }
    const input = rt.upload(host, [host.length], 'u32');
    const [tokens, mask, positions] = [0, 1, 2].map((k) => view(input, [N], k * N)) as Tensor<'u32'>[];
    const last = view(input, [n], 3 * N);
    const s = new Scratch(rt, this.model, N);
    const shape = attentionShape(c, R, P);
    const layout = shared ? { ...this.layout, B: U } : this.layout;
    const staged = shared ? rt.empty([kvLayerSize(layout)], this.kvDtype, 'kv.shared') : null;
    this.model.embed(tokens!, s.x);
    for (let l = 0; l < c.num_hidden_layers; l++) {
      this.model.layerForward(
        l, s.x, s.x, s.acts, positions!,
        (qkv, out) => {
          if (store) ropeKvStore(rt, layout, staged ?? this.cache[l]!, this.fused(qkv.q, N), { seqLen: P }, c.num_attention_heads, positions!, this.model.rope);
          attentionForward(rt, shape, { ...qkv, mask: mask!, ...out });
        },
        store,
      );
      if (staged) {
        const slab = this.layout.T * this.layout.kvHeads * this.layout.hd;
        embeddingForward(rt, view(input, [2 * n], 3 * N + n), view(staged, [2 * U, slab]), view(this.cache[l]!, [2 * n, slab]));
      }
    }
    const lastRows = firstRows(this.scratch.x, n);
    embeddingForward(rt, last, s.x, lastRows);
    // Recorded work keeps its buffers in order: released ones are reused only by later work.
    rt.release(input);
    if (staged) rt.release(staged);
    s.release();
    return this.head(lastRows, n);
  }

  private head(x: Tensor, n: number): Tensor {
    const logits = firstRows(this.logits, n);
    this.model.headForward(x, firstRows(this.lnf, n), view(this.rstdf, [n]), logits, true);
    return logits;
  }

  private dropPlans(): void {
    for (const plan of this.plans.values()) this.rt.dropPlan(plan);
    this.plans.clear();
  }

  destroy(): void {
    this.dropPlans();
    this.scratch.release();
    this.rt.release(...this.cache, this.io, this.lnf, this.rstdf, this.logits);
    this.cache.length = 0;
  }
}
