/** The engine worker's API, shared by the worker and the UI (types only). */
import type { PresetName } from '../model/config';
import type { GenerateProgress, GenerateResult } from '../model/generate';
import type { GenerateOptions } from '../model/generateSettings';
import type { SftPair } from '../train/sft';
import type { SftSettings } from '../train/sftSettings';

export type { GenerateOptions, GenerateProgress, GenerateResult, PresetName, SftPair, SftSettings };
export interface DeviceReport {
  platform: string;
  adapter: { vendor: string; architecture: string; device: string; description: string };
  features: { name: string; granted: boolean }[];
  /** Invocations per subgroup when the adapter has one fixed size; null otherwise. */
  subgroupSize: number | null;
  /** Matmuls share row loads across subgroups (see Runtime.subgroupMatmul). */
  subgroupMatmul: boolean;
  limits: Record<string, number>;
}

export interface SelfCheckResult {
  shape: { M: number; N: number; K: number };
  variant: string;
  /** Whether the variant was measured now or came from this adapter's autotune cache. */
  tuning: 'measured' | 'cached';
  /** Largest |gpu − cpu| over the row scale Σ|a||b|. */
  maxRelError: number;
  passed: boolean;
  gpuMs: number;
  gflops: number;
}

/** One optimizer step of a training check, as reported live. */
export interface TrainStepReport {
  step: number;
  loss: number;
  gradNorm: number;
  tokensPerS: number;
}

export interface TrainCheckResult {
  preset: string;
  parameters: number;
  steps: number;
  firstLoss: number;
  finalLoss: number;
  /** The loss fell below the threshold: forward, backward and AdamW all work on this GPU. */
  passed: boolean;
  threshold: number;
  tokensPerS: number;
}

/** The model the engine holds for fine-tuning and export. */
export interface ModelSummary {
  /** A preset name, or the imported checkpoint's name. */
  origin: string;
  parameters: number;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  vocab: number;
  context: number;
  tokenizer: 'byte-level' | 'Hugging Face';
  /** AdamW steps the model has been trained for (0 for a fresh preset). */
  optimizerStep: number;
}

/** One file of a Hugging Face checkpoint folder. */
export interface CheckpointFile {
  name: string;
  bytes: Uint8Array;
}

export interface SftStepReport extends TrainStepReport {
  lr: number;
  /** False when the gradient was not finite and the update was skipped. */
  finite: boolean;
}

export interface SftRunResult {
  model: ModelSummary;
  steps: number;
  firstLoss: number;
  finalLoss: number;
  tokensPerS: number;
  /** Updates skipped for a non-finite gradient. */
  skipped: number;
  /** The run ended early because stopSft was called. */
  stopped: boolean;
}

export interface EngineApi {
  /** Acquires the device; rejects with a plain explanation when WebGPU is unavailable. */
  init(): Promise<DeviceReport>;
  /** Runs a matmul on the GPU and checks it against a float64 CPU reference. */
  selfCheck(shape: { M: number; N: number; K: number }): Promise<SelfCheckResult>;
  /**
   * Trains the tiny preset from scratch to memorise a few short answers (forward, backward,
   * AdamW, all in WGSL), reporting every step; passes when the loss falls below a threshold.
   */
  trainCheck(options: { steps: number }, onStep: (report: TrainStepReport) => void): Promise<TrainCheckResult>;
  /** Replaces the held model with a freshly initialised preset. */
  loadPreset(preset: PresetName, seed: number): Promise<ModelSummary>;
  /**
   * Replaces the held model with a checkpoint folder's files (config.json, safetensors,
   * tokenizer, optional optimizer state); a bad checkpoint is refused with the reason and the
   * held model is kept.
   */
  importCheckpoint(name: string, files: CheckpointFile[]): Promise<ModelSummary>;
  /** Fine-tunes the held model on prompt → response pairs, reporting every step. */
  sft(pairs: SftPair[], settings: SftSettings, onStep: (report: SftStepReport) => void): Promise<SftRunResult>;
  /** Ends a running sft() after its current step. */
  stopSft(): void;
  /**
   * Completes the prompts with the held model (each framed as in training: BOS, then its
   * text). `onToken` receives every row's text so far, at most every 100 ms and once at the end.
   */
  generate(prompts: string[], options: Partial<GenerateOptions>, onToken?: (progress: GenerateProgress) => void): Promise<GenerateResult>;
  /** The held model, its tokenizer and AdamW state as a Hugging Face checkpoint folder. */
  exportCheckpoint(): Promise<CheckpointFile[]>;
}
