import { HalfWriter } from '../gpu/halfWriter';
import { fill, narrowToHalf, widenHalf } from '../gpu/ops/elementwise';
import { matmul } from '../gpu/ops/matmul';
import type { MatmulArgs } from '../gpu/ops/matmulVariants';
import { swigluBackward, swigluForward } from '../gpu/ops/mlp';
import { colReduce } from '../gpu/ops/reduce';
import type { Runtime } from '../gpu/runtime';
import { BYTES_PER_ELEMENT, view, type Tensor } from '../gpu/tensor';
import { normal, rng } from '../util/random';
import { flatParamSize, headDim, paramSpecs, ropeInvFreq, validateConfig, type LlamaConfig, type ParamSpec } from './config';
import { checkActivationsFit, paramChunks, type BaseDtype } from './memory';
import { Workspace, type LayerActs } from './activations';
import type { LoraConfig, LoraTarget } from './lora';
import { BLOCK_FIRST, LoraAdapter } from './loraAdapter';
import { bufferIndex, checkHalfRange, ParamSet, placeParams } from './paramSet';
import { attentionBackward, attentionForward, MAX_HEAD_DIM, type AttentionShape } from './kernels/attention';
import { embeddingBackward, embeddingForward, tokenIndex } from './kernels/embedding';
import { crossEntropy, policyLoss, type PolicyLossCoefficients } from './kernels/loss';
import { rmsnormBackward, rmsnormForward } from './kernels/norm';
import { rope, ropeTables, type RopeTables } from './kernels/rope';

/** A batch of B sequences of T tokens (row-major, row = b·T + t). */
export interface Batch {
  B: number;
  T: number;
  tokens: ArrayLike<number>;
  /** Key padding mask: 1 = real token, 0 = padding. Default all real. */
  mask?: ArrayLike<number>;
  /** RoPE positions; default t. Left-padded rows pass cumsum(mask) − 1. */
  positions?: ArrayLike<number>;
  /** Next-token targets, −1 = no loss. Needed for loss/backward. */
  targets?: ArrayLike<number>;
  /** Per-token loss weights (masks, 1/count, advantages). Needed for loss/backward. */
  weights?: ArrayLike<number>;
}

/** What a matmul computes from its A as it reads it (see MatmulArgs). */
type Prologue = Pick<MatmulArgs, 'swiglu' | 'norm'>;

/**
 * The largest vocabulary whose LM head computes the final norm in its matmul (fused
 * prologues). A decode head launches a workgroup per 4 columns (split-K), each of which would
 * recompute every row's Σx² over the hidden size: past 256 of them (37,984 at Qwen2.5's
 * 151,936 ids) one RMSNorm dispatch over the rows costs less than the copies it saves.
 */
export const HEAD_NORM_ONCE_COLUMNS = 1024;

/** Rotated q, k and v of a layer (views into its fused q|k|v rows). */
export interface QkvViews {
  q: Tensor;
  k: Tensor;
  v: Tensor;
}

/** Writes a layer's attention output `o` [N, heads·hd] (and `lse` where the kernel saves it). */
export type Attend = (qkv: QkvViews, out: { o: Tensor; lse: Tensor }) => void;

/**
 * The Llama-family decoder on the GPU: one flat parameter buffer (HF tensor order), explicit
 * forward and backward per layer (the llm.c way), activations laid out once per batch shape.
 * With a LoRA adapter the base is frozen: only the adapter has gradients, and the backward
 * pass computes no weight gradient of the base.
 */
export class Transformer {
  private adapter: LoraAdapter | null = null;
  /** cos/sin tables of the rotary embedding, for kernels that rotate as they go (the decoder's cache store). */
  readonly rope: RopeTables;
  private ws: Workspace | null = null;
  private baseSet: ParamSet;
  private readonly specIndex: Map<string, ParamSpec>;

  private constructor(
    readonly rt: Runtime,
    readonly config: LlamaConfig,
    base: ParamSet,
    rope: RopeTables,
  ) {
    this.baseSet = base;
    this.rope = rope;
    this.specIndex = new Map(base.specs.map((s) => [s.name, s]));
  }

  /** The base model's weights. */
  get base(): ParamSet {
    return this.baseSet;
  }

  /** How the base weights are stored. */
  get baseDtype(): BaseDtype {
    return this.baseSet.dtype;
  }

