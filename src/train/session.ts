/**
 * A model being fine-tuned: built from a preset or an imported checkpoint, trained with SFT,
 * exported as a Hugging Face folder. The one path the CLI and the lab's engine worker share.
 */
import type { Runtime } from '../gpu/runtime';
import type { ImportedCheckpoint, OptimizerState, PromptSet } from '../model/checkpoint';
import { writeCheckpoint, type ExportExtras } from '../model/checkpointExport';
import { memorySink, type FileSink } from '../platform/fileSink';
import { PRESETS, paramCount, type LlamaConfig, type PresetName } from '../model/config';
import { Generator, type GenerateProgress, type GenerateResult } from '../model/generate';
import type { GenerateOptions } from '../model/generateSettings';
import { checkFits, type BaseDtype, type KvDtype } from '../model/memory';
import { checkLora, importPeftAdapter, initialLora, peftAdapterFiles, type LoraConfig } from '../model/lora';
import { ByteTokenizer, HFTokenizer, type Tokenizer } from '../model/tokenizer';
import { checkHalfRange } from '../model/paramSet';
import { Transformer } from '../model/transformer';
import { AdamW, DEFAULT_ADAMW, type AdamWConfig } from './adamw';
import { packRollouts, policyStep, type PolicyStepResult, type Rollout } from './policy';
import type { PolicyLossCoefficients } from '../model/kernels/loss';
import { SftTrainer, type DataCursor, type SftExample } from './sft';
import { checkSftSettings, type SftSettings } from './sftSettings';

/** `baseDtype` f16 stores the base weights in half precision: half the memory, frozen (LoRA only). */
export type ModelSource = (
  | { kind: 'preset'; preset: PresetName; seed: number }
  | { kind: 'checkpoint'; checkpoint: ImportedCheckpoint; name: string; onProgress?: (p: LoadProgress) => void }
) & { baseDtype?: BaseDtype };

/** How far loading a checkpoint's weights has come, in the shard being read. */
export interface LoadProgress {
  file: string;
  /** 1-based, of `shards`. */
  shard: number;
  shards: number;
  /** Bytes of the shard loaded so far, of `total`. */
  bytes: number;
  total: number;
}

/** Tokens per second over completed steps, leaving out the first (it compiles pipelines and tunes matmuls). */
export class RateMeter {
  private steps = 0;
  private tokens = 0;
  private ms = 0;

  add(r: { tokens: number; ms: number }): void {
    if (this.steps++ > 0) {
      this.tokens += r.tokens;
      this.ms += r.ms;
    }
  }

  /** 0 until a step after the first has completed. */
  get tokensPerS(): number {
    return this.ms > 0 ? this.tokens / (this.ms / 1000) : 0;
  }
}

/** How the loop's policy-gradient updates run. */
export interface PolicySettings {
  /** Tokens per micro-batch (rollouts packed into rows, see packRollouts). */
  microTokens: number;
  loss: PolicyLossCoefficients;
  adamw: AdamWConfig;
}

/** Row lengths of the update are multiples of this: a run's steps reuse a few shapes. */
export const POSITION_GRANULE = 32;

export const DEFAULT_POLICY: PolicySettings = {
  microTokens: 2048,
  loss: { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 },
  // Weight decay off: a few hundred RL steps on a from-scratch model should not shrink it.
  adamw: { ...DEFAULT_ADAMW, weightDecay: 0 },
};

export class ModelSession {
  private trainer: SftTrainer | null = null;
  /** The loop's optimizer, once policy-gradient training has begun. */
  private policyOptimizer: AdamW | null = null;
  /** Moments carried in from the checkpoint, until a trainer takes them over. */
  private pendingOptimizer: OptimizerState | undefined;
  private generator: Generator | null = null;
  /** What generation's KV cache holds (GenerateOptions.kvCache), unless a call says otherwise. */
  kvCache: KvDtype = 'f32';
  /**
   * The role prompts the model has been trained with (compact | instruct): the checkpoint's
   * record, then whatever a loop run on it uses; null for a fresh preset or an unrecorded
   * checkpoint. Every checkpoint written from the session records it.
   */
  templates: PromptSet | null = null;
  /**
   * Whether the model's roles have been taught: a checkpoint's record (false for a base not
   * warmed up yet, as tiny-arith-base), true once a run trains it; false for a fresh preset.
   * A checkpoint written from the session keeps a false with its prompts.
   */
  rolesTaught = false;
  /**
   * The run settings the checkpoint's record says the model is meant to be run with (a
   * testbed's), null when it says none; every checkpoint written from the session keeps them.
   */
  labSettings: Record<string, unknown> | null = null;

