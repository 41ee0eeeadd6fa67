/**
 * Model configuration with Hugging Face `LlamaConfig` field names, so a config.json from the
 * Hub loads as is and an exported one loads in transformers unchanged.
 */
export interface LlamaConfig {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  max_position_embeddings: number;
  rms_norm_eps: number;
  rope_theta: number;
  tie_word_embeddings: boolean;
  /** Qwen2-style q/k/v biases (o_proj has none). */
  attention_bias: boolean;
  /** Defaults to hidden_size / num_attention_heads. */
  head_dim?: number;
  /** RoPE frequency scaling (Hugging Face `rope_scaling` / `rope_parameters`); absent: plain RoPE. */
  rope_scaling?: RopeScaling | null;
  bos_token_id?: number;
  eos_token_id?: number;
  /** Every id that ends generation when the checkpoint lists several (Llama 3: end of text, of turn, of message); eos_token_id is its first. */
  eos_token_ids?: number[];
  pad_token_id?: number;
}

/** The ids that end a completion: the tokenizer's EOS and every EOS the model config names. */
export function stopTokenIds(c: LlamaConfig, tokenizerEos: number): number[] {
  return [...new Set([tokenizerEos, ...(c.eos_token_ids ?? (c.eos_token_id === undefined ? [] : [c.eos_token_id]))])];
}

/**
 * The RoPE scalings real checkpoints use. `dynamic` (NTK) only changes the frequencies beyond
 * max_position_embeddings, which no sequence here reaches, so within the context it is plain RoPE.
 */
export type RopeScaling =
  | { rope_type: 'linear'; factor: number }
  | { rope_type: 'dynamic'; factor: number }
  | { rope_type: 'llama3'; factor: number; low_freq_factor: number; high_freq_factor: number; original_max_position_embeddings: number };

/** inv_freq[i] = theta^(−2i/hd), scaled as transformers' rope initialisers do, in float64. */
export function ropeInvFreq(c: LlamaConfig): Float64Array {
  const hd = headDim(c);
  const inv = Float64Array.from({ length: hd / 2 }, (_, i) => 1 / Math.pow(c.rope_theta, (2 * i) / hd));
  const s = c.rope_scaling;
  if (!s || s.rope_type === 'dynamic') return inv;
  if (s.rope_type === 'linear') return inv.map((f) => f / s.factor);
  // Llama 3: long wavelengths slowed by `factor`, short ones kept, the band between blended.
  const lowWavelen = s.original_max_position_embeddings / s.low_freq_factor;
  const highWavelen = s.original_max_position_embeddings / s.high_freq_factor;
  return inv.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < highWavelen) return f;
    if (wavelen > lowWavelen) return f / s.factor;
    const smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    return (1 - smooth) * (f / s.factor) + smooth * f;
  });
}

export function headDim(c: LlamaConfig): number {
  return c.head_dim ?? c.hidden_size / c.num_attention_heads;
}

/** Checks the invariants the kernels rely on; throws with every problem found. */
export function validateConfig(c: LlamaConfig): void {
  const problems: string[] = [];
  const positive = [
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_hidden_layers',
    'num_attention_heads',
    'num_key_value_heads',
    'max_position_embeddings',
  ] as const;
  for (const k of positive) {
    if (!Number.isInteger(c[k]) || c[k] <= 0) problems.push(`${k} must be a positive integer (got ${c[k]})`);
  }
  const hd = headDim(c);
  if (!Number.isInteger(hd) || hd <= 0) problems.push(`head_dim ${hd} is not a positive integer`);
  if (hd % 2 !== 0) problems.push(`head_dim ${hd} must be even for rotary embeddings`);
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    problems.push(`num_attention_heads (${c.num_attention_heads}) must be a multiple of num_key_value_heads (${c.num_key_value_heads})`);
  }
  if (!(c.rms_norm_eps > 0)) problems.push(`rms_norm_eps must be > 0 (got ${c.rms_norm_eps})`);
  if (!(c.rope_theta > 0)) problems.push(`rope_theta must be > 0 (got ${c.rope_theta})`);
  const s = c.rope_scaling;
  if (s) {
    if (!(s.factor >= 1)) problems.push(`rope_scaling.factor must be ≥ 1 (got ${s.factor})`);
    if (s.rope_type === 'llama3') {
      if (!(s.original_max_position_embeddings > 0)) problems.push(`rope_scaling.original_max_position_embeddings must be > 0 (got ${s.original_max_position_embeddings})`);
      if (!(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor)) {
        problems.push(`rope_scaling needs 0 < low_freq_factor < high_freq_factor (got ${s.low_freq_factor}, ${s.high_freq_factor})`);
      }
    }
  }
  if (problems.length) throw new Error(`invalid model config: ${problems.join('; ')}`);
}