  /**
   * Stores the base weights as `dtype` from now on, converting them on the GPU (f32 → f16
   * rounds each weight to the nearest half; back to f32 keeps the rounded values). The GPU
   * holds both copies during the conversion. A weight beyond half precision's range refuses
   * f16, naming it, before anything changes.
   */
  async setBaseDtype(dtype: BaseDtype): Promise<void> {
    const old = this.baseSet;
    if (old.dtype === dtype) return;
    const starts = Transformer.placement(this.rt, this.config, undefined, dtype);
    if (dtype === 'f16') await old.checkHalfRange();
    old.dropGrads();
    const next = placeParams(this.rt, old.specs, starts, dtype);
    for (const s of old.specs) {
      if (dtype === 'f16') narrowToHalf(this.rt, old.param(s.name), next.param(s.name));
      else widenHalf(this.rt, old.param(s.name), next.param(s.name));
    }
    old.destroy();
    this.baseSet = next;
    // Made from the old base, in its dtype.
    this.adapter?.dropMerged();
  }

  /**
   * A model whose weights come from `read`, one tensor at a time straight into GPU memory (a
   * large checkpoint never needs its float32 copy whole in memory); `onTensor` follows each
   * upload. Weights beyond what one buffer binds are split across buffers a layer at a time;
   * every limit is checked, and refused with the numbers, before anything is allocated.
   */
  static load(rt: Runtime, config: LlamaConfig, read: (spec: ParamSpec) => Float32Array, options: LoadOptions = {}): Transformer {
    const dtype = options.dtype ?? 'f32';
    const starts = Transformer.placement(rt, config, options.maxBufferBytes, dtype);
    const specs = paramSpecs(config);
    const base = placeParams(rt, specs, starts, dtype);
    // f16 runs may end mid-word: each buffer is written in order through a HalfWriter.
    const writers = dtype === 'f16' ? base.buffers.map((b) => new HalfWriter(rt, b as Tensor<'f16'>)) : [];
    try {
      for (const s of specs) {
        const data = read(s);
        if (data.length !== s.size) throw new Error(`${s.name}: ${data.length} values for a tensor of ${s.size}`);
        if (dtype === 'f16') {
          checkHalfRange(s.name, data);
          const k = bufferIndex(starts, s.offset);
          writers[k]!.write(s.offset - starts[k]!, data);
        } else {
          rt.write(base.param(s.name), data);
        }
        options.onTensor?.(s);
      }
    } catch (e) {
      base.destroy();
      throw e;
    }
    for (const w of writers) w.end();
    const tables = ropeTables(ropeInvFreq(config), config.max_position_embeddings);
    const rope = {
      cos: rt.upload(tables.cos, [tables.cos.length]),
      sin: rt.upload(tables.sin, [tables.sin.length]),
      maxPos: config.max_position_embeddings,
    };
    return new Transformer(rt, config, base, rope);
  }

  /**
   * Where a model's weights would go (each buffer's first flat offset); refuses, with the
   * numbers, one this device cannot hold. Pure: nothing is allocated.
   */
  static placement(rt: Runtime, config: LlamaConfig, maxBufferBytes?: number, dtype: BaseDtype = 'f32'): number[] {
    validateConfig(config);
    const hd = headDim(config);
    if (hd > MAX_HEAD_DIM) throw new Error(`head_dim ${hd} exceeds the attention kernel's limit of ${MAX_HEAD_DIM}`);
    const { limits } = rt.ctx;
    const bytes = maxBufferBytes ?? Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
    return paramChunks(config, Math.floor(bytes / BYTES_PER_ELEMENT[dtype]), BYTES_PER_ELEMENT[dtype]);
  }

  /** A model with the given flat parameters (e.g. from a checkpoint). */
  static fromFlat(rt: Runtime, config: LlamaConfig, flat: Float32Array, options: Omit<LoadOptions, 'onTensor'> = {}): Transformer {
    const size = flatParamSize(config);
    if (flat.length !== size) throw new Error(`flat parameters hold ${flat.length} values; the config needs ${size}`);
    return Transformer.load(rt, config, (s) => flat.subarray(s.offset, s.offset + s.size), options);
  }

  /** Fresh weights: N(0, 0.02), residual projections scaled by 1/√(2L), norms at 1. */
  static init(rt: Runtime, config: LlamaConfig, seed: number, options: Omit<LoadOptions, 'onTensor'> = {}): Transformer {
    return Transformer.fromFlat(rt, config, initialParams(config, seed), options);
  }

  param(name: string): Tensor {
    return this.adapter?.set.has(name) ? this.adapter.set.param(name) : this.base.param(name);
  }

  /** The base model's parameter layout (HF names, flat offsets). */
  get specs(): ParamSpec[] {
    return this.base.specs;
  }

  /** The base model's flat parameters. */
  get params(): Tensor<'f32'> {
    return this.base.params;
  }

  /** What training updates: the adapter when there is one, else the whole model. */
  get trainable(): ParamSet {
    return this.adapter?.set ?? this.base;
  }

  /** The adapter's configuration, or null when the whole model trains. */
  get lora(): LoraConfig | null {
    return this.adapter?.config ?? null;
  }

