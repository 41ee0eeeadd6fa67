/**
 * Hugging Face checkpoint folders as in-memory file maps (name -> bytes): export so that
 * transformers' `from_pretrained` loads the model unchanged, and import Hub checkpoints of the
 * Llama family. Reading and writing the files is the caller's job, so this runs in workers too.
 */
import { flatParamSize, headDim, paramSpecs, validateConfig, type LlamaConfig, type ParamSpec, type RopeScaling } from './config';
import { importPeftAdapter, loraSize, loraSpecs, peftAdapterFiles, type LoraConfig } from './lora';
import { DTYPE_BYTES, encodeTensorData, indexSafetensors, safetensorsHeader, serializeSafetensors, type IndexedTensor, type SafetensorsDtype, type TensorEntry, type TensorToWrite } from './safetensors';

export interface OptimizerState {
  /** Adam first and second moments, laid out like the flat buffer that trains (the model's, or its adapter's). */
  m: Float32Array;
  v: Float32Array;
  step: number;
}

export interface ExportExtras {
  optimizer?: OptimizerState;
  /** Trainer state of the lab (schedule position, data cursor...), stored as JSON. */
  runState?: unknown;
  /** The weights' dtype (default F32; BF16/F16 halve the files, the optimizer state stays F32). */
  dtype?: SafetensorsDtype;
  /**
   * Above this many bytes of weights, model-0000i-of-0000n.safetensors shards with
   * model.safetensors.index.json, as Hugging Face writes them (default 5 GB, its own).
   */
  maxShardBytes?: number;
  /**
   * A LoRA run: the weights passed are merged (base + adapter, loadable anywhere), the adapter
   * alone goes to adapter/ in PEFT's layout, and the optimizer state is the adapter's.
   */
  lora?: CheckpointAdapter & { baseModel: string };
  /** The role prompts the model was trained with, recorded in LAB_RECORD (none: nothing recorded). */
  templates?: PromptSet;
  /** With templates: false records that the roles were not taught yet (LAB_RECORD's rolesTaught; true is the default, left out). */
  rolesTaught?: boolean;
}

/**
 * The role prompts a model can have learned: compact (a model trained here from scratch learns
 * the roles from the warm-up's examples) or instruct (an instruction-tuned model follows them).
 */
export const PROMPT_SETS = ['compact', 'instruct'] as const;
export type PromptSet = (typeof PROMPT_SETS)[number];

/**
 * What the lab records of a checkpoint beyond Hugging Face's files: a file of its own beside
 * config.json rather than a key in it, because config.json describes the architecture (read by
 * transformers, checked field by field here) while this says how the lab prompts the model; a
 * file every Hugging Face loader ignores, and one a user can add to a plain checkpoint by hand.
 */
export const LAB_RECORD = 'sage_lab.json';

/**
 * What LAB_RECORD holds: the role prompts the model is meant for (templates) and whether its
 * roles were taught with them (rolesTaught, true unless written false: a record written by a
 * warm-up says only templates; a base pretrained here for compact prompts says false).
 */
export interface LabRecord {
  templates?: PromptSet;
  rolesTaught?: boolean;
}

/** Whether a record says the model's roles were taught: unless it says false (a record that says nothing, or none at all, is a model made to follow the prompts). */
export const rolesTaught = (record: LabRecord): boolean => record.rolesTaught !== false;

/** The lab's record of a checkpoint (LAB_RECORD's bytes or text), checked: a bad value is refused by name. */
export function parseLabRecord(content: Uint8Array | string): LabRecord {
  const record = parseJsonObject(typeof content === 'string' ? content : new TextDecoder().decode(content), LAB_RECORD);
  const out: LabRecord = {};
  const t = record.templates;
  if (t !== undefined) {
    if (!PROMPT_SETS.includes(t as PromptSet)) throw new Error(`${LAB_RECORD}: "templates" must be one of ${PROMPT_SETS.join(', ')} (got ${JSON.stringify(t)})`);
    out.templates = t as PromptSet;
  }
  const taught = record.rolesTaught;
  if (taught !== undefined) {
    if (typeof taught !== 'boolean') throw new Error(`${LAB_RECORD}: "rolesTaught" must be true or false (got ${JSON.stringify(taught)})`);
    out.rolesTaught = taught;
  }
  return out;
}

/** A LoRA adapter carried by a checkpoint. */
export interface CheckpointAdapter {
  config: LoraConfig;
  flat: Float32Array;
}

/** Where a checkpoint folder keeps its LoRA adapter (a PEFT adapter folder of its own). */
export const ADAPTER_DIR = 'adapter/';