export interface ParamSpec {
  /** Hugging Face tensor name. */
  name: string;
  shape: number[];
  /** Weight decay applies (matrices); off for norms, biases and embeddings. */
  decay: boolean;
  /** Offset in elements within the flat parameter buffer. */
  offset: number;
  size: number;
}

/** Parameters in a fixed order, packed back to back in one flat buffer (llm.c style). */
export function paramSpecs(c: LlamaConfig): ParamSpec[] {
  validateConfig(c);
  const H = c.hidden_size;
  const hd = headDim(c);
  const qDim = c.num_attention_heads * hd;
  const kvDim = c.num_key_value_heads * hd;
  const I = c.intermediate_size;
  const list: Omit<ParamSpec, 'offset' | 'size'>[] = [];
  list.push({ name: 'model.embed_tokens.weight', shape: [c.vocab_size, H], decay: false });
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    list.push({ name: `${p}.input_layernorm.weight`, shape: [H], decay: false });
    // q, k, v weights (and then their biases) are adjacent, so one matmul computes all three.
    list.push({ name: `${p}.self_attn.q_proj.weight`, shape: [qDim, H], decay: true });
    list.push({ name: `${p}.self_attn.k_proj.weight`, shape: [kvDim, H], decay: true });
    list.push({ name: `${p}.self_attn.v_proj.weight`, shape: [kvDim, H], decay: true });
    if (c.attention_bias) {
      list.push({ name: `${p}.self_attn.q_proj.bias`, shape: [qDim], decay: false });
      list.push({ name: `${p}.self_attn.k_proj.bias`, shape: [kvDim], decay: false });
      list.push({ name: `${p}.self_attn.v_proj.bias`, shape: [kvDim], decay: false });
    }
    list.push({ name: `${p}.self_attn.o_proj.weight`, shape: [H, qDim], decay: true });
    list.push({ name: `${p}.post_attention_layernorm.weight`, shape: [H], decay: false });
    // gate and up adjacent: one matmul computes both.
    list.push({ name: `${p}.mlp.gate_proj.weight`, shape: [I, H], decay: true });
    list.push({ name: `${p}.mlp.up_proj.weight`, shape: [I, H], decay: true });
    list.push({ name: `${p}.mlp.down_proj.weight`, shape: [H, I], decay: true });
  }
  list.push({ name: 'model.norm.weight', shape: [H], decay: false });
  if (!c.tie_word_embeddings) list.push({ name: 'lm_head.weight', shape: [c.vocab_size, H], decay: true });
  let offset = 0;
  return list.map((p) => {
    const size = p.shape.reduce((a, b) => a * b, 1);
    const spec = { ...p, offset, size };
    offset += size;
    return spec;
  });
}

export function paramCount(c: LlamaConfig): number {
  return paramSpecs(c).reduce((n, p) => n + p.size, 0);
}

/** Elements of the flat parameter buffer. */
export function flatParamSize(c: LlamaConfig): number {
  const specs = paramSpecs(c);
  const last = specs[specs.length - 1]!;
  return last.offset + last.size;
}

/** Byte-level vocabulary: 256 bytes, then special tokens; padded to a multiple of 8. */
export const BYTE_VOCAB_SIZE = 264;

const base = {
  vocab_size: BYTE_VOCAB_SIZE,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  attention_bias: false,
  pad_token_id: 256,
  bos_token_id: 257,
  eos_token_id: 258,
} as const;

/** Built-in presets trained from scratch with the byte-level tokenizer. */
export const PRESETS = {
  /** ~1.0M parameters: trains at a usable speed on SwiftShader. */
  tiny: {
    ...base,
    hidden_size: 128,
    intermediate_size: 512,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 256,
  },
  /** ~9.9M parameters, for real GPUs. */
  small: {
    ...base,
    hidden_size: 320,
    intermediate_size: 864,
    num_hidden_layers: 8,
    num_attention_heads: 5,
    num_key_value_heads: 5,
    max_position_embeddings: 512,
  },
  /** ~50M parameters, for real GPUs. */
  base: {
    ...base,
    hidden_size: 640,
    intermediate_size: 1536,
    num_hidden_layers: 12,
    num_attention_heads: 10,
    num_key_value_heads: 5,
    max_position_embeddings: 1024,
  },
} satisfies Record<string, LlamaConfig>;

export type PresetName = keyof typeof PRESETS;