  /**
   * The trainable weights for an optimizer to update (work recorded next writes them): the
   * adapter's merged inference copy is remade before the next inference forward.
   */
  paramsForUpdate(): Tensor<'f32'> {
    this.adapter?.changed();
    return this.trainable.params;
  }

  /**
   * How inference applies an adapter: merged into a copy of the weight blocks it adapts, in
   * the base's dtype (no dispatch more than the base's; those blocks' memory once more), or
   * apart, its term added as each base projection stores (LoraAdapter.inferTerm: one small
   * dispatch a block, 4 per layer with all seven targets). Null (the default) merges on an f32 base and keeps apart on an f16
   * one: rounding W + scale·B·A to half erases every change below half a unit in the last
   * place of W (a fresh adapter's first updates), so sampling would lag the policy that
   * trains, and an f32 copy would take more memory than the f16 base saves. Read when an
   * inference forward is recorded.
   */
  mergeAdapterForInference: boolean | null = null;

  /** The trainable parameters' flat gradient buffer (allocated, zeroed, on first use; zeroGrad clears it). */
  get grads(): Tensor<'f32'> {
    return this.trainable.grads;
  }

  /** A trainable parameter's gradient. */
  grad(name: string): Tensor {
    return this.trainable.grad(name);
  }

  /**
   * Freezes the base and trains a LoRA adapter instead: `flat` holds its weights (see
   * initialLora, importPeftAdapter). With `merged`, the base weights already include this
   * adapter (a merged checkpoint being resumed): it is subtracted first, which restores the
   * base to within float32 rounding. Replaces any adapter there was.
   */
  enableLora(config: LoraConfig, flat: Float32Array, options: { merged?: boolean } = {}): void {
    const specs = LoraAdapter.specs(this.config, config, flat);
    this.disableLora();
    this.base.dropGrads();
    this.ws?.destroy();
    this.ws = null;
    this.adapter = new LoraAdapter(this.rt, this.config, config, specs, flat);
    if (options.merged) this.adapter.subtractFrom(this.base);
  }

  /** Drops the adapter (the base trains in full again). */
  disableLora(): void {
    if (!this.adapter) return;
    this.ws?.destroy();
    this.ws = null;
    this.adapter.destroy();
    this.adapter = null;
  }

  /**
   * Layer l's adapted weight blocks with the adapter merged in, for an inference forward (the
   * merge recorded first where the adapter changed since the last one), or null without an
   * adapter (or with merging off).
   */
  private mergedLayer(l: number): Map<string, Tensor> | null {
    const ad = this.adapter;
    if (!ad || !(this.mergeAdapterForInference ?? this.baseDtype === 'f32')) return null;
    return ad.mergedLayer(l, this.baseDtype, (layer, first) => this.blockOf(layer, first));
  }

  /** The fused weight block of layer l that starts at its weight `first` (e.g. q|k|v at q_proj). */
  private blockOf(l: number, first: string): Tensor {
    const name = `model.layers.${l}.${first}`;
    const c = this.config;
    const rows = { 'self_attn.q_proj.weight': (c.num_attention_heads + 2 * c.num_key_value_heads) * headDim(c), 'mlp.gate_proj.weight': 2 * c.intermediate_size }[first];
    return rows === undefined ? this.base.param(name) : this.block(name, [rows, this.spec(name).shape[1]!]);
  }

  /** The adapter's flat weights (PEFT layout order, see loraSpecs). */
  async readAdapter(): Promise<Float32Array> {
    if (!this.adapter) throw new Error('the model has no LoRA adapter');
    return this.rt.read(this.adapter.set.params);
  }

  /**
   * One base weight as float32, with the adapter merged in where it has one (for exports written
   * a tensor at a time). Only an adapted weight needs a GPU copy; the others are read as stored.
   */
  async readWeight(name: string): Promise<Float32Array> {
    const base = this.base.param(name);
    return this.adapter ? this.adapter.readWeight(name, base) : this.rt.readF32(base);
  }

  private spec(name: string): ParamSpec {
    const s = this.specIndex.get(name);
    if (!s) throw new Error(`no parameter "${name}"`);
    return s;
  }

  /**
   * A run of adjacent parameters (q|k|v weights or biases, gate|up weights) as one tensor of
   * the given shape, starting at `first`; from the parameters or the gradients.
   */
  private block(first: string, shape: number[], grads = false): Tensor {
    const spec = this.spec(first);
    return grads ? view(this.base.grads, shape, spec.offset) : this.base.at(spec.offset, shape);
  }

  zeroGrad(): void {
    fill(this.rt, this.grads, 0);
  }