const TORCH_DTYPES: Record<SafetensorsDtype, string> = { F32: 'float32', BF16: 'bfloat16', F16: 'float16' };
const DEFAULT_MAX_SHARD_BYTES = 5e9;

/** One weight file of an export and the tensors it holds. */
interface WeightShard {
  file: string;
  tensors: TensorEntry[];
}

const count = (t: TensorEntry) => t.shape.reduce((a, b) => a * b, 1);

/**
 * The weights as one model.safetensors, or as shards of at most maxShardBytes (a tensor larger
 * than that gets a shard of its own) with the index that maps each tensor to its shard.
 */
function planShards(weights: TensorEntry[], dtype: SafetensorsDtype, maxShardBytes: number): { shards: WeightShard[]; index?: Uint8Array } {
  const width = DTYPE_BYTES[dtype];
  const total = weights.reduce((n, t) => n + count(t) * width, 0);
  if (total <= maxShardBytes) return { shards: [{ file: 'model.safetensors', tensors: weights }] };
  const groups: TensorEntry[][] = [[]];
  let bytes = 0;
  for (const t of weights) {
    const size = count(t) * width;
    if (bytes > 0 && bytes + size > maxShardBytes) {
      groups.push([]);
      bytes = 0;
    }
    groups[groups.length - 1]!.push(t);
    bytes += size;
  }
  const name = (i: number) => `model-${String(i + 1).padStart(5, '0')}-of-${String(groups.length).padStart(5, '0')}.safetensors`;
  const shards = groups.map((tensors, i) => ({ file: name(i), tensors }));
  const weightMap = Object.fromEntries(shards.flatMap((sh) => sh.tensors.map((t) => [t.name, sh.file])));
  const index = { metadata: { total_size: total }, weight_map: weightMap };
  return { shards, index: new TextEncoder().encode(JSON.stringify(index, null, 2)) };
}

export interface ImportedCheckpoint {
  config: LlamaConfig;
  /** The weights, decoded one tensor at a time as they are read (see Transformer.load). */
  weights: CheckpointWeights;
  tokenizerJson?: string;
  tokenizerConfigJson?: string;
  optimizer?: OptimizerState;
  runState?: unknown;
  /** The LoRA adapter the weights were merged with, to train on from the unmerged base. */
  lora?: CheckpointAdapter;
  /** The role prompts the model was trained with, when the checkpoint records them (LAB_RECORD). */
  templates?: PromptSet;
  /** Whether its roles were taught: true unless LAB_RECORD says false (a base pretrained for the prompts, not yet warmed up). */
  rolesTaught: boolean;
}

/** A checkpoint's weights, checked whole at import, read tensor by tensor. */
export interface CheckpointWeights {
  /** The weight files in the order their tensors load, with the bytes of the model's tensors in each. */
  shards: { file: string; bytes: number }[];
  /** The file a parameter is stored in, and its bytes there. */
  where(name: string): { file: string; bytes: number };
  /** A parameter's values (decoded now, nothing kept). */
  read(name: string): Float32Array;
  /** Every parameter in one flat array, laid out as paramSpecs (small models and tests). */
  flat(): Float32Array;
  /** The weight of largest magnitude and its tensor (can the base be held in f16?). */
  largest: { name: string; value: number };
}

const SUPPORTED_MODEL_TYPES = ['llama', 'qwen2', 'mistral'] as const;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

