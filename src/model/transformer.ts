import { HalfWriter } from '../gpu/halfWriter';
import { copyColumns, fill, narrowToHalf, widenHalf } from '../gpu/ops/elementwise';
import { matmul, type MatmulArgs } from '../gpu/ops/matmul';
import { swigluBackward, swigluForward } from '../gpu/ops/mlp';
import { colReduce } from '../gpu/ops/reduce';
import type { Runtime } from '../gpu/runtime';
import { BYTES_PER_ELEMENT, view, type DType, type Tensor } from '../gpu/tensor';
import { HALF_MAX } from '../util/half';
import { normal, rng } from '../util/random';
import { flatParamSize, headDim, paramSpecs, ropeInvFreq, validateConfig, type LlamaConfig, type ParamSpec } from './config';
import { checkActivationsFit, paramChunks, type BaseDtype } from './memory';
import { adaptedTarget, loraName, loraScale, loraSpecs, orderedTargets, targetGeometry, targetWeightName, type LoraConfig, type LoraTarget, type TargetGeometry } from './lora';
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

/** Activation buffers of one layer on N rows: kept from forward for backward, or scratch for inference. */
export interface LayerActs {
  /** Fused projections: each row is q | k | v (rotated in place), and gate | up. */
  ln1: Tensor; rstd1: Tensor; qkv: Tensor; att: Tensor; lse: Tensor;
  mid: Tensor; ln2: Tensor; rstd2: Tensor; gu: Tensor; act: Tensor;
  /** With LoRA: each target's x·Aᵀ [N, r] (kept for backward) and a shared staging area. */
  lora?: LoraActs;
}

export interface LoraActs {
  u: Map<LoraTarget, Tensor>;
  /** [N, widest fused target]: a target's B·A·x before it joins its fused q|k|v or gate|up rows. */
  stage: Tensor;
}

type Alloc = (shape: number[], label: string) => Tensor;

/** What a matmul computes from its A as it reads it (see MatmulArgs). */
type Prologue = Pick<MatmulArgs, 'swiglu' | 'norm'>;

/** The staging area LoRA's fused targets share, for N rows (one per workspace, not per layer). */
export function loraStage(c: LlamaConfig, lora: LoraConfig, N: number, f: Alloc): Tensor {
  const widths = orderedTargets(lora).map((t) => targetGeometry(c, t)).filter((g) => g.block === 'qkv' || g.block === 'gate_up');
  return f([N, Math.max(1, ...widths.map((g) => g.out))], 'lora.stage');
}

/**
 * Allocates one layer's activations for N rows through `f` (shape, label) → tensor; with an
 * adapter, its per-target activations too, staging through `lora.stage`.
 */
export function layerActs(c: LlamaConfig, N: number, f: Alloc, lora?: { config: LoraConfig; stage: Tensor }): LayerActs {
  const H = c.hidden_size;
  const hd = headDim(c);
  const qd = c.num_attention_heads * hd;
  const kvd = c.num_key_value_heads * hd;
  const I = c.intermediate_size;
  const acts: LayerActs = {
    ln1: f([N, H], 'ln1'), rstd1: f([N], 'rstd1'), qkv: f([N, qd + 2 * kvd], 'qkv'),
    att: f([N, qd], 'att'), lse: f([N, c.num_attention_heads], 'lse'), mid: f([N, H], 'mid'), ln2: f([N, H], 'ln2'),
    rstd2: f([N], 'rstd2'), gu: f([N, 2 * I], 'gate_up'), act: f([N, I], 'act'),
  };
  if (lora) {
    const r = lora.config.rank;
    acts.lora = { u: new Map(orderedTargets(lora.config).map((t) => [t, f([N, r], `lora.${t}.u`)])), stage: lora.stage };
  }
  return acts;
}

/** Every tensor of `a` cut to its first n rows. */
export function actsRows(a: LayerActs, n: number): LayerActs {
  const rows = (t: Tensor) => view(t, [n, ...t.shape.slice(1)]);
  const { lora, ...plain } = a;
  const out = Object.fromEntries(Object.entries(plain).map(([k, t]) => [k, rows(t as Tensor)])) as unknown as LayerActs;
  if (lora) out.lora = { u: new Map([...lora.u].map(([k, t]) => [k, rows(t)])), stage: rows(lora.stage) };
  return out;
}