  private workspace(B: number, T: number): Workspace {
    if (this.ws && this.ws.B === B && this.ws.T === T) return this.ws;
    this.ws?.destroy();
    checkActivationsFit(this.config, B, T, this.rt.ctx.limits.maxStorageBufferBindingSize, this.adapter?.config ?? null);
    this.ws = new Workspace(this.rt, this.config, B, T, this.adapter?.config ?? null);
    return this.ws;
  }

  private upload(batch: Batch, ws: Workspace): void {
    const { B, T } = batch;
    const N = B * T;
    const check = (name: string, a: ArrayLike<number> | undefined) => {
      if (a && a.length !== N) throw new Error(`batch.${name} has ${a.length} entries, expected B·T = ${N}`);
    };
    check('tokens', batch.tokens);
    check('mask', batch.mask);
    check('positions', batch.positions);
    check('targets', batch.targets);
    check('weights', batch.weights);
    const V = this.config.vocab_size;
    for (let i = 0; i < N; i++) {
      const t = batch.tokens[i]!;
      if (!Number.isInteger(t) || t < 0 || t >= V) throw new Error(`token ${t} at ${i} is outside the vocabulary (0..${V - 1})`);
    }
    const rt = this.rt;
    rt.write(ws.tokens, Uint32Array.from(batch.tokens));
    rt.write(ws.mask, batch.mask ? Uint32Array.from(batch.mask) : new Uint32Array(N).fill(1));
    const positions = batch.positions ? Uint32Array.from(batch.positions) : Uint32Array.from({ length: N }, (_, i) => i % T);
    for (const p of positions) {
      if (p >= this.config.max_position_embeddings) throw new Error(`position ${p} exceeds max_position_embeddings ${this.config.max_position_embeddings}`);
    }
    rt.write(ws.positions, positions);
    if (batch.targets) rt.write(ws.targets, Int32Array.from(batch.targets));
    if (batch.weights) rt.write(ws.weights, Float32Array.from(batch.weights));
    ws.tokenIds = batch.tokens;
  }

  /** Records the forward pass; returns the logits [B·T, vocab] (valid until the next call). */
  forward(batch: Batch): Tensor {
    const ws = this.prepared(batch);
    ws.headRowCount = null;
    this.body(ws);
    this.headForward(ws.residual[this.config.num_hidden_layers]!, ws.lnf, ws.rstdf, ws.logits);
    return ws.logits;
  }

  /** The batch's workspace, its inputs uploaded. */
  private prepared(batch: Batch): Workspace {
    const ws = this.workspace(batch.B, batch.T);
    this.upload(batch, ws);
    return ws;
  }

  /** Records the embedding and every layer: the last residual is the body's output. */
  private body(ws: Workspace): void {
    const shape = attentionShape(this.config, ws.B, ws.T);
    this.embed(ws.tokens, ws.residual[0]!);
    for (let l = 0; l < this.config.num_hidden_layers; l++) {
      this.layerForward(l, ws.residual[l]!, ws.residual[l + 1]!, ws.layers[l]!, ws.positions, (qkv, out) =>
        attentionForward(this.rt, shape, { ...qkv, mask: ws.mask, ...out }),
      );
    }
  }

  /**
   * The rows a loss reads (target ≥ 0) for lossHead, uploaded where they are fewer than the
   * batch's (before the body is recorded: a write flushes what is recorded). None at all: row
   * 0, whose target −1 gives it no loss and no gradient.
   */
  private keepLossRows(targets: ArrayLike<number>, ws: Workspace): void {
    const kept: number[] = [];
    for (let t = 0; t < targets.length; t++) if (targets[t]! >= 0) kept.push(t);
    if (kept.length === targets.length) {
      ws.headRowCount = null;
      return;
    }
    const rows = kept.length ? kept : [0];
    // The backward's scatter is the embedding's, row numbers for tokens (each row once, in
    // order: the index starts with the rows themselves, which the gather and the loss read).
    const { index } = tokenIndex(rows);
    this.rt.write(view(ws.headScatter, [index.length]), index);
    ws.headRowCount = rows.length;
  }

  /**
   * Records the final norm and the LM head of a loss: on the rows keepLossRows kept alone, their
   * norms gathered (a policy batch's prompts and padding, an SFT batch's prompts need no logits,
   * and the head is a step's largest product, vocabulary × hidden per row, forward and
   * backward), or on every row. Returns the logits and, when gathered, the tokens they are.
   */
  private lossHead(ws: Workspace): { logits: Tensor; rows?: Tensor<'u32'> } {
    const x = ws.residual[this.config.num_hidden_layers]!;
    const n = ws.headRowCount;
    if (n === null) {
      this.headForward(x, ws.lnf, ws.rstdf, ws.logits);
      return { logits: ws.logits };
    }
    this.normed(x, this.param('model.norm.weight'), ws.lnf, ws.rstdf, false);
    const rows = view(ws.headScatter, [n]);
    const headIn = view(ws.headIn, [n, this.config.hidden_size]);
    embeddingForward(this.rt, rows, ws.lnf, headIn);
    const head = this.lmHead();
    const logits = view(ws.logits, [n, this.config.vocab_size]);
    matmul(this.rt, { a: headIn, b: head, transB: true, out: logits, ...this.halfMath(false, head) });
    return { logits, rows };
  }

