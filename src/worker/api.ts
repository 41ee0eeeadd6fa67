/** The engine worker's API, shared by the worker and the UI (types only). */
import type { PresetName } from '../model/config';
import type { GenerateProgress, GenerateResult } from '../model/generate';
import type { GenerateOptions } from '../model/generateSettings';
import type { PromptSet } from '../model/checkpoint';
import type { LoraConfig } from '../model/lora';
import type { BaseDtype, KvDtype } from '../model/memory';
import type { ModelMemory } from '../train/memorySummary';
import type { OverlapReport } from '../data/content';
import type { CorpusReport, DocumentSplit } from '../data/corpus';
import type { Format, Problem } from '../data/problem';
import type { BankEvent } from '../sage/bank';
import type { MethodName } from '../sage/config';
import type { RunEvent, RunState } from '../sage/run';
import type { RunSettings } from '../sage/settings';
import type { Validated } from '../sage/validation';
import type { LoadProgress } from '../train/session';
import type { SftPair } from '../data/sftPairs';
import type { SftExample } from '../train/sft';
import type { SftSettings } from '../train/sftSettings';
import type { RunStepsResult } from '../train/trainLoop';
import type { AutosaveInfo } from './autosave';

export type { AutosaveInfo, BankEvent, BaseDtype, GenerateOptions, KvDtype, GenerateProgress, GenerateResult, LoadProgress, LoraConfig, MethodName, PresetName, Problem, PromptSet, RunEvent, RunState, SftPair, SftSettings };
export interface DeviceReport {
  platform: string;
  adapter: { vendor: string; architecture: string; device: string; description: string };
  features: { name: string; granted: boolean }[];
  /** Invocations per subgroup when the adapter has one fixed size; null otherwise. */
  subgroupSize: number | null;
  /** Matmuls share row loads across subgroups (see Runtime.subgroupMatmul). */
  subgroupMatmul: boolean;
  /** The subgroup matrices f16 products may run on (the GPU's matrix units, GpuContext.subgroupMatrix), as M×N×K; null where the device has none. */
  subgroupMatrix: string | null;
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
  /** Prompts go through the checkpoint's chat template. */
  chatTemplate: boolean;
  /** RoPE scaling type ('default' for plain RoPE). */
  rope: string;
  /** AdamW steps the model has been trained for (0 for a fresh preset). */
  optimizerStep: number;
  /** The LoRA adapter that trains on the frozen model, with its parameter count; null when the whole model trains. */
  lora: (LoraConfig & { trainable: number }) | null;
  /** How the base weights are stored on the GPU (f16: half the memory, frozen). */
  baseDtype: BaseDtype;
  /** What generation's KV cache holds (f16: half its memory and the bytes decode attention reads). */
  kvCache: KvDtype;
  /** What training and generation would hold on the GPU, in bytes (see src/train/memorySummary.ts). */
  memory: ModelMemory;
  /** The role prompts the model was trained with (its checkpoint's record, or the last run's); null when none is known. */
  templates: PromptSet | null;
  /** Whether its roles have been taught (ModelSession.rolesTaught): a checkpoint's whose were not warms up first by default. */
  rolesTaught: boolean;
  /** The run settings its checkpoint's record says it is meant for (ModelSession.labSettings): a run's defaults take them. */
  labSettings: Record<string, unknown> | null;
}

