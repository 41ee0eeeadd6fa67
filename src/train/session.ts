/**
 * A model being fine-tuned: built from a preset or an imported checkpoint, trained with SFT,
 * exported as a Hugging Face folder. The one path the CLI and the lab's engine worker share.
 */
import type { Runtime } from '../gpu/runtime';
import { exportCheckpoint, type ImportedCheckpoint, type OptimizerState } from '../model/checkpoint';
import { PRESETS, paramCount, type LlamaConfig, type PresetName } from '../model/config';
import { ByteTokenizer, HFTokenizer, type Tokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import { SftTrainer, type SftPair } from './sft';
import { checkSftSettings, type SftSettings } from './sftSettings';

export type ModelSource =
  | { kind: 'preset'; preset: PresetName; seed: number }
  | { kind: 'checkpoint'; checkpoint: ImportedCheckpoint; name: string };

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

export class ModelSession {
  private trainer: SftTrainer | null = null;
  /** Moments carried in from the checkpoint, until a trainer takes them over. */
  private pendingOptimizer: OptimizerState | undefined;

  private constructor(
    readonly model: Transformer,
    readonly tokenizer: Tokenizer,
    /** Where the weights came from: a preset name or the checkpoint's name. */
    readonly origin: string,
    optimizer: OptimizerState | undefined,
  ) {
    this.pendingOptimizer = optimizer;
  }

  static create(rt: Runtime, source: ModelSource): ModelSession {
    if (source.kind === 'preset') {
      const config = PRESETS[source.preset];
      if (!config) throw new Error(`unknown preset "${String(source.preset)}" (${Object.keys(PRESETS).join(', ')})`);
      return new ModelSession(Transformer.init(rt, config, source.seed), new ByteTokenizer(), source.preset, undefined);
    }
    const c = source.checkpoint;
    const tokenizer = c.tokenizerJson ? HFTokenizer.fromJson(c.tokenizerJson, c.tokenizerConfigJson) : new ByteTokenizer();
    if (tokenizer.vocabSize > c.config.vocab_size) {
      throw new Error(`${source.name}: the tokenizer has ${tokenizer.vocabSize} tokens but the model only ${c.config.vocab_size}`);
    }
    return new ModelSession(Transformer.fromFlat(rt, c.config, c.flatParams), tokenizer, source.name, c.optimizer);
  }

  get config(): LlamaConfig {
    return this.model.config;
  }

  get parameters(): number {
    return paramCount(this.model.config);
  }

  /** AdamW steps taken so far (carried over from a checkpoint unless reset). */
  get optimizerStep(): number {
    return this.trainer?.optimizer.step ?? this.pendingOptimizer?.step ?? 0;
  }

  /**
   * A trainer for `settings.steps` more steps on `pairs`. The schedule and the AdamW state
   * continue from the previous run or the checkpoint, unless `resetOptimizer`.
   */
  async startSft(pairs: SftPair[], settings: SftSettings): Promise<SftTrainer> {
    checkSftSettings(settings);
    if (pairs.length === 0) throw new Error('no examples to train on');
    if (settings.seqLen > this.config.max_position_embeddings) {
      throw new Error(`seqLen ${settings.seqLen} exceeds the model's context of ${this.config.max_position_embeddings}`);
    }
    const resume = settings.resetOptimizer ? undefined : await this.optimizerState();
    this.trainer?.destroy();
    this.trainer = null;
    this.pendingOptimizer = undefined;
    const start = resume?.step ?? 0;
    const trainer = new SftTrainer(this.model, this.tokenizer, pairs, {
      batchSize: settings.batchSize,
      seqLen: settings.seqLen,
      accumulation: settings.accumulation,
      schedule: { lr: settings.lr, warmupSteps: settings.warmupSteps, totalSteps: start + settings.steps, kind: 'cosine' },
      packing: settings.packing,
      seed: settings.seed,
    });
    if (resume) trainer.optimizer.load(resume.m, resume.v, resume.step);
    this.trainer = trainer;
    return trainer;
  }

  /** The AdamW state to resume from or export: the live trainer's moments, or the checkpoint's. */
  private async optimizerState(): Promise<OptimizerState | undefined> {
    if (!this.trainer) return this.pendingOptimizer;
    const { rt } = this.model;
    const { optimizer } = this.trainer;
    const [m, v] = await Promise.all([rt.read(optimizer.m), rt.read(optimizer.v)]);
    return { m, v, step: optimizer.step };
  }

  /** Weights, tokenizer, AdamW moments and run state as the files of a Hugging Face folder. */
  async exportFiles(runState: Record<string, unknown> = {}): Promise<Map<string, Uint8Array>> {
    const optimizer = await this.optimizerState();
    return exportCheckpoint(this.model.config, await this.model.readParams(), this.tokenizer.files(), {
      optimizer,
      runState: { origin: this.origin, steps: this.optimizerStep, ...runState },
    });
  }

  destroy(): void {
    this.trainer?.destroy();
    this.trainer = null;
    this.model.destroy();
  }
}