  private constructor(
    readonly model: Transformer,
    readonly tokenizer: Tokenizer,
    /** Where the weights came from: a preset name or the checkpoint's name. */
    readonly origin: string,
    optimizer: OptimizerState | undefined,
  ) {
    this.pendingOptimizer = optimizer;
  }

  /**
   * A session on the source's model. `beforeLoad` runs once everything is checked (config,
   * tokenizer, the device's buffer limits), right before the weights are allocated.
   */
  static create(rt: Runtime, source: ModelSource, beforeLoad?: () => void): ModelSession {
    const dtype = source.baseDtype ?? 'f32';
    if (source.kind === 'preset') {
      const config = PRESETS[source.preset];
      if (!config) throw new Error(`unknown preset "${String(source.preset)}" (${Object.keys(PRESETS).join(', ')})`);
      Transformer.placement(rt, config, undefined, dtype);
      beforeLoad?.();
      return new ModelSession(Transformer.init(rt, config, source.seed, { dtype }), new ByteTokenizer(), source.preset, undefined);
    }
    const c = source.checkpoint;
    const tokenizer = c.tokenizerJson ? HFTokenizer.fromJson(c.tokenizerJson, c.tokenizerConfigJson) : new ByteTokenizer();
    if (tokenizer.vocabSize > c.config.vocab_size) {
      throw new Error(`${source.name}: the tokenizer has ${tokenizer.vocabSize} tokens but the model only ${c.config.vocab_size}`);
    }
    Transformer.placement(rt, c.config, undefined, dtype);
    // Refused here, before the held model is released: the import recorded the largest weight.
    if (dtype === 'f16') checkHalfRange(c.weights.largest.name, [c.weights.largest.value]);
    beforeLoad?.();
    const shards = c.weights.shards;
    const done = new Map<string, number>();
    const model = Transformer.load(rt, c.config, (spec) => c.weights.read(spec.name), {
      dtype,
      onTensor: (spec) => {
        const { file, bytes } = c.weights.where(spec.name);
        done.set(file, (done.get(file) ?? 0) + bytes);
        const shard = shards.findIndex((sh) => sh.file === file);
        source.onProgress?.({ file, shard: shard + 1, shards: shards.length, bytes: done.get(file)!, total: shards[shard]!.bytes });
      },
    });
    // A LoRA checkpoint's weights are merged: training goes on from the base it was merged into.
    if (c.lora) model.enableLora(c.lora.config, c.lora.flat, { merged: true });
    const session = new ModelSession(model, tokenizer, source.name, c.optimizer);
    session.templates = c.templates ?? null;
    session.rolesTaught = c.rolesTaught;
    session.labSettings = c.labSettings ?? null;
    return session;
  }

  /** How the base weights are stored. */
  get baseDtype(): BaseDtype {
    return this.model.baseDtype;
  }

  /**
   * Stores the base weights as `dtype` from now on (converted on the GPU). f16 freezes the
   * base: it needs a LoRA adapter first, and only the adapter's training state carries over.
   */
  async setBaseDtype(dtype: BaseDtype): Promise<void> {
    if (dtype === 'f16' && !this.lora) throw new Error('a base stored in f16 is frozen: add a LoRA adapter first');
    await this.model.setBaseDtype(dtype);
  }

  /** The LoRA adapter that trains instead of the whole model, or null. */
  get lora(): LoraConfig | null {
    return this.model.lora;
  }