  /** Records x[n, H] = the token embeddings of `tokens` (u32 [n]), or of tokens[via[t]] with `via` (u32 [n]). */
  embed(tokens: Tensor<'u32'>, x: Tensor, via?: Tensor<'u32'>): void {
    embeddingForward(this.rt, tokens, this.param('model.embed_tokens.weight'), x, via);
  }

  /**
   * Records decoder layer `l` on N rows: next = x + attention + MLP, keeping its activations
   * in `a`. `attend` writes the attention output from the rotated q, k, v (views of the
   * fused q|k|v rows): causal self-attention when training, the KV cache when decoding.
   * With `next` = x (inference, where nothing is kept for a backward pass) both residual
   * additions accumulate into x in place: no copies, and `a.mid` is not used; with the
   * runtime's fused prologues, nor are `a.ln1`, `a.ln2` and `a.act`.
   * `attendRotates`: `attend` gets q and k unrotated and applies the rotary embedding itself
   * (the decoder rotates while it stores the cache, one dispatch for two).
   */
  layerForward(l: number, x: Tensor, next: Tensor, a: LayerActs, positions: Tensor<'u32'>, attend: Attend, attendRotates = false): void {
    const c = this.config;
    const rt = this.rt;
    const hd = headDim(c);
    const qd = c.num_attention_heads * hd;
    const kvd = c.num_key_value_heads * hd;
    const S = qd + 2 * kvd;
    const I = c.intermediate_size;
    const H = c.hidden_size;
    const name = (n: string) => `model.layers.${l}.${n}`;
    const p = (n: string) => this.param(name(n));
    // Inference keeps no activation for a backward pass: where the runtime fuses prologues,
    // each norm is computed by the projections that read it and SwiGLU by the down projection.
    const infer = next === x;
    const fuse = infer && rt.fusedPrologues;
    const half = (b: Tensor) => this.halfMath(infer, b);
    // Inference reads the blocks an adapter adapts from its merged copy, and adds nothing more.
    const merged = infer ? this.mergedLayer(l) : null;
    const w = (first: string, base: Tensor) => merged?.get(first) ?? base;
    const ad = merged ? null : this.adapter;
    // An adapter kept apart: inference adds its term as each base projection stores it (see
    // LoraAdapter.inferTerm), training after it, keeping what the backward pass reads.
    const term = (targets: LoraTarget[], x: Tensor, prologue?: Prologue) => (infer ? ad?.inferTerm(l, targets, x, a.lora, prologue) : undefined);
    const adapt = (targets: LoraTarget[], x: Tensor, y: Tensor, prologue?: Prologue) => {
      if (!infer) ad?.forward(l, targets, x, y, a.lora, prologue);
    };
    const [ln1, in1] = this.normed(x, p('input_layernorm.weight'), a.ln1, a.rstd1, fuse);
    const qkvW = w(BLOCK_FIRST.qkv, this.block(name('self_attn.q_proj.weight'), [S, H]));
    matmul(rt, {
      a: ln1,
      b: qkvW,
      transB: true,
      bias: c.attention_bias ? this.block(name('self_attn.q_proj.bias'), [S]) : undefined,
      out: a.qkv,
      lora: term(['q_proj', 'k_proj', 'v_proj'], ln1, in1),
      ...in1,
      ...half(qkvW),
    });
    adapt(['q_proj', 'k_proj', 'v_proj'], ln1, a.qkv, in1);
    // q and k heads are adjacent at the start of each fused row: one rotation covers both.
    if (!attendRotates) rope(rt, a.qkv, { heads: c.num_attention_heads + c.num_key_value_heads, hd, stride: S, col: 0 }, positions, this.rope);
    attend(qkvViews(a.qkv, qd, kvd), { o: a.att, lse: a.lse });
    const mid = infer ? x : a.mid;
    if (mid !== x) rt.copy(x, mid);
    const oW = w(BLOCK_FIRST.o, p('self_attn.o_proj.weight'));
    matmul(rt, { a: a.att, b: oW, transB: true, out: mid, beta: 1, lora: term(['o_proj'], a.att), ...half(oW) });
    adapt(['o_proj'], a.att, mid);
    const [ln2, in2] = this.normed(mid, p('post_attention_layernorm.weight'), a.ln2, a.rstd2, fuse);
    const guW = w(BLOCK_FIRST.gate_up, this.block(name('mlp.gate_proj.weight'), [2 * I, H]));
    matmul(rt, { a: ln2, b: guW, transB: true, out: a.gu, lora: term(['gate_proj', 'up_proj'], ln2, in2), ...in2, ...half(guW) });
    adapt(['gate_proj', 'up_proj'], ln2, a.gu, in2);
    const down = w(BLOCK_FIRST.down, p('mlp.down_proj.weight'));
    if (fuse) {
      matmul(rt, { a: a.gu, b: down, transB: true, out: next, beta: 1, swiglu: true, lora: term(['down_proj'], a.gu, { swiglu: true }), ...half(down) });
      adapt(['down_proj'], a.gu, next, { swiglu: true });
      return;
    }
    swigluForward(rt, a.gu, I, a.act);
    if (next !== mid) rt.copy(mid, next);
    matmul(rt, { a: a.act, b: down, transB: true, out: next, beta: 1, lora: term(['down_proj'], a.act), ...half(down) });
    adapt(['down_proj'], a.act, next);
  }