/**
 * Parameters in the flat layout of their specs, held in one GPU buffer or, beyond what one
 * buffer binds, in consecutive runs of it (`starts`: each buffer's first flat offset), with
 * named views; and their gradients once asked for (one flat buffer: training needs it whole).
 * An f16 set is frozen: it has no flat f32 view and no gradients.
 */
export class ParamSet {
  private readonly views = new Map<string, Tensor>();
  private gradBuffer: Tensor<'f32'> | null = null;
  private readonly gradViews = new Map<string, Tensor>();
  /** Elements in all. */
  readonly size: number;
  readonly dtype: BaseDtype;

  constructor(
    private readonly rt: Runtime,
    readonly specs: ParamSpec[],
    readonly buffers: readonly Tensor<'f32' | 'f16'>[],
    private readonly starts: readonly number[] = [0],
  ) {
    this.size = specs.reduce((n, s) => n + s.size, 0);
    this.dtype = buffers[0]!.dtype;
    for (const s of specs) this.views.set(s.name, this.at(s.offset, s.shape));
  }

  /** A view of `shape` at a flat offset (it must lie within one buffer). */
  at(offset: number, shape: readonly number[]): Tensor {
    const k = bufferIndex(this.starts, offset);
    return view(this.buffers[k]!, shape, offset - this.starts[k]!);
  }

  /** The parameters as one flat buffer, where they fit in one. */
  get params(): Tensor<'f32'> {
    if (this.dtype === 'f16') {
      throw new Error('the base weights are stored in f16, frozen: train a LoRA adapter, or load the model in f32 to train it in full');
    }
    if (this.buffers.length > 1) {
      throw new Error(
        `the model's ${(this.size / 1e6).toFixed(1)} M parameters span ${this.buffers.length} GPU buffers (more than one binds): ` +
          'it can generate and train a LoRA adapter, but not train in full here',
      );
    }
    return this.buffers[0] as Tensor<'f32'>;
  }

  param(name: string): Tensor {
    const t = this.views.get(name);
    if (!t) throw new Error(`no parameter "${name}"`);
    return t;
  }

  has(name: string): boolean {
    return this.views.has(name);
  }

  /** The flat gradient buffer (allocated, zeroed, on first use). */
  get grads(): Tensor<'f32'> {
    if (!this.gradBuffer) {
      // Gradients are one flat buffer, like the parameters they pair with: refused when split.
      void this.params;
      this.gradBuffer = this.rt.empty([this.size], 'f32', 'grads');
      for (const s of this.specs) this.gradViews.set(s.name, view(this.gradBuffer, s.shape, s.offset));
      fill(this.rt, this.gradBuffer, 0);
    }
    return this.gradBuffer;
  }

  grad(name: string): Tensor {
    void this.grads;
    const t = this.gradViews.get(name);
    if (!t) throw new Error(`no parameter "${name}"`);
    return t;
  }

  /** The parameters as one flat host array (read one buffer at a time: the host holds one part beside it). */
  async read(): Promise<Float32Array> {
    const flat = new Float32Array(this.size);
    for (let k = 0; k < this.buffers.length; k++) flat.set(await this.rt.readF32(this.buffers[k]!), this.starts[k]!);
    return flat;
  }

  /** Throws, naming the tensor, if a value lies beyond half precision's range (read one buffer at a time). */
  async checkHalfRange(): Promise<void> {
    for (let k = 0; k < this.buffers.length; k++) {
      const part = await this.rt.read(this.buffers[k]!);
      for (const s of this.specs) {
        const from = s.offset - this.starts[k]!;
        if (from >= 0 && from < part.length) checkHalfRange(s.name, part.subarray(from, from + s.size));
      }
    }
  }

  /** Gives the gradient buffer back (a set that no longer trains). */
  dropGrads(): void {
    if (this.gradBuffer) this.rt.release(this.gradBuffer);
    this.gradBuffer = null;
    this.gradViews.clear();
  }

  destroy(): void {
    this.dropGrads();
    this.rt.release(...this.buffers);
  }
}

/** A LoRA adapter on the model: its configuration, scale and weights. */
interface Adapter {
  config: LoraConfig;
  scale: number;
  set: ParamSet;
  /**
   * Inference's copy of each weight block the adapter adapts (q|k|v, o, gate|up, down of
   * every layer), in the base's dtype, with scale · B·A added: an inference forward then
   * costs no dispatch more than the base's. Made on the first inference forward, remade after
   * the adapter changes (see paramsForUpdate).
   */
  merged: Map<string, Tensor>[] | null;
  mergedStale: boolean;
}

