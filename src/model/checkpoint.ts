/**
 * A Hugging Face checkpoint folder as an in-memory file map (name -> bytes), read: Hub
 * checkpoints of the Llama family and the lab's own exports (checkpointExport.ts writes them).
 * Also what both directions share: the lab's record beside config.json, the adapter's folder,
 * the optimizer state's layout. Reading the files is the caller's job, so this runs in workers too.
 */
import { flatParamSize, paramSpecs, type LlamaConfig, type ParamSpec } from './config';
import { isPlainObject, parseJsonObject, readConfigJson } from './configJson';
import { importPeftAdapter, loraSize, loraSpecs, type LoraConfig } from './lora';
import { indexSafetensors, type IndexedTensor } from './safetensors';

export interface OptimizerState {
  /** Adam first and second moments, laid out like the flat buffer that trains (the model's, or its adapter's). */
  m: Float32Array;
  v: Float32Array;
  step: number;
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
 * warm-up says only templates; a base pretrained here for compact prompts says false), and the
 * run settings it is meant to be run with (settings: a testbed's token limits, estimator, samples,
 * lr, as `evolve --config` takes them; the run's layer checks them, as it checks --config).
 */
export interface LabRecord {
  templates?: PromptSet;
  rolesTaught?: boolean;
  settings?: Record<string, unknown>;
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
  const settings = record.settings;
  if (settings !== undefined) {
    if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw new Error(`${LAB_RECORD}: "settings" must be a JSON object of run settings (got ${JSON.stringify(settings)})`);
    out.settings = settings as Record<string, unknown>;
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
  /** The run settings LAB_RECORD says the model is meant to be run with (unchecked here: the run's layer checks them). */
  labSettings?: Record<string, unknown>;
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

function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** Llama's o_proj biases, by layer: the export writes them as zeros, the import accepts them only as zeros (checkOProjBias). */
export function oProjBiasName(layer: number): string {
  return `model.layers.${layer}.self_attn.o_proj.bias`;
}

export const O_PROJ_BIAS = /^model\.layers\.(\d+)\.self_attn\.o_proj\.bias$/;

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
  if (record.settings) result.labSettings = record.settings;
  return result;
}