  /**
   * Products over f16 weights in f16 where the runtime allows it (Runtime.halfMath). Inference's
   * as the variants compute them. Training's, forward and backward, with each row of A scaled to
   * half's range first (MatmulArgs.scaleRows: gradients lie far below it), which only the matrix
   * units' kernel (mma) does: every other variant computes them in f32, as without halfMath.
   */
  private halfMath(infer: boolean, weight: Tensor): { halfMath?: true; scaleRows?: true } {
    if (!this.rt.halfMath || weight.dtype !== 'f16') return {};
    return infer ? { halfMath: true } : { halfMath: true, scaleRows: true };
  }

  /**
   * Records the final norm and the LM head: logits[n, vocab] from the last residual x[n, H],
   * the norm written to `lnf` and `rstdf` (kept for training's backward pass), or in
   * inference (`infer`) with fused prologues computed by the LM head's matmul where its
   * vocabulary is small (see HEAD_NORM_ONCE_COLUMNS), and over f16 weights with f16 products
   * where the runtime allows them.
   */
  headForward(x: Tensor, lnf: Tensor, rstdf: Tensor, logits: Tensor, infer = false): void {
    const inMatmul = infer && this.rt.fusedPrologues && this.config.vocab_size <= HEAD_NORM_ONCE_COLUMNS;
    const [a, prologue] = this.normed(x, this.param('model.norm.weight'), lnf, rstdf, inMatmul);
    const head = this.lmHead();
    matmul(this.rt, { a, b: head, transB: true, out: logits, ...prologue, ...this.halfMath(infer, head) });
  }

  /**
   * RMSNorm of x before a projection: written to y (and rstd), or with `fuse` left to the
   * projection's matmul: returns the matmul's A and its prologue.
   */
  private normed(x: Tensor, weight: Tensor, y: Tensor, rstd: Tensor, fuse: boolean): [Tensor, Prologue] {
    const eps = this.config.rms_norm_eps;
    if (fuse) return [x, { norm: { weight, eps } }];
    rmsnormForward(this.rt, x, weight, eps, y, rstd);
    return [y, {}];
  }

