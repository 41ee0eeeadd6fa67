/**
 * A Hugging Face checkpoint folder as an in-memory file map, or streamed to a sink file by file,
 * written so that transformers' `from_pretrained` loads the model unchanged: config, weights in
 * one file or sharded as Hugging Face shards them, tokenizer, and the lab's extras (optimizer
 * state, trainer state, LoRA adapter, LAB_RECORD). Writing the files is the caller's job.
 */
import type { FileSink } from '../platform/fileSink';
import { ADAPTER_DIR, LAB_RECORD, O_PROJ_BIAS, oProjBiasName, type CheckpointAdapter, type OptimizerState, type PromptSet } from './checkpoint';
import { flatParamSize, paramSpecs, type LlamaConfig, type ParamSpec } from './config';
import { configToJson, generationConfigJson, parseJsonObject } from './configJson';
import { loraSize, loraSpecs, peftAdapterFiles } from './lora';
import { DTYPE_BYTES, encodeTensorData, safetensorsHeader, serializeSafetensors, type SafetensorsDtype, type TensorEntry, type TensorToWrite } from './safetensors';

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
  /** With templates: the run settings the model is meant to be run with (LAB_RECORD's settings), carried from the checkpoint it came from. */
  labSettings?: Record<string, unknown>;
}

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

function checkFlatLength(what: string, data: Float32Array, expected: number): void {
  if (data.length !== expected) {
    throw new Error(`${what} has ${data.length} elements but the config's flat parameter layout has ${expected}`);
  }
}

function tensorsFromFlat(specs: ParamSpec[], flat: Float32Array, prefix = ''): TensorToWrite[] {
  return specs.map((s) => ({ name: prefix + s.name, shape: s.shape, data: flat.subarray(s.offset, s.offset + s.size) }));
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
  if (extra.templates) {
    const record = { templates: extra.templates, ...(extra.rolesTaught === false ? { rolesTaught: false } : {}), ...(extra.labSettings ? { settings: extra.labSettings } : {}) };
    files.set(LAB_RECORD, enc.encode(JSON.stringify(record, null, 2) + '\n'));
  }
  return files;
}