function parseJsonObject(text: string, file: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file} is not valid JSON (${(e as Error).message})`);
  }
  if (!isPlainObject(v)) throw new Error(`${file} is not a JSON object`);
  return v;
}

const ROPE_TYPES = ['default', 'linear', 'dynamic', 'llama3'] as const;

/**
 * A RoPE scaling block (`rope_scaling`, or transformers 5's `rope_parameters`): null for plain
 * RoPE; a type this engine does not compute is refused with the field named.
 */
function parseRope(raw: unknown, field: string): RopeScaling | null {
  if (raw === undefined || raw === null) return null;
  if (!isPlainObject(raw)) throw new Error(`config.json: ${field} must be an object or null`);
  const type = raw.rope_type ?? raw.type ?? 'default';
  if (!(ROPE_TYPES as readonly unknown[]).includes(type)) {
    throw new Error(`config.json: ${field} type "${String(type)}" is not supported (supported: ${ROPE_TYPES.join(', ')})`);
  }
  const partial = raw.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1) {
    throw new Error(`config.json: ${field}.partial_rotary_factor ${String(partial)} is not supported (only full rotary)`);
  }
  const number = (k: string): number => {
    const v = raw[k];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`config.json: ${field}.${k} must be a number for type "${String(type)}" (got ${JSON.stringify(v)})`);
    return v;
  };
  if (type === 'default') return null;
  if (type === 'llama3') {
    return {
      rope_type: 'llama3',
      factor: number('factor'),
      low_freq_factor: number('low_freq_factor'),
      high_freq_factor: number('high_freq_factor'),
      original_max_position_embeddings: number('original_max_position_embeddings'),
    };
  }
  return { rope_type: type as 'linear' | 'dynamic', factor: number('factor') };
}

/** Parses a Hub config.json (Llama, Qwen2 or Mistral) into a LlamaConfig. */
export function readConfigJson(text: string): LlamaConfig {
  const raw = parseJsonObject(text, 'config.json');

  const modelType = raw.model_type;
  if (typeof modelType !== 'string') {
    throw new Error(`config.json: missing required field model_type (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
  }
  if (!(SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType)) {
    throw new Error(
      `config.json: model_type "${modelType}" is not supported (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`,
    );
  }

  const required = [
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_hidden_layers',
    'num_attention_heads',
    'max_position_embeddings',
  ] as const;
  const missing = required.filter((k) => raw[k] === undefined || raw[k] === null);
  if (missing.length) throw new Error(`config.json: missing required fields ${missing.join(', ')}`);

  const problems: string[] = [];
  const num = (k: string, fallback?: number): number => {
    const v = raw[k];
    if (v === undefined || v === null) return fallback as number;
    if (typeof v !== 'number') problems.push(`${k} must be a number (got ${JSON.stringify(v)})`);
    return v as number;
  };
  const bool = (k: string, fallback: boolean): boolean => {
    const v = raw[k];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') problems.push(`${k} must be true or false (got ${JSON.stringify(v)})`);
    return v as boolean;
  };
  /** Llama 3 lists several EOS ids: all of them, the first being the primary one. */
  const tokenIds = (k: string): number[] => {
    const v = raw[k];
    if (v === undefined || v === null) return [];
    const ids = Array.isArray(v) ? v : [v];
    if (ids.length === 0 || !ids.every((x) => Number.isInteger(x) && x >= 0)) {
      problems.push(`${k} must be a non-negative integer or a list of them (got ${JSON.stringify(v)})`);
      return [];
    }
    return ids as number[];
  };

  const hiddenAct = raw.hidden_act ?? 'silu';
  if (hiddenAct !== 'silu') throw new Error(`config.json: hidden_act "${String(hiddenAct)}" is not supported (only silu)`);
  if (raw.mlp_bias === true) throw new Error('config.json: mlp_bias true is not supported (MLP projections have no bias)');
  // transformers 5 writes rope_parameters (with rope_theta inside); older configs rope_scaling.
  const ropeScaling = parseRope(raw.rope_parameters, 'rope_parameters') ?? parseRope(raw.rope_scaling, 'rope_scaling');

  const maxPos = num('max_position_embeddings');
  const slidingWindow = raw.sliding_window;
  const sliding =
    modelType === 'qwen2'
      ? raw.use_sliding_window === true
      : modelType === 'mistral' && typeof slidingWindow === 'number' && slidingWindow < maxPos;
  const layerTypes = raw.layer_types;
  if (sliding || (Array.isArray(layerTypes) && layerTypes.some((t) => t !== 'full_attention'))) {
    throw new Error('config.json: sliding-window attention is not supported (only full causal attention)');
  }

  const ropeParams = isPlainObject(raw.rope_parameters) ? raw.rope_parameters : undefined;
  const ropeThetaRaw = ropeParams?.rope_theta ?? raw.rope_theta ?? 10000;
  if (typeof ropeThetaRaw !== 'number') problems.push(`rope_theta must be a number (got ${JSON.stringify(ropeThetaRaw)})`);

  const config: LlamaConfig = {
    vocab_size: num('vocab_size'),
    hidden_size: num('hidden_size'),
    intermediate_size: num('intermediate_size'),
    num_hidden_layers: num('num_hidden_layers'),
    num_attention_heads: num('num_attention_heads'),
    // transformers' defaults for the optional fields, so configs that omit them load the same.
    num_key_value_heads: num('num_key_value_heads', num('num_attention_heads')),
    max_position_embeddings: maxPos,
    rms_norm_eps: num('rms_norm_eps', 1e-6),
    rope_theta: ropeThetaRaw as number,
    tie_word_embeddings: bool('tie_word_embeddings', false),
    // Llama's attention_bias also biases o_proj; importCheckpoint accepts that bias only when it is zero.
    attention_bias: modelType === 'qwen2' || (modelType === 'llama' && bool('attention_bias', false)),
  };
  if (ropeScaling) config.rope_scaling = ropeScaling;
  const hd = num('head_dim');
  // Kept only when it differs from the derived value, so configs compare equal after a round trip.
  if (hd !== undefined && hd !== config.hidden_size / config.num_attention_heads) config.head_dim = hd;
  for (const k of ['bos_token_id', 'eos_token_id', 'pad_token_id'] as const) {
    const ids = tokenIds(k);
    if (ids.length) config[k] = ids[0];
    if (k === 'eos_token_id' && ids.length > 1) config.eos_token_ids = ids;
  }
  if (problems.length) throw new Error(`config.json: ${problems.join('; ')}`);
  try {
    validateConfig(config);
  } catch (e) {
    throw new Error(`config.json: ${(e as Error).message}`);
  }
  return config;
}