  /**
   * From now on train a LoRA adapter on the frozen model (`lora`: a fresh adapter, PEFT's
   * initialisation from `seed`; `adapterFiles`: a PEFT adapter folder's files), or the whole
   * model again (null, dropping the adapter). The optimizer starts afresh either way.
   */
  setLora(lora: LoraConfig | null, options: { seed?: number; adapterFiles?: Map<string, Uint8Array> } = {}): void {
    let adapter: { lora: LoraConfig; flat: Float32Array } | null = null;
    if (!lora && !options.adapterFiles && this.baseDtype === 'f16') {
      throw new Error('the base is stored in f16, frozen: store it in f32 before training the whole model');
    }
    if (options.adapterFiles) adapter = importPeftAdapter(this.config, options.adapterFiles);
    else if (lora) {
      checkLora(lora);
      adapter = { lora, flat: initialLora(this.config, lora, options.seed ?? 0) };
    }
    this.dropTraining();
    if (adapter) this.model.enableLora(adapter.lora, adapter.flat);
    else this.model.disableLora();
  }

  /** Forgets the optimizers and the generator's buffers (laid out for the previous trainable set). */
  private dropTraining(): void {
    this.trainer?.destroy();
    this.trainer = null;
    this.policyOptimizer?.destroy();
    this.policyOptimizer = null;
    this.pendingOptimizer = undefined;
    this.generator?.release();
    this.generator = null;
  }

  get config(): LlamaConfig {
    return this.model.config;
  }

  get parameters(): number {
    return paramCount(this.model.config);
  }

  /** AdamW steps taken so far (carried over from a checkpoint unless reset). */
  get optimizerStep(): number {
    return (this.policyOptimizer ?? this.trainer?.optimizer)?.step ?? this.pendingOptimizer?.step ?? 0;
  }

  /**
   * Completes prompts with the model as trained so far. Its KV cache stays allocated for
   * the next call of the same shape.
   */
  generate(
    prompts: readonly (string | readonly number[])[],
    options?: Partial<GenerateOptions>,
    onToken?: (progress: GenerateProgress) => void,
  ): Promise<GenerateResult> {
    this.generator ??= new Generator(this.model, this.tokenizer);
    return this.generator.generate(prompts, { kvCache: this.kvCache, ...options }, onToken);
  }

  /**
   * A trainer for `settings.steps` more steps on `examples` (pairs, documents). The schedule
   * and the AdamW state continue from the previous run or the checkpoint, unless
   * `resetOptimizer`; the data from `cursor` (a resumed run's), else from its beginning.
   */
  async startSft(examples: SftExample[], settings: SftSettings, cursor?: DataCursor): Promise<SftTrainer> {
    checkSftSettings(settings);
    if (examples.length === 0) throw new Error('no examples to train on');
    if (settings.seqLen > this.config.max_position_embeddings) {
      throw new Error(`seqLen ${settings.seqLen} exceeds the model's context of ${this.config.max_position_embeddings}`);
    }
    checkFits(this.config, settings.batchSize, settings.seqLen, this.model.rt.ctx.limits.maxStorageBufferBindingSize, { lora: this.lora, baseDtype: this.baseDtype });
    const resume = settings.resetOptimizer ? undefined : await this.optimizerState();
    this.trainer?.destroy();
    this.trainer = null;
    this.policyOptimizer?.destroy();
    this.policyOptimizer = null;
    this.pendingOptimizer = undefined;
    const start = resume?.step ?? 0;
    const trainer = new SftTrainer(this.model, this.tokenizer, examples, {
      batchSize: settings.batchSize,
      seqLen: settings.seqLen,
      accumulation: settings.accumulation,
      schedule: { lr: settings.lr, warmupSteps: settings.warmupSteps, totalSteps: start + settings.steps, kind: 'cosine' },
      packing: settings.packing,
      seed: settings.seed,
      cursor,
    });
    if (resume) trainer.optimizer.load(resume.m, resume.v, resume.step);
    this.trainer = trainer;
    return trainer;
  }