/** A file the user picked or dropped, with its path in the chosen folder (or its name). */
export interface PickedFile {
  path: string;
  blob: Blob;
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

/** A fine-tuning run's figures (stopped: ended early because stopSft was called) and the model after it. */
export interface SftRunResult extends RunStepsResult {
  model: ModelSummary;
}

/** A seed or validation file as the engine read it. */
export interface ProblemSetReport {
  which: 'seeds' | 'validation';
  name: string;
  problems: number;
  counts: Partial<Record<Format, number>>;
  /** The first unusable lines, with their numbers and reasons (all of them counted in errorCount). */
  errors: { line: number; reason: string }[];
  errorCount: number;
  duplicates: number;
  /** The first few problems, for a preview. */
  preview: Problem[];
  /** The curriculum levels its problems carry, sorted (none: their format has no levels). */
  levels: string[];
}

/** What the page is told of a seed file read for fine-tuning (the pairs stay in the engine). */
export interface SftSeedsReport {
  name: string;
  pairs: number;
  /** The first lines that could not be used, with their numbers and reasons (all counted in errorCount). */
  errors: { line: number; reason: string }[];
  errorCount: number;
  /** The same file read as problems: counts per detected format, duplicates, lines that are no problem. */
  counts: Partial<Record<Format, number>>;
  duplicates: number;
  notProblems: number;
  /** The field mapping it was read with, as typed; empty for detection. */
  fields: string;
}

/** What the page is told of a corpus read for training with the loss on every token (the documents stay in the engine). */
export interface SftCorpusReport {
  name: string;
  documents: number;
  characters: number;
  format: CorpusReport['format'];
  split: DocumentSplit;
  /** The first lines that could not be used, with their numbers and reasons (all counted in errorCount). */
  errors: { line: number; reason: string }[];
  errorCount: number;
}

/** The settings of a loop run that a request may give (the rest keep their defaults). */
export type EvolveSettings = Partial<Omit<RunSettings, 'method' | 'templates'>>;

export interface EvolveRequest {
  method: MethodName;
  /** compact: for models trained from scratch (they learn the roles in the warm-up); instruct: for instruction-tuned models. */
  templates: 'compact' | 'instruct';
  settings: EvolveSettings;
}

/** An evaluation of the held model: the method whose own mode is measured beside the Solver alone, its prompts, how many problems. */
export interface EvaluateRequest {
  method: MethodName;
  templates: PromptSet;
  /** Held-out problems, taken in turn from each source and level (a run's validationLimit). */
  limit: number;
}

/** What an evaluation found: the tallies, and every problem's outcome per mode (the lines of a run's outcomes.jsonl). */
export interface EvaluateResult extends EvaluateRequest, Validated {
  /** The model evaluated (its origin). */
  model: string;
  /** Problems evaluated, of the validation problems held. */
  problems: number;
  of: number;
  maxNewTokens: Record<'challenger' | 'planner' | 'solver' | 'critic', number>;
}

/** What a loop run reports, batched to a few messages a second. */
export type EvolveEvent = RunEvent | { type: 'bank'; event: BankEvent } | { type: 'autosave'; info?: AutosaveInfo; error?: string };

export interface EvolveResult {
  state: RunState;
  reason: 'steps' | 'early-stop' | 'stopped';
  /** The held model as the run left it (its prompts the run's, its roles taught): the page's summary of it is stale. */
  model: ModelSummary;
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
   * held model is kept. The weights go to the GPU a tensor at a time, `onProgress` following
   * each shard (at most every 100 ms); the held model is released first, so the two are never
   * both in GPU memory. `baseDtype` f16 stores the base in half precision (half the memory,
   * frozen: it trains through a LoRA adapter).
   */
  importCheckpoint(name: string, files: CheckpointFile[] | null, onProgress?: (p: LoadProgress) => void, baseDtype?: BaseDtype): Promise<ModelSummary>;
  /**
   * Reads what the user picked (a folder's files or one .zip, unpacked here, off the page's
   * thread) and holds it for importCheckpoint(…, null) or resumeRun(null, …); returns its name
   * and the run records it holds (config, metrics, per-problem outcomes, bank events, state), for the page's charts and comparison.
   */
  stageFiles(picked: PickedFile[]): Promise<{ name: string; records: CheckpointFile[] }>;
  /**
   * Reads a seed file off the page's thread as prompt → response pairs (and as problems, for
   * the counts) and holds the pairs for sft(null, …); `fields` (`question=q,answer=a`) replaces
   * format detection.
   */
  readSftSeeds(name: string, file: Blob, fields: string): Promise<SftSeedsReport>;
  /**
   * Reads a corpus off the page's thread as documents (one a line, JSONL records' text, or
   * paragraphs) and holds them for sft(null, …) in place of the seed pairs: the loss on every token.
   */
  readSftCorpus(name: string, file: Blob, split: DocumentSplit): Promise<SftCorpusReport>;
  /** Fine-tunes the held model on pairs or documents (null: the seed file or corpus read last), reporting every step. */
  sft(examples: SftExample[] | null, settings: SftSettings, onStep: (report: SftStepReport) => void): Promise<SftRunResult>;
  /** Ends a running sft() after its current step. */
  stopSft(): void;
  /**
   * Completes the prompts with the held model (each framed as in training: BOS, then its
   * text). `onToken` receives every row's text so far, at most every 100 ms and once at the end.
   */
  generate(prompts: string[], options: Partial<GenerateOptions>, onToken?: (progress: GenerateProgress) => void): Promise<GenerateResult>;
  /**
   * The held model, its tokenizer and AdamW state as a Hugging Face checkpoint folder (with
   * LoRA: the merged model, and the adapter alone in adapter/).
   */
  exportCheckpoint(): Promise<CheckpointFile[]>;
  /**
   * Writes the same folder into `dir` (a folder the user picked) a weight at a time, straight
   * from the GPU to disk: the model is never whole in memory. Returns the files written.
   */
  exportCheckpointTo(dir: FileSystemDirectoryHandle): Promise<string[]>;
  /**
   * From now on fine-tune a fresh LoRA adapter on the frozen held model (null: the whole
   * model again, dropping the adapter). The optimizer starts afresh.
   */
  setLora(lora: LoraConfig | null, seed: number): Promise<ModelSummary>;
  /** Adds a PEFT adapter folder (the files staged last, see stageFiles) to the held model and trains it. */
  addAdapter(): Promise<ModelSummary>;
  /** The held model's LoRA adapter alone, as a PEFT adapter folder. */
  exportAdapter(): Promise<CheckpointFile[]>;
  /** Stores the held model's base weights as `dtype` (converted on the GPU; f16 needs an adapter). */
  setBaseDtype(dtype: BaseDtype): Promise<ModelSummary>;
  /** What the held model's generation keeps its KV cache in (f16 needs head_dim a multiple of 4). */
  setKvCache(dtype: KvDtype): Promise<ModelSummary>;

