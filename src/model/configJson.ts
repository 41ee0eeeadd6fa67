/**
 * config.json both ways: a Hub config (Llama, Qwen2, Mistral) read into a LlamaConfig, and the
 * LlamaConfig written as transformers loads it. A module of its own because the import
 * (checkpoint.ts) and the export (checkpointExport.ts) both need it.
 */
import { headDim, validateConfig, type LlamaConfig, type RopeScaling } from './config';

const SUPPORTED_MODEL_TYPES = ['llama', 'qwen2', 'mistral'] as const;

/** A JSON object (not an array, not null): the shape of every JSON file of a checkpoint folder. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A JSON file of a checkpoint folder that must hold an object; a bad one is refused by name. */
export function parseJsonObject(text: string, file: string): Record<string, unknown> {
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

export function generationConfigJson(c: LlamaConfig): string {
  const json: Record<string, unknown> = { _from_model_config: true };
  if (c.bos_token_id !== undefined) json.bos_token_id = c.bos_token_id;
  if (c.eos_token_id !== undefined) json.eos_token_id = c.eos_token_ids ?? c.eos_token_id;
  if (c.pad_token_id !== undefined) json.pad_token_id = c.pad_token_id;
  return JSON.stringify(json, null, 2);
}