  /**
   * One policy-gradient update on the loop's rollouts. The first one starts the loop's AdamW:
   * from the checkpoint's moments when it came from a loop run, afresh after SFT (whose
   * moments belong to another objective).
   */
  async trainPolicy(rollouts: readonly Rollout[], lr: number, settings: PolicySettings = DEFAULT_POLICY): Promise<PolicyStepResult> {
    // A KL term against reference log-probs of 0 would pull the policy toward nothing in particular.
    const missing = rollouts.findIndex((r) => !r.refLogprobs);
    if (settings.loss.klCoef > 0 && missing >= 0) {
      throw new Error(`a KL coefficient of ${settings.loss.klCoef} needs reference log-probs, and rollout ${missing} has none: set klCoef to 0`);
    }
    if (!this.policyOptimizer) {
      const { rt } = this.model;
      const resume = this.trainer ? undefined : this.pendingOptimizer;
      this.trainer?.destroy();
      this.trainer = null;
      this.pendingOptimizer = undefined;
      this.policyOptimizer = new AdamW(rt, this.model.trainable.params.size, this.model.trainable.specs, settings.adamw);
      if (resume) this.policyOptimizer.load(resume.m, resume.v, resume.step);
    }
    // A micro-batch's logits must fit one binding: a large vocabulary takes fewer tokens.
    const bindable = Math.floor(this.model.rt.ctx.limits.maxStorageBufferBindingSize / (4 * this.config.vocab_size));
    const micro = packRollouts(rollouts, {
      tokens: Math.max(1, Math.min(settings.microTokens, bindable)),
      maxLength: this.config.max_position_embeddings,
      lengthGranule: POSITION_GRANULE,
      padId: this.tokenizer.specials.pad,
    });
    return policyStep(this.model, this.policyOptimizer, micro, lr, settings.loss);
  }

  /** Forgets the checkpoint's AdamW moments: a loop begun on an SFT checkpoint starts its optimizer afresh. */
  resetOptimizer(): void {
    this.pendingOptimizer = undefined;
  }

  /** The AdamW state to resume from or export: the live optimizer's moments, or the checkpoint's. */
  private async optimizerState(): Promise<OptimizerState | undefined> {
    const optimizer = this.policyOptimizer ?? this.trainer?.optimizer;
    if (!optimizer) return this.pendingOptimizer;
    const { rt } = this.model;
    // One after the other: each is the size of the trainable weights (2 GiB for a 0.5B model in
    // full), and reading both at once would hold both staging copies beside the host's.
    const m = await rt.read(optimizer.m);
    const v = await rt.read(optimizer.v);
    return { m, v, step: optimizer.step };
  }

  /**
   * The held model as checkpoint files: weights (merged with the adapter in a LoRA run, the
   * adapter itself in adapter/), tokenizer, AdamW moments and run state. `format`: the
   * weights' dtype and shard size (F32 in one file by default).
   */
  async exportFiles(runState: Record<string, unknown> = {}, format: Pick<ExportExtras, 'dtype' | 'maxShardBytes'> = {}): Promise<Map<string, Uint8Array>> {
    const sink = memorySink();
    await this.writeCheckpoint(sink, runState, format);
    return sink.files;
  }

  /**
   * Writes the checkpoint folder through `sink` a weight at a time (each merged with the
   * adapter, read back from the GPU as its shard reaches it): the model is never whole in memory.
   */
  async writeCheckpoint(sink: FileSink, runState: Record<string, unknown> = {}, format: Pick<ExportExtras, 'dtype' | 'maxShardBytes'> = {}): Promise<void> {
    const optimizer = await this.optimizerState();
    const lora = this.model.lora;
    await writeCheckpoint(this.model.config, (name) => this.model.readWeight(name), this.tokenizer.files(), {
      optimizer,
      runState: { origin: this.origin, steps: this.optimizerStep, ...runState },
      ...format,
      ...(lora ? { lora: { config: lora, flat: await this.model.readAdapter(), baseModel: this.origin } } : {}),
      ...(this.templates ? { templates: this.templates, rolesTaught: this.rolesTaught, ...(this.labSettings ? { labSettings: this.labSettings } : {}) } : {}),
    }, sink);
  }

  /** The LoRA adapter alone as a PEFT adapter folder (adapter_config.json, adapter_model.safetensors). */
  async exportAdapter(): Promise<Map<string, Uint8Array>> {
    const lora = this.model.lora;
    if (!lora) throw new Error('the model has no LoRA adapter (it trains in full)');
    return peftAdapterFiles(this.config, lora, await this.model.readAdapter(), this.origin);
  }

  destroy(): void {
    this.generator?.release();
    this.policyOptimizer?.destroy();
    this.trainer?.destroy();
    this.trainer = null;
    this.model.destroy();
  }
}