  /**
   * Reads a seed or validation JSONL off the page's thread and holds its problems for the
   * next loop run; bad lines are reported by number while the good ones load.
   */
  loadProblems(which: 'seeds' | 'validation', name: string, file: Blob, fields?: string): Promise<ProblemSetReport>;
  /**
   * Takes a held-out split from the seed problems held (`fraction` of them, drawn from
   * `seed`): they become the validation problems and leave the seeds.
   */
  holdOutSeeds(fraction: number, seed: number): Promise<{ seeds: ProblemSetReport; validation: ProblemSetReport }>;
  /**
   * The validation problems held that share their content with a seed held (see
   * data/content.ts), told before a run: null until both splits are held.
   */
  problemOverlap(): Promise<OverlapReport | null>;
  /** Drops those problems from the validation split held; its report after. */
  dropOverlap(): Promise<ProblemSetReport>;
  /**
   * Validates the held model on the validation problems held as a run validates (the same
   * problems, Critic probe and call): greedy pass@1 per source and level, the Solver alone and
   * in the method's own mode, the Critic's AUC, and every problem's outcome.
   */
  evaluate(request: EvaluateRequest): Promise<EvaluateResult>;
  /**
   * Runs the self-evolution loop on the held model and problems (warm-up first for a model
   * from scratch), reporting metrics, transcripts, phases and bank changes in batches.
   */
  evolve(request: EvolveRequest, onEvents: (events: EvolveEvent[]) => void): Promise<EvolveResult>;
  /** Continues an exported run (its files, as exportRun gave them) on its own model and problems. */
  resumeRun(files: CheckpointFile[] | null, onEvents: (events: EvolveEvent[]) => void, settings?: EvolveSettings): Promise<EvolveResult>;
  /** Holds the running loop at its next phase boundary. */
  pauseEvolve(): void;
  resumeEvolve(): void;
  /** From a pause: finishes the step in flight (or runs one), then pauses again. */
  stepEvolve(): void;
  /** Ends the run at its next phase boundary, saving its last checkpoint. */
  stopEvolve(): void;
  /**
   * The run as files — config, metrics, transcripts, bank events, state, its problems, and
   * the checkpoints (last/ is the current weights with their AdamW state) — while it is paused
   * or after it ended. resumeRun continues from them.
   */
  exportRun(): Promise<CheckpointFile[]>;
  /** The same as one .zip, packed here rather than on the page's thread. */
  exportRunZip(): Promise<CheckpointFile>;
  /**
   * The current (or last) run's problem bank: JSONL with provenance, or the verl RL dataset
   * (Parquet with chat-message prompts), for training on elsewhere.
   */
  exportBank(format: 'jsonl' | 'parquet'): Promise<CheckpointFile>;
  /**
   * The run autosaved in this browser (at every validation and pause), with the records that
   * rebuild its charts; null when there is none (or the platform keeps none).
   */
  autosaved(): Promise<{ info: AutosaveInfo; records: CheckpointFile[] } | null>;
  /** Continues the autosaved run, as resumeRun does an export. */
  resumeAutosave(onEvents: (events: EvolveEvent[]) => void, settings?: EvolveSettings): Promise<EvolveResult>;
  discardAutosave(): Promise<void>;
}