/**
 * config.json for transformers. Always Llama, also for q/k/v biases: with model_type qwen2,
 * transformers 5 replaces tokenizer.json's pipeline with Qwen2's (NFC normalisation), so the
 * byte tokenizer would no longer encode the same. Llama's attention_bias also adds an o_proj
 * bias, which exportCheckpoint writes as zeros.
 */
export function configToJson(c: LlamaConfig, torchDtype = 'float32'): string {
  validateConfig(c);
  const json: Record<string, unknown> = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: c.vocab_size,
    hidden_size: c.hidden_size,
    intermediate_size: c.intermediate_size,
    num_hidden_layers: c.num_hidden_layers,
    num_attention_heads: c.num_attention_heads,
    num_key_value_heads: c.num_key_value_heads,
    head_dim: headDim(c),
    max_position_embeddings: c.max_position_embeddings,
    rms_norm_eps: c.rms_norm_eps,
    rope_theta: c.rope_theta,
    rope_scaling: c.rope_scaling ?? null,
    hidden_act: 'silu',
    attention_bias: c.attention_bias,
    attention_dropout: 0.0,
    mlp_bias: false,
    tie_word_embeddings: c.tie_word_embeddings,
    initializer_range: 0.02,
    use_cache: true,
    torch_dtype: torchDtype,
  };
  if (c.bos_token_id !== undefined) json.bos_token_id = c.bos_token_id;
  if (c.eos_token_id !== undefined) json.eos_token_id = c.eos_token_ids ?? c.eos_token_id;
  if (c.pad_token_id !== undefined) json.pad_token_id = c.pad_token_id;
  return JSON.stringify(json, null, 2);
}

function generationConfigJson(c: LlamaConfig): string {
  const json: Record<string, unknown> = { _from_model_config: true };
  if (c.bos_token_id !== undefined) json.bos_token_id = c.bos_token_id;
  if (c.eos_token_id !== undefined) json.eos_token_id = c.eos_token_ids ?? c.eos_token_id;
  if (c.pad_token_id !== undefined) json.pad_token_id = c.pad_token_id;
  return JSON.stringify(json, null, 2);
}

function checkFlatLength(what: string, data: Float32Array, expected: number): void {
  if (data.length !== expected) {
    throw new Error(`${what} has ${data.length} elements but the config's flat parameter layout has ${expected}`);
  }
}

function tensorsFromFlat(specs: ParamSpec[], flat: Float32Array, prefix = ''): TensorToWrite[] {
  return specs.map((s) => ({ name: prefix + s.name, shape: s.shape, data: flat.subarray(s.offset, s.offset + s.size) }));
}

/** Where a streamed export goes: one file at a time, written from its chunks in order (a chunk is not changed once yielded). */
export interface FileSink {
  file(name: string, chunks: AsyncIterable<Uint8Array>): Promise<void>;
}

/** A sink that keeps the files in memory (a .zip download, an autosave). */
export function memorySink(): FileSink & { files: Map<string, Uint8Array> } {
  const files = new Map<string, Uint8Array>();
  return {
    files,
    async file(name, chunks) {
      const parts: Uint8Array[] = [];
      for await (const c of chunks) parts.push(c);
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      files.set(name, out);
    },
  };
}

/** A weight's float32 values for export, asked for when its turn comes. */
export type ReadWeight = (name: string) => Float32Array | Promise<Float32Array>;

/**
 * Files of a Hugging Face checkpoint folder. `tokenizerFiles` are text files (see
 * Tokenizer.files()); tokenizer_config.json gets model_max_length from the config if it has none.
 */