  private lmHead(): Tensor {
    return this.param(this.config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');
  }

  private lmHeadGrad(): Tensor {
    return this.base.grad(this.config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');
  }

  /**
   * Records forward + fused loss (the logits become d loss / d logits). Returns per-token
   * weighted losses and unweighted log-probabilities [B·T]; call backward() next to
   * accumulate gradients.
   */
  forwardLoss(batch: Batch): { loss: Tensor<'f32'>; logp: Tensor<'f32'> } {
    if (!batch.targets || !batch.weights) throw new Error('forwardLoss needs batch.targets and batch.weights');
    const ws = this.prepared(batch);
    this.keepLossRows(batch.targets, ws);
    this.body(ws);
    const { logits, rows } = this.lossHead(ws);
    // Tokens without logits keep their outputs: zero, as the kernel writes an ignored token's.
    if (rows) for (const out of [ws.tokenLoss, ws.logp]) fill(this.rt, out, 0);
    crossEntropy(this.rt, { logits, targets: ws.targets, weights: ws.weights, loss: ws.tokenLoss, logp: ws.logp, rows });
    ws.lossReady = true;
    return { loss: ws.tokenLoss, logp: ws.logp };
  }

  /**
   * Records forward + the fused policy-gradient loss (PPO clipped surrogate). `perToken`
   * holds 4 numbers per token: weight (the token mean's 1/count, 0 off the response),
   * advantage, old log-prob and reference log-prob. Returns [B·T, 3]: loss, log-prob and
   * entropy per token; call backward() next.
   */
  forwardPolicyLoss(batch: Batch, perToken: ArrayLike<number>, k: PolicyLossCoefficients): Tensor<'f32'> {
    if (!batch.targets) throw new Error('forwardPolicyLoss needs batch.targets');
    if (perToken.length !== 4 * batch.B * batch.T) throw new Error(`policy inputs hold ${perToken.length} values, expected 4 per token (${4 * batch.B * batch.T})`);
    const ws = this.prepared(batch);
    this.rt.write(ws.policyIn, Float32Array.from(perToken));
    this.keepLossRows(batch.targets, ws);
    this.body(ws);
    const { logits, rows } = this.lossHead(ws);
    if (rows) fill(this.rt, ws.policyOut, 0);
    policyLoss(this.rt, { logits, targets: ws.targets, tokIn: ws.policyIn, tokOut: ws.policyOut, rows }, k);
    ws.lossReady = true;
    return ws.policyOut;
  }

  /** Records the backward pass of the last forwardLoss, adding into the gradients. */
  backward(): void {
    const ws = this.ws;
    if (!ws?.lossReady) throw new Error('backward() needs a forwardLoss() or forwardPolicyLoss() first');
    ws.lossReady = false;
    const c = this.config;
    const rt = this.rt;
    const hd = headDim(c);
    const shape = attentionShape(c, ws.B, ws.T);
    const d = ws.grad;
    // With an adapter the base is frozen: no weight gradient of it is computed.
    const frozen = this.adapter !== null;
    const gw = (n: string) => (frozen ? undefined : this.base.grad(n));
    // Over an f16 base, each dX = dY·W in f16 on the matrix units, its rows scaled (see halfMath).
    const half = (w: Tensor) => this.halfMath(false, w);
    // LM head: logits = lnf · Wᵀ, on every row or on the loss's rows gathered (lossHead).
    const head = this.lmHead();
    const n = ws.headRowCount;
    if (n === null) {
      matmul(rt, { a: ws.logits, b: head, out: d.ln, ...half(head) });
      if (!frozen) matmul(rt, { a: ws.logits, b: ws.lnf, transA: true, out: this.lmHeadGrad(), beta: 1 });
    } else {
      const logits = view(ws.logits, [n, c.vocab_size]);
      // d.res is free until the final norm's backward writes it: the gathered rows' d(norm) go
      // there, then into their rows of d.ln; the other rows' stay 0 (they have no loss).
      const dIn = view(d.res, [n, c.hidden_size]);
      matmul(rt, { a: logits, b: head, out: dIn, ...half(head) });
      if (!frozen) matmul(rt, { a: logits, b: view(ws.headIn, [n, c.hidden_size]), transA: true, out: this.lmHeadGrad(), beta: 1 });
      fill(rt, d.ln, 0);
      embeddingBackward(rt, view(ws.headScatter, [3 * n + 1]), n, dIn, d.ln);
    }
    rmsnormBackward(rt, {
      x: ws.residual[c.num_hidden_layers]!, w: this.param('model.norm.weight'), rstd: ws.rstdf,
      dy: d.ln, dx: d.res, dw: gw('model.norm.weight'), accumulate: false,
    });
    const qd = c.num_attention_heads * hd;
    const kvd = c.num_key_value_heads * hd;
    const S = qd + 2 * kvd;
    const I = c.intermediate_size;
    const H = c.hidden_size;
    for (let l = c.num_hidden_layers - 1; l >= 0; l--) {
      const name = (n: string) => `model.layers.${l}.${n}`;
      const p = (n: string) => this.param(name(n));
      const g = (n: string) => gw(name(n));
      const a = ws.layers[l]!;
      // MLP: next = mid + act · Wdᵀ, act = swiglu(ln2 · [Wg | Wu]ᵀ).
      const down = p('mlp.down_proj.weight');
      matmul(rt, { a: d.res, b: down, out: d.act, ...half(down) });
      if (!frozen) matmul(rt, { a: d.res, b: a.act, transA: true, out: g('mlp.down_proj.weight'), beta: 1 });
      this.adapter?.backward(l, ['down_proj'], a.act, d.res, d.act, a.lora, d.loraU);
      swigluBackward(rt, a.gu, I, d.act, d.gu);
      const gu = this.block(name('mlp.gate_proj.weight'), [2 * I, H]);
      matmul(rt, { a: d.gu, b: gu, out: d.ln, ...half(gu) });
      if (!frozen) matmul(rt, { a: d.gu, b: a.ln2, transA: true, out: this.block(name('mlp.gate_proj.weight'), [2 * I, H], true), beta: 1 });
      this.adapter?.backward(l, ['gate_proj', 'up_proj'], a.ln2, d.gu, d.ln, a.lora, d.loraU);
      rmsnormBackward(rt, {
        x: a.mid, w: p('post_attention_layernorm.weight'), rstd: a.rstd2,
        dy: d.ln, dx: d.res, dw: g('post_attention_layernorm.weight'), accumulate: true,
      });
      // Attention: mid = x + att · Woᵀ, with q|k|v = ln1 · [Wq | Wk | Wv]ᵀ (+ b) rotated.
      const o = p('self_attn.o_proj.weight');
      matmul(rt, { a: d.res, b: o, out: d.att, ...half(o) });
      if (!frozen) matmul(rt, { a: d.res, b: a.att, transA: true, out: g('self_attn.o_proj.weight'), beta: 1 });
      this.adapter?.backward(l, ['o_proj'], a.att, d.res, d.att, a.lora, d.loraU);
      const { q: dq, k: dk, v: dv } = qkvViews(d.qkv, qd, kvd);
      attentionBackward(rt, shape, { ...qkvViews(a.qkv, qd, kvd), mask: ws.mask, o: a.att, lse: a.lse, dO: d.att, d: d.D, dq, dk, dv });
      rope(rt, d.qkv, { heads: c.num_attention_heads + c.num_key_value_heads, hd, stride: S, col: 0 }, ws.positions, this.rope, true);
      const qkv = this.block(name('self_attn.q_proj.weight'), [S, H]);
      matmul(rt, { a: d.qkv, b: qkv, out: d.ln, ...half(qkv) });
      if (!frozen) {
        matmul(rt, { a: d.qkv, b: a.ln1, transA: true, out: this.block(name('self_attn.q_proj.weight'), [S, H], true), beta: 1 });
        if (c.attention_bias) {
          colReduce(rt, { x: d.qkv, out: this.block(name('self_attn.q_proj.bias'), [S], true), accumulate: true });
        }
      }
      this.adapter?.backward(l, ['q_proj', 'k_proj', 'v_proj'], a.ln1, d.qkv, d.ln, a.lora, d.loraU);
      rmsnormBackward(rt, {
        x: ws.residual[l]!, w: p('input_layernorm.weight'), rstd: a.rstd1,
        dy: d.ln, dx: d.res, dw: g('input_layernorm.weight'), accumulate: true,
      });
    }
    if (frozen) return;
    const { index, unique } = tokenIndex(ws.tokenIds);
    const indexT = rt.upload(index, [index.length], 'u32');
    embeddingBackward(rt, indexT, unique, d.res, this.base.grad('model.embed_tokens.weight'));
    rt.release(indexT);
  }

  /** The parameters as a flat host array (for checkpoints). */
  async readParams(): Promise<Float32Array> {
    return this.base.read();
  }

  destroy(): void {
    this.ws?.destroy();
    this.ws = null;
    this.disableLora();
    this.base.destroy();
    this.rt.release(this.rope.cos, this.rope.sin);
  }
}

/** Initial weights for a model trained from scratch, reproducible from the seed. */
export function initialParams(c: LlamaConfig, seed: number, std = 0.02): Float32Array {
  const flat = new Float32Array(flatParamSize(c));
  const gauss = normal(rng(seed));
  const residualStd = std / Math.sqrt(2 * c.num_hidden_layers);
  for (const s of paramSpecs(c)) {
    const data = flat.subarray(s.offset, s.offset + s.size);
    if (s.name.endsWith('layernorm.weight') || s.name === 'model.norm.weight') data.fill(1);
    else if (s.name.endsWith('.bias')) data.fill(0);
    else {
      const sd = s.name.endsWith('o_proj.weight') || s.name.endsWith('down_proj.weight') ? residualStd : std;
      for (let i = 0; i < data.length; i++) data[i] = gauss() * sd;
    }
  }
  return flat;
}

/** Causal attention over B sequences of T tokens whose q, k, v sit in fused q|k|v rows. */
export function attentionShape(c: LlamaConfig, B: number, T: number): AttentionShape {
  const hd = headDim(c);
  const stride = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd;
  return { B, T, heads: c.num_attention_heads, kvHeads: c.num_key_value_heads, hd, qStride: stride, kvStride: stride };
}

/** q, k and v inside fused q|k|v rows: views offset by their first column. */
function qkvViews(qkv: Tensor, qd: number, kvd: number): QkvViews {
  return { q: view(qkv, [qkv.size], 0), k: view(qkv, [qkv.size - qd], qd), v: view(qkv, [qkv.size - qd - kvd], qd + kvd) };
}

/** Options of Transformer.load. */
export interface LoadOptions {
  /** Follows each tensor's upload. */
  onTensor?: (spec: ParamSpec) => void;
  /** A smaller per-buffer limit than the device's (tests). */
  maxBufferBytes?: number;
  /** How to store the base: f16 halves its memory and freezes it (LoRA only). */
  dtype?: BaseDtype;
}