/** The fused weight blocks a layer's projections read, by the name of their first weight. */
const BLOCK_FIRST: Record<TargetGeometry['block'], string> = {
  qkv: 'self_attn.q_proj.weight',
  o: 'self_attn.o_proj.weight',
  gate_up: 'mlp.gate_proj.weight',
  down: 'mlp.down_proj.weight',
};

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
  private adapter: Adapter | null = null;
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
    this.dropMerged();
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
    if (this.adapter) this.adapter.mergedStale = true;
    return this.trainable.params;
  }

  /**
   * How inference applies an adapter: merged into a copy of the weight blocks it adapts, in
   * the base's dtype (no dispatch more than the base's; those blocks' memory once more), or
   * apart through its own matmuls as training does (about 19 small dispatches per layer with
   * all seven targets). Null (the default) merges on an f32 base and keeps apart on an f16
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
    const specs = loraSpecs(this.config, config);
    const size = specs.reduce((n, s) => n + s.size, 0);
    if (flat.length !== size) throw new Error(`the adapter holds ${flat.length} values; rank ${config.rank} on ${config.targets.join(', ')} needs ${size}`);
    this.disableLora();
    this.base.dropGrads();
    this.ws?.destroy();
    this.ws = null;
    this.adapter = {
      config: { ...config, targets: orderedTargets(config) },
      scale: loraScale(config),
      set: new ParamSet(this.rt, specs, [this.rt.upload(flat, [size])]),
      merged: null,
      mergedStale: true,
    };
    if (options.merged) this.subtractAdapterFromBase();
  }

  /** Drops the adapter (the base trains in full again). */
  disableLora(): void {
    if (!this.adapter) return;
    this.ws?.destroy();
    this.ws = null;
    this.adapter.set.destroy();
    this.dropMerged();
    this.adapter = null;
  }

  /** Returns the adapter's merged inference copy to the pool (remade when next needed). */
  private dropMerged(): void {
    const ad = this.adapter;
    if (!ad?.merged) return;
    for (const layer of ad.merged) this.rt.release(...layer.values());
    ad.merged = null;
    ad.mergedStale = true;
  }

  /**
   * Layer l's adapted weight blocks with the adapter merged in, for an inference forward, or
   * null without an adapter (or with merging off). Records the merge first when the adapter
   * changed since the last one: base block → f32 (widened from f16), += scale · B·A for each
   * adapted target's rows, → the copy (narrowed to f16 for an f16 base).
   */
  private mergedLayer(l: number): Map<string, Tensor> | null {
    const ad = this.adapter;
    if (!ad || !(this.mergeAdapterForInference ?? this.baseDtype === 'f32')) return null;
    if (ad.mergedStale || !ad.merged) {
      const rt = this.rt;
      const c = this.config;
      ad.merged ??= Array.from({ length: c.num_hidden_layers }, (_, layer) => {
        const blocks = new Map<string, Tensor>();
        for (const t of ad.config.targets) {
          const first = BLOCK_FIRST[targetGeometry(c, t).block];
          if (!blocks.has(first)) blocks.set(first, rt.empty(this.blockOf(layer, first).shape, this.baseDtype, 'weight.merged'));
        }
        return blocks;
      });
      ad.merged.forEach((blocks, layer) => {
        for (const [first, copy] of blocks) {
          const base = this.blockOf(layer, first);
          // An f32 copy is merged in place; an f16 one through an f32 block, rounded once.
          const w = copy.dtype === 'f32' ? copy : rt.empty(copy.shape, 'f32', 'weight.f32');
          if (base.dtype === 'f16') widenHalf(rt, base, w);
          else rt.copy(base, w);
          for (const t of ad.config.targets) {
            const g = targetGeometry(c, t);
            if (BLOCK_FIRST[g.block] === first) this.addAdapter(layer, t, view(w, [g.out, g.in], g.col * g.in), 1);
          }
          if (w !== copy) {
            narrowToHalf(rt, w, copy);
            rt.release(w);
          }
        }
      });
      // A trace records nothing: the merge is still to be made.
      ad.mergedStale = rt.isTracing;
    }
    return ad.merged[l]!;
  }

  /** The fused weight block of layer l that starts at its weight `first` (e.g. q|k|v at q_proj). */
  private blockOf(l: number, first: string): Tensor {
    const name = `model.layers.${l}.${first}`;
    const c = this.config;
    const rows = { 'self_attn.q_proj.weight': (c.num_attention_heads + 2 * c.num_key_value_heads) * headDim(c), 'mlp.gate_proj.weight': 2 * c.intermediate_size }[first];
    return rows === undefined ? this.base.param(name) : this.block(name, [rows, this.spec(name).shape[1]!]);
  }

  /** Records W −= scale · B·A for every adapted weight of the base (undoing a merge); an f16 W through an f32 copy. */
  private subtractAdapterFromBase(): void {
    const ad = this.adapter!;
    for (let l = 0; l < this.config.num_hidden_layers; l++) {
      for (const t of ad.config.targets) {
        const W = this.base.param(targetWeightName(this.config, l, t));
        const out = W.dtype === 'f32' ? W : this.f32Copy(W);
        this.addAdapter(l, t, out, -1);
        if (out !== W) {
          narrowToHalf(this.rt, out, W);
          this.rt.release(out);
        }
      }
    }
  }

  /** Records an f32 copy of a base weight (widened if stored in f16); the caller releases it. */
  private f32Copy(w: Tensor): Tensor<'f32'> {
    const copy = this.rt.empty(w.shape, 'f32', 'weight.f32');
    if (w.dtype === 'f16') widenHalf(this.rt, w, copy);
    else this.rt.copy(w, copy);
    return copy;
  }

  /** Records w += sign · scale · B·A of the adapter's target `t` in layer `l`. */
  private addAdapter(l: number, t: LoraTarget, w: Tensor, sign: 1 | -1): void {
    const ad = this.adapter!;
    matmul(this.rt, { a: ad.set.param(loraName(this.config, l, t, 'B')), b: ad.set.param(loraName(this.config, l, t, 'A')), out: w, alpha: sign * ad.scale, beta: 1 });
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
    const target = this.adapter ? adaptedTarget(this.config, name, this.adapter.config) : null;
    if (!target) return this.rt.readF32(base);
    const w = this.f32Copy(base);
    this.addAdapter(target.layer, target.target, w, 1);
    const values = await this.rt.read(w);
    this.rt.release(w);
    return values;
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
    const ws = this.workspace(batch.B, batch.T);
    this.upload(batch, ws);
    const shape = attentionShape(this.config, batch.B, batch.T);
    this.embed(ws.tokens, ws.residual[0]!);
    for (let l = 0; l < this.config.num_hidden_layers; l++) {
      this.layerForward(l, ws.residual[l]!, ws.residual[l + 1]!, ws.layers[l]!, ws.positions, (qkv, out) =>
        attentionForward(this.rt, shape, { ...qkv, mask: ws.mask, ...out }),
      );
    }
    this.headForward(ws.residual[this.config.num_hidden_layers]!, ws.lnf, ws.rstdf, ws.logits);
    return ws.logits;
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
    // Inference reads the blocks an adapter adapts from its merged copy, and adds nothing more.
    const merged = infer ? this.mergedLayer(l) : null;
    const w = (first: string, base: Tensor) => merged?.get(first) ?? base;
    const adapt = merged ? () => {} : this.loraForward.bind(this);
    const [ln1, in1] = this.normed(x, p('input_layernorm.weight'), a.ln1, a.rstd1, fuse);
    matmul(rt, {
      a: ln1,
      b: w(BLOCK_FIRST.qkv, this.block(name('self_attn.q_proj.weight'), [S, H])),
      transB: true,
      bias: c.attention_bias ? this.block(name('self_attn.q_proj.bias'), [S]) : undefined,
      out: a.qkv,
      ...in1,
    });
    adapt(l, ['q_proj', 'k_proj', 'v_proj'], ln1, a.qkv, a, in1);
    // q and k heads are adjacent at the start of each fused row: one rotation covers both.
    if (!attendRotates) rope(rt, a.qkv, { heads: c.num_attention_heads + c.num_key_value_heads, hd, stride: S, col: 0 }, positions, this.rope);
    attend(qkvViews(a.qkv, qd, kvd), { o: a.att, lse: a.lse });
    const mid = infer ? x : a.mid;
    if (mid !== x) rt.copy(x, mid);
    matmul(rt, { a: a.att, b: w(BLOCK_FIRST.o, p('self_attn.o_proj.weight')), transB: true, out: mid, beta: 1 });
    adapt(l, ['o_proj'], a.att, mid, a);
    const [ln2, in2] = this.normed(mid, p('post_attention_layernorm.weight'), a.ln2, a.rstd2, fuse);
    matmul(rt, { a: ln2, b: w(BLOCK_FIRST.gate_up, this.block(name('mlp.gate_proj.weight'), [2 * I, H])), transB: true, out: a.gu, ...in2 });
    adapt(l, ['gate_proj', 'up_proj'], ln2, a.gu, a, in2);
    const down = w(BLOCK_FIRST.down, p('mlp.down_proj.weight'));
    if (fuse) {
      matmul(rt, { a: a.gu, b: down, transB: true, out: next, beta: 1, swiglu: true });
      adapt(l, ['down_proj'], a.gu, next, a, { swiglu: true });
      return;
    }
    swigluForward(rt, a.gu, I, a.act);
    if (next !== mid) rt.copy(mid, next);
    matmul(rt, { a: a.act, b: down, transB: true, out: next, beta: 1 });
    adapt(l, ['down_proj'], a.act, next, a);
  }

  /**
   * Adds scale · (x·Aᵀ)·Bᵀ of each adapted target among `targets` into its columns of `y` (the
   * block the base projection wrote), keeping x·Aᵀ in `a.lora.u` for the backward pass.
   * `prologue`: what the matmuls reading x compute from it first (inference's norm or SwiGLU).
   */
  private loraForward(l: number, targets: LoraTarget[], x: Tensor, y: Tensor, a: LayerActs, prologue: Prologue = {}): void {
    const ad = this.adapter;
    if (!ad) return;
    if (!a.lora) throw new Error('these activations were laid out before the LoRA adapter was added');
    const { rt, config: c } = this;
    for (const t of targets) {
      const u = a.lora.u.get(t);
      if (!u) continue;
      const g = targetGeometry(c, t);
      matmul(rt, { a: x, b: ad.set.param(loraName(c, l, t, 'A')), transB: true, out: u, ...prologue });
      const B = ad.set.param(loraName(c, l, t, 'B'));
      if (g.block === 'o' || g.block === 'down') {
        matmul(rt, { a: u, b: B, transB: true, alpha: ad.scale, beta: 1, out: y });
      } else {
        const stage = view(a.lora.stage, [u.shape[0]!, g.out]);
        matmul(rt, { a: u, b: B, transB: true, out: stage });
        copyColumns(rt, stage, 0, y, g.col, g.out, { alpha: ad.scale, accumulate: true });
      }
    }
  }

  /**
   * The backward pass of loraForward for the targets among `targets`: adapter gradients from
   * dy (the gradient of the block's rows) and x, and dx += the adapters' share.
   */
  private loraBackward(l: number, targets: LoraTarget[], x: Tensor, dy: Tensor, dx: Tensor, a: LayerActs, du: Tensor): void {
    const ad = this.adapter;
    if (!ad) return;
    const { rt, config: c } = this;
    for (const t of targets) {
      const u = a.lora?.u.get(t);
      if (!u) continue;
      const g = targetGeometry(c, t);
      let dyT = dy;
      if (g.block === 'qkv' || g.block === 'gate_up') {
        dyT = view(a.lora!.stage, [u.shape[0]!, g.out]);
        copyColumns(rt, dy, g.col, dyT, 0, g.out);
      }
      const [A, B] = [loraName(c, l, t, 'A'), loraName(c, l, t, 'B')];
      matmul(rt, { a: dyT, b: u, transA: true, alpha: ad.scale, beta: 1, out: ad.set.grad(B) });
      matmul(rt, { a: dyT, b: ad.set.param(B), alpha: ad.scale, out: du });
      matmul(rt, { a: du, b: x, transA: true, beta: 1, out: ad.set.grad(A) });
      matmul(rt, { a: du, b: ad.set.param(A), beta: 1, out: dx });
    }
  }

  /**
   * Records the final norm and the LM head: logits[n, vocab] from the last residual x[n, H],
   * the norm written to `lnf` and `rstdf` (kept for training's backward pass), or in
   * inference with fused prologues (`fuse`) computed by the LM head's matmul where its
   * vocabulary is small (see HEAD_NORM_ONCE_COLUMNS).
   */
  headForward(x: Tensor, lnf: Tensor, rstdf: Tensor, logits: Tensor, fuse = false): void {
    const inMatmul = fuse && this.rt.fusedPrologues && this.config.vocab_size <= HEAD_NORM_ONCE_COLUMNS;
    const [a, prologue] = this.normed(x, this.param('model.norm.weight'), lnf, rstdf, inMatmul);
    matmul(this.rt, { a, b: this.lmHead(), transB: true, out: logits, ...prologue });
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
    const logits = this.forward(batch);
    const ws = this.ws!;
    crossEntropy(this.rt, { logits, targets: ws.targets, weights: ws.weights, loss: ws.tokenLoss, logp: ws.logp });
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
    const logits = this.forward(batch);
    const ws = this.ws!;
    this.rt.write(ws.policyIn, Float32Array.from(perToken));
    policyLoss(this.rt, { logits, targets: ws.targets, tokIn: ws.policyIn, tokOut: ws.policyOut }, k);
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
    // LM head: logits = lnf · Wᵀ.
    matmul(rt, { a: ws.logits, b: this.lmHead(), out: d.ln });
    if (!frozen) matmul(rt, { a: ws.logits, b: ws.lnf, transA: true, out: this.lmHeadGrad(), beta: 1 });
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
      matmul(rt, { a: d.res, b: p('mlp.down_proj.weight'), out: d.act });
      if (!frozen) matmul(rt, { a: d.res, b: a.act, transA: true, out: g('mlp.down_proj.weight'), beta: 1 });
      this.loraBackward(l, ['down_proj'], a.act, d.res, d.act, a, d.loraU);
      swigluBackward(rt, a.gu, I, d.act, d.gu);
      matmul(rt, { a: d.gu, b: this.block(name('mlp.gate_proj.weight'), [2 * I, H]), out: d.ln });
      if (!frozen) matmul(rt, { a: d.gu, b: a.ln2, transA: true, out: this.block(name('mlp.gate_proj.weight'), [2 * I, H], true), beta: 1 });
      this.loraBackward(l, ['gate_proj', 'up_proj'], a.ln2, d.gu, d.ln, a, d.loraU);
      rmsnormBackward(rt, {
        x: a.mid, w: p('post_attention_layernorm.weight'), rstd: a.rstd2,
        dy: d.ln, dx: d.res, dw: g('post_attention_layernorm.weight'), accumulate: true,
      });
      // Attention: mid = x + att · Woᵀ, with q|k|v = ln1 · [Wq | Wk | Wv]ᵀ (+ b) rotated.
      matmul(rt, { a: d.res, b: p('self_attn.o_proj.weight'), out: d.att });
      if (!frozen) matmul(rt, { a: d.res, b: a.att, transA: true, out: g('self_attn.o_proj.weight'), beta: 1 });
      this.loraBackward(l, ['o_proj'], a.att, d.res, d.att, a, d.loraU);
      const { q: dq, k: dk, v: dv } = qkvViews(d.qkv, qd, kvd);
      attentionBackward(rt, shape, { ...qkvViews(a.qkv, qd, kvd), mask: ws.mask, o: a.att, lse: a.lse, dO: d.att, d: d.D, dq, dk, dv });
      rope(rt, d.qkv, { heads: c.num_attention_heads + c.num_key_value_heads, hd, stride: S, col: 0 }, ws.positions, this.rope, true);
      matmul(rt, { a: d.qkv, b: this.block(name('self_attn.q_proj.weight'), [S, H]), out: d.ln });
      if (!frozen) {
        matmul(rt, { a: d.qkv, b: a.ln1, transA: true, out: this.block(name('self_attn.q_proj.weight'), [S, H], true), beta: 1 });
        if (c.attention_bias) {
          colReduce(rt, { x: d.qkv, out: this.block(name('self_attn.q_proj.bias'), [S], true), accumulate: true });
        }
      }
      this.loraBackward(l, ['q_proj', 'k_proj', 'v_proj'], a.ln1, d.qkv, d.ln, a, d.loraU);
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

/** Activation and gradient-scratch buffers for one batch shape, allocated once. */
class Workspace {
  readonly tokens: Tensor<'u32'>;
  readonly mask: Tensor<'u32'>;
  readonly positions: Tensor<'u32'>;
  readonly targets: Tensor<'i32'>;
  readonly weights: Tensor;
  readonly residual: Tensor[];
  readonly layers: LayerActs[];
  readonly lnf: Tensor;
  readonly rstdf: Tensor;
  readonly logits: Tensor;
  readonly tokenLoss: Tensor<'f32'>;
  readonly logp: Tensor<'f32'>;
  /** Policy-gradient loss inputs (4 per token) and outputs (3 per token). */
  readonly policyIn: Tensor<'f32'>;
  readonly policyOut: Tensor<'f32'>;
  /** `loraU`: an adapter's d(x·Aᵀ) for one target at a time. */
  readonly grad: { res: Tensor; ln: Tensor; att: Tensor; qkv: Tensor; D: Tensor; act: Tensor; gu: Tensor; loraU: Tensor };
  tokenIds: ArrayLike<number> = [];
  lossReady = false;
  private readonly all: Tensor[] = [];

  constructor(private readonly rt: Runtime, c: LlamaConfig, readonly B: number, readonly T: number, lora: LoraConfig | null) {
    const N = B * T;
    const H = c.hidden_size;
    const hd = headDim(c);
    const qd = c.num_attention_heads * hd;
    const kvd = c.num_key_value_heads * hd;
    const I = c.intermediate_size;
    const nH = c.num_attention_heads;
    const f = (shape: number[], label: string) => this.track(rt.empty(shape, 'f32', label));
    this.tokens = this.track(rt.empty([N], 'u32', 'tokens'));
    this.mask = this.track(rt.empty([N], 'u32', 'mask'));
    this.positions = this.track(rt.empty([N], 'u32', 'positions'));
    this.targets = this.track(rt.empty([N], 'i32', 'targets'));
    this.weights = f([N], 'weights');
    this.residual = Array.from({ length: c.num_hidden_layers + 1 }, (_, l) => f([N, H], `residual.${l}`));
    const stage = lora ? loraStage(c, lora, N, f) : null;
    this.layers = Array.from({ length: c.num_hidden_layers }, () => layerActs(c, N, f, lora && stage ? { config: lora, stage } : undefined));
    this.lnf = f([N, H], 'lnf');
    this.rstdf = f([N], 'rstdf');
    this.logits = f([N, c.vocab_size], 'logits');
    this.tokenLoss = f([N], 'token_loss');
    this.logp = f([N], 'logp');
    this.policyIn = f([N * 4], 'policy_in');
    this.policyOut = f([N * 3], 'policy_out');
    this.grad = {
      res: f([N, H], 'd.res'), ln: f([N, H], 'd.ln'), att: f([N, qd], 'd.att'), qkv: f([N, qd + 2 * kvd], 'd.qkv'),
      D: f([N, nH], 'd.D'), act: f([N, I], 'd.act'), gu: f([N, 2 * I], 'd.gate_up'), loraU: f([N, lora?.rank ?? 1], 'd.lora_u'),
    };
  }

  private track<D extends DType>(t: Tensor<D>): Tensor<D> {
    this.all.push(t);
    return t;
  }

  destroy(): void {
    this.rt.release(...this.all);
    this.all.length = 0;
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

/** Empty buffers for parameters placed at `starts` (see Transformer.placement). */
function placeParams(rt: Runtime, specs: ParamSpec[], starts: readonly number[], dtype: BaseDtype): ParamSet {
  const size = specs.reduce((n, s) => n + s.size, 0);
  const buffers = starts.map((start, k) => rt.empty([(starts[k + 1] ?? size) - start], dtype, `params.${k}`));
  return new ParamSet(rt, specs, buffers, starts);
}

/** Throws, naming the tensor, if a value lies beyond half precision's range. */
export function checkHalfRange(name: string, data: ArrayLike<number>): void {
  for (let i = 0; i < data.length; i++) {
    if (Math.abs(data[i]!) > HALF_MAX) throw new Error(`${name} holds ${data[i]}, beyond f16's largest value ${HALF_MAX}: keep this model's base in f32`);
  }
}

/** Which buffer holds flat offset `offset`. */
function bufferIndex(starts: readonly number[], offset: number): number {
  let k = starts.length - 1;
  while (starts[k]! > offset) k--;
  return k;
}