export function exportCheckpoint(
  config: LlamaConfig,
  flatParams: Float32Array,
  tokenizerFiles: Map<string, string>,
  extra: ExportExtras = {},
): Map<string, Uint8Array> {
  checkFlatLength('flatParams', flatParams, flatParamSize(config));
  const files = sideFiles(config, tokenizerFiles, extra);
  const offsets = new Map(paramSpecs(config).map((s) => [s.name, s]));
  const read = weightReader(config, (name) => {
    const s = offsets.get(name)!;
    return flatParams.subarray(s.offset, s.offset + s.size);
  });
  const dtype = extra.dtype ?? 'F32';
  const { shards, index } = planShards(weightEntries(config), dtype, extra.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES);
  for (const sh of shards) {
    files.set(sh.file, serializeSafetensors(sh.tensors.map((t) => ({ ...t, data: read(t.name) as Float32Array })), {}, dtype));
  }
  if (index) files.set('model.safetensors.index.json', index);
  return files;
}

/**
 * The same folder as exportCheckpoint, written through `sink` a tensor at a time: `read` is
 * asked for each weight as its shard reaches it, so the model is never whole in memory.
 */
export async function writeCheckpoint(
  config: LlamaConfig,
  read: ReadWeight,
  tokenizerFiles: Map<string, string>,
  extra: ExportExtras,
  sink: FileSink,
): Promise<void> {
  const files = sideFiles(config, tokenizerFiles, extra);
  const dtype = extra.dtype ?? 'F32';
  const { shards, index } = planShards(weightEntries(config), dtype, extra.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES);
  const readAll = weightReader(config, read);
  for (const sh of shards) {
    await sink.file(sh.file, (async function* () {
      const { bytes, order } = safetensorsHeader(sh.tensors, {}, dtype);
      yield bytes;
      for (const t of order) {
        const data = await readAll(t.name);
        if (data.length !== count(t)) throw new Error(`${t.name}: ${data.length} values for a tensor of ${count(t)}`);
        yield encodeTensorData(data, dtype);
      }
    })());
  }
  if (index) files.set('model.safetensors.index.json', index);
  for (const [name, bytes] of files) await sink.file(name, (async function* () { yield bytes; })());
}

/** The tensors the weight files hold: the model's, and the zero o_proj biases of a biased config. */
function weightEntries(config: LlamaConfig): TensorEntry[] {
  const entries: TensorEntry[] = paramSpecs(config).map((s) => ({ name: s.name, shape: s.shape }));
  if (config.attention_bias) {
    for (let i = 0; i < config.num_hidden_layers; i++) entries.push({ name: oProjBiasName(i), shape: [config.hidden_size] });
  }
  return entries;
}

/** `read` for the model's tensors; zeros for the o_proj biases (transformers' Llama with attention_bias has them). */
function weightReader(config: LlamaConfig, read: ReadWeight): ReadWeight {
  return (name) => (O_PROJ_BIAS.test(name) ? new Float32Array(config.hidden_size) : read(name));
}

/** Every file of an export but the weights: config, tokenizer, optimizer state, adapter, trainer state. */
function sideFiles(config: LlamaConfig, tokenizerFiles: Map<string, string>, extra: ExportExtras): Map<string, Uint8Array> {
  const specs = paramSpecs(config);
  // The optimizer's moments follow what trained: the adapter in a LoRA run.
  const trained = extra.lora ? loraSpecs(config, extra.lora.config) : specs;
  const trainedSize = extra.lora ? loraSize(config, extra.lora.config) : flatParamSize(config);
  if (extra.optimizer) {
    checkFlatLength('optimizer.m', extra.optimizer.m, trainedSize);
    checkFlatLength('optimizer.v', extra.optimizer.v, trainedSize);
    if (!Number.isInteger(extra.optimizer.step) || extra.optimizer.step < 0) {
      throw new Error(`optimizer.step must be a non-negative integer (got ${extra.optimizer.step})`);
    }
  }
  const dtype = extra.dtype ?? 'F32';
  if (!(dtype in TORCH_DTYPES)) throw new Error(`export dtype must be one of ${Object.keys(TORCH_DTYPES).join(', ')} (got ${String(dtype)})`);
  const maxShardBytes = extra.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES;
  if (!(maxShardBytes > 0)) throw new Error(`maxShardBytes must be > 0 (got ${maxShardBytes})`);
  const enc = new TextEncoder();
  const files = new Map<string, Uint8Array>();
  files.set('config.json', enc.encode(configToJson(config, TORCH_DTYPES[dtype])));
  files.set('generation_config.json', enc.encode(generationConfigJson(config)));
  for (const [name, text] of tokenizerFiles) {
    let out = text;
    if (name === 'tokenizer_config.json') {
      const tc = parseJsonObject(text, name);
      if (tc.model_max_length === undefined) {
        tc.model_max_length = config.max_position_embeddings;
        out = JSON.stringify(tc, null, 2);
      }
    }
    files.set(name, enc.encode(out));
  }

  if (extra.optimizer) {
    const { m, v, step } = extra.optimizer;
    const tensors = [...tensorsFromFlat(trained, m, 'exp_avg.'), ...tensorsFromFlat(trained, v, 'exp_avg_sq.')];
    files.set('optimizer.safetensors', serializeSafetensors(tensors, { step: String(step) }));
  }
  if (extra.lora) {
    for (const [name, bytes] of peftAdapterFiles(config, extra.lora.config, extra.lora.flat, extra.lora.baseModel)) files.set(ADAPTER_DIR + name, bytes);
  }
  if (extra.optimizer || extra.runState !== undefined) {
    const state: Record<string, unknown> = {};
    if (extra.optimizer) state.global_step = extra.optimizer.step;
    if (extra.runState !== undefined) state.run_state = extra.runState;
    files.set('trainer_state.json', enc.encode(JSON.stringify(state, null, 2)));
  }
  if (extra.templates) files.set(LAB_RECORD, enc.encode(JSON.stringify({ templates: extra.templates, ...(extra.rolesTaught === false ? { rolesTaught: false } : {}) }, null, 2) + '\n'));
  return files;
}

function oProjBiasName(layer: number): string {
  return `model.layers.${layer}.self_attn.o_proj.bias`;
}

const O_PROJ_BIAS = /^model\.layers\.(\d+)\.self_attn\.o_proj\.bias$/;

/**
 * Llama checkpoints with attention_bias carry an o_proj bias the model does not have; it is
 * only safe to drop when it is all zeros (as in exported checkpoints).
 */
function checkOProjBias(config: LlamaConfig, name: string, t: LocatedTensor): boolean {
  const m = O_PROJ_BIAS.exec(name);
  if (!m || !config.attention_bias || Number(m[1]) >= config.num_hidden_layers) return false;
  const shape = [config.hidden_size];
  if (!sameShape(t.tensor.shape, shape)) {
    throw new Error(`${t.file}: tensor "${name}" has shape ${fmtShape(t.tensor.shape)} but config.json implies ${fmtShape(shape)}`);
  }
  if (t.tensor.decode().some((v) => v !== 0)) {
    throw new Error(`${t.file}: tensor "${name}" is not zero; o_proj biases are not supported (only q/k/v biases)`);
  }
  return true;
}

/** Buffers transformers registers with the weights in some versions; they are recomputed, not learned. */
function isIgnorableTensor(name: string): boolean {
  return /(^|\.)rotary_emb\.inv_freq$/.test(name) || /\.self_attn\.rotary_emb\./.test(name);
}

interface LocatedTensor {
  file: string;
  tensor: IndexedTensor;
}

function readWeightFiles(files: Map<string, Uint8Array>): { tensors: Map<string, LocatedTensor>; where: string } {
  const dec = new TextDecoder();
  let shardNames: string[];
  let indexMap: Record<string, unknown> | undefined;
  if (files.has('model.safetensors')) {
    shardNames = ['model.safetensors'];
  } else if (files.has('model.safetensors.index.json')) {
    const index = parseJsonObject(dec.decode(files.get('model.safetensors.index.json')!), 'model.safetensors.index.json');
    if (!isPlainObject(index.weight_map)) throw new Error('model.safetensors.index.json: missing weight_map object');
    indexMap = index.weight_map;
    const names = new Set<string>();
    for (const [tensor, shard] of Object.entries(indexMap)) {
      if (typeof shard !== 'string') throw new Error(`model.safetensors.index.json: weight_map entry for "${tensor}" is not a file name`);
      names.add(shard);
    }
    shardNames = [...names].sort();
    const absent = shardNames.filter((n) => !files.has(n));
    if (absent.length) throw new Error(`model.safetensors.index.json lists shard files that are missing: ${absent.join(', ')}`);
  } else if (files.has('pytorch_model.bin') || files.has('pytorch_model.bin.index.json')) {
    throw new Error('only safetensors weights are supported; this checkpoint has PyTorch .bin weights (convert them to model.safetensors)');
  } else {
    throw new Error('no model weights: expected model.safetensors or model.safetensors.index.json');
  }

  const located = new Map<string, LocatedTensor>();
  for (const file of shardNames) {
    let parsed;
    try {
      parsed = indexSafetensors(files.get(file)!);
    } catch (e) {
      throw new Error(`${file}: ${(e as Error).message}`);
    }
    for (const [name, tensor] of parsed.tensors) {
      const prev = located.get(name);
      if (prev) throw new Error(`tensor "${name}" appears in both ${prev.file} and ${file}`);
      located.set(name, { file, tensor });
    }
  }
  if (indexMap) {
    for (const [name, shard] of Object.entries(indexMap)) {
      const found = located.get(name);
      if (!found) throw new Error(`model.safetensors.index.json: tensor "${name}" is not in ${String(shard)}`);
      if (found.file !== shard) {
        throw new Error(`model.safetensors.index.json: tensor "${name}" is listed in ${String(shard)} but found in ${found.file}`);
      }
    }
  }
  return { tensors: located, where: shardNames.length === 1 ? shardNames[0]! : 'model.safetensors.index.json' };
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** The first non-finite element's index (−1 if none) and the element of largest magnitude, in one pass. */
function scanValues(data: Float32Array): { nonFinite: number; largest: number } {
  let largest = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (!Number.isFinite(v)) return { nonFinite: i, largest };
    if (Math.abs(v) > Math.abs(largest)) largest = v;
  }
  return { nonFinite: -1, largest };
}

/**
 * Throws unless `tensors` hold exactly the parameters `specs` describe, with their shapes and
 * finite values; `extraOk` accepts tensors that may be present beyond the specs. Returns the
 * value of largest magnitude found and its tensor.
 */
function checkTensorSet(
  specs: ParamSpec[],
  tensors: Map<string, LocatedTensor>,
  prefix: string,
  extraOk: (name: string) => boolean,
  where: string,
): { name: string; value: number } {
  const largest = { name: '', value: 0 };
  for (const s of specs) {
    const name = prefix + s.name;
    const t = tensors.get(name);
    if (!t) {
      throw new Error(`${where}: tensor "${name}" is missing (config.json implies shape ${fmtShape(s.shape)})`);
    }
    if (!sameShape(t.tensor.shape, s.shape)) {
      throw new Error(
        `${t.file}: tensor "${name}" has shape ${fmtShape(t.tensor.shape)} but config.json implies ${fmtShape(s.shape)}`,
      );
    }
    const data = t.tensor.decode();
    const scan = scanValues(data);
    if (scan.nonFinite >= 0) throw new Error(`${t.file}: tensor "${name}" has a non-finite value (${data[scan.nonFinite]}) at element ${scan.nonFinite}`);
    if (Math.abs(scan.largest) > Math.abs(largest.value)) Object.assign(largest, { name, value: scan.largest });
  }
  const expected = new Set(specs.map((s) => prefix + s.name));
  for (const [name, t] of tensors) {
    if (!expected.has(name) && !extraOk(name)) {
      throw new Error(`${t.file}: unexpected tensor "${name}" (not part of the model config.json describes)`);
    }
  }
  return largest;
}

function copyToFlat(specs: ParamSpec[], tensors: Map<string, LocatedTensor>, prefix: string, size: number): Float32Array {
  const flat = new Float32Array(size);
  for (const s of specs) flat.set(tensors.get(prefix + s.name)!.tensor.decode(), s.offset);
  return flat;
}

/**
 * Reads a checkpoint folder. Everything is validated before the flat buffers are built, and
 * any refusal names the file, the tensor and what was expected.
 */
export function importCheckpoint(files: Map<string, Uint8Array>): ImportedCheckpoint {
  const dec = new TextDecoder();
  const configBytes = files.get('config.json');
  if (!configBytes) {
    if (files.has('adapter_config.json')) throw new Error('this is a PEFT adapter folder (adapter_config.json, no config.json): load its base model first, then add the adapter to it');
    throw new Error('config.json is missing');
  }
  const config = readConfigJson(dec.decode(configBytes));
  const specs = paramSpecs(config);
  const size = flatParamSize(config);
  let lora: CheckpointAdapter | undefined;
  if (files.has(ADAPTER_DIR + 'adapter_config.json')) {
    const adapterFiles = new Map([...files].filter(([n]) => n.startsWith(ADAPTER_DIR)).map(([n, b]) => [n.slice(ADAPTER_DIR.length), b]));
    try {
      const { lora: loraConfig, flat } = importPeftAdapter(config, adapterFiles);
      lora = { config: loraConfig, flat };
    } catch (e) {
      throw new Error(`${ADAPTER_DIR}${(e as Error).message}`);
    }
  }
  const trained = lora ? loraSpecs(config, lora.config) : specs;
  const trainedSize = lora ? loraSize(config, lora.config) : size;

  const { tensors: weights, where } = readWeightFiles(files);
  const lmHead = weights.get('lm_head.weight');
  const vocabShape = [config.vocab_size, config.hidden_size];
  if (config.tie_word_embeddings && lmHead && !sameShape(lmHead.tensor.shape, vocabShape)) {
    throw new Error(
      `${lmHead.file}: tensor "lm_head.weight" has shape ${fmtShape(lmHead.tensor.shape)} but config.json implies ${fmtShape(vocabShape)}`,
    );
  }
  // Tied checkpoints sometimes store lm_head.weight anyway; the embedding is the source of truth.
  const largest = checkTensorSet(
    specs,
    weights,
    '',
    (n) =>
      isIgnorableTensor(n) ||
      (config.tie_word_embeddings && n === 'lm_head.weight') ||
      checkOProjBias(config, n, weights.get(n)!),
    where,
  );

  let optimizerTensors: Map<string, LocatedTensor> | undefined;
  let optimizerStep: number | undefined;
  const optBytes = files.get('optimizer.safetensors');
  if (optBytes) {
    let parsed;
    try {
      parsed = indexSafetensors(optBytes);
    } catch (e) {
      throw new Error(`optimizer.safetensors: ${(e as Error).message}`);
    }
    optimizerTensors = new Map([...parsed.tensors].map(([n, t]) => [n, { file: 'optimizer.safetensors', tensor: t }]));
    const o = 'optimizer.safetensors';
    checkTensorSet(trained, optimizerTensors, 'exp_avg.', (n) => n.startsWith('exp_avg_sq.'), o);
    checkTensorSet(trained, optimizerTensors, 'exp_avg_sq.', (n) => n.startsWith('exp_avg.'), o);
    const stepText = parsed.metadata.step;
    optimizerStep = stepText === undefined ? NaN : Number(stepText);
    if (!Number.isInteger(optimizerStep) || optimizerStep < 0) {
      throw new Error(`optimizer.safetensors: metadata "step" must be a non-negative integer (got ${JSON.stringify(stepText)})`);
    }
  }

  const record = files.has(LAB_RECORD) ? parseLabRecord(files.get(LAB_RECORD)!) : {};

  let runState: unknown;
  const stateBytes = files.get('trainer_state.json');
  if (stateBytes) runState = parseJsonObject(dec.decode(stateBytes), 'trainer_state.json').run_state;

  const tokenizerJson = files.has('tokenizer.json') ? dec.decode(files.get('tokenizer.json')!) : undefined;
  const tokenizerConfigJson = files.has('tokenizer_config.json') ? dec.decode(files.get('tokenizer_config.json')!) : undefined;

  const names = new Set(specs.map((s) => s.name));
  const located = (name: string): LocatedTensor => {
    const t = weights.get(name);
    if (!t || !names.has(name)) throw new Error(`no parameter "${name}" in this checkpoint`);
    return t;
  };
  const shardBytes = new Map<string, number>();
  for (const s of specs) {
    const t = weights.get(s.name)!;
    shardBytes.set(t.file, (shardBytes.get(t.file) ?? 0) + t.tensor.bytes);
  }
  const result: ImportedCheckpoint = {
    config,
    weights: {
      shards: [...shardBytes].map(([file, bytes]) => ({ file, bytes })),
      where: (name) => {
        const t = located(name);
        return { file: t.file, bytes: t.tensor.bytes };
      },
      read: (name) => located(name).tensor.decode(),
      flat: () => copyToFlat(specs, weights, '', size),
      largest,
    },
    rolesTaught: rolesTaught(record),
  };
  if (tokenizerJson !== undefined) result.tokenizerJson = tokenizerJson;
  if (tokenizerConfigJson !== undefined) result.tokenizerConfigJson = tokenizerConfigJson;
  if (optimizerTensors) {
    result.optimizer = {
      m: copyToFlat(trained, optimizerTensors, 'exp_avg.', trainedSize),
      v: copyToFlat(trained, optimizerTensors, 'exp_avg_sq.', trainedSize),
      step: optimizerStep!,
    };
  }
  if (runState !== undefined) result.runState = runState;
  if (lora) result.lora = lora;
  if (record.templates) result.templates = record.templates;
  return result;
}
