/**
 * A GGUF file (llama.cpp's model format, version 3) of a Llama-family config and its weights,
 * so that llama.cpp runs the very model the engine runs: the same shape and, tensor for tensor,
 * the same values (Hugging Face names in, llama.cpp's names and layout out). It is written a
 * tensor at a time, so a 0.5 B model never sits in memory whole.
 *
 * Layout, as llama.cpp's convert_hf_to_gguf.py writes it: a matrix [rows, cols] (row-major, as
 * Hugging Face stores it) is a GGUF tensor of dims [cols, rows] (the innermost dimension first);
 * norms and biases stay f32; the `llama` architecture rotates pairs (i, i+1) where Hugging Face
 * rotates (i, i + d/2), so its q and k rows are permuted to match, while `qwen2` rotates as
 * Hugging Face does and keeps them as they are.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { headDim, paramSpecs, type LlamaConfig } from '../../src/model/config';
import { f32ToHalves } from '../../src/util/half';

/** GGUF's value types (gguf.h). */
const T = { u32: 4, i32: 5, f32: 6, string: 8, array: 9 } as const;
/** GGML tensor types (ggml.h). */
const GGML = { f32: 0, f16: 1 } as const;
/** llama_ftype: all f32, or f16 matrices (`general.file_type`). */
const FILE_TYPE = { f32: 0, f16: 1 } as const;
const ALIGNMENT = 32;

type Value =
  | { type: 'u32' | 'i32' | 'f32'; value: number }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: readonly string[] }
  | { type: 'i32s'; value: readonly number[] };

export interface GgufTokens {
  /** Token strings by id, as many as the vocabulary. */
  tokens: readonly string[];
  /** Ids of control tokens (special), marked so llama.cpp never prints them as text. */
  control: readonly number[];
  eos: number;
  bos?: number;
}

export interface GgufTensor {
  /** llama.cpp's name. */
  name: string;
  /** Hugging Face's name, the source of its values. */
  source: string;
  /** GGUF dims, innermost first. */
  dims: number[];
  type: 'f32' | 'f16';
}

/** The architecture llama.cpp runs a config as: Qwen2's biases make it `qwen2`, otherwise `llama`. */
export function ggufArch(c: LlamaConfig): 'qwen2' | 'llama' {
  return c.attention_bias ? 'qwen2' : 'llama';
}

const LAYER_NAMES: Record<string, string> = {
  'input_layernorm.weight': 'attn_norm.weight',
  'self_attn.q_proj.weight': 'attn_q.weight',
  'self_attn.k_proj.weight': 'attn_k.weight',
  'self_attn.v_proj.weight': 'attn_v.weight',
  'self_attn.q_proj.bias': 'attn_q.bias',
  'self_attn.k_proj.bias': 'attn_k.bias',
  'self_attn.v_proj.bias': 'attn_v.bias',
  'self_attn.o_proj.weight': 'attn_output.weight',
  'post_attention_layernorm.weight': 'ffn_norm.weight',
  'mlp.gate_proj.weight': 'ffn_gate.weight',
  'mlp.up_proj.weight': 'ffn_up.weight',
  'mlp.down_proj.weight': 'ffn_down.weight',
};

function ggufName(hf: string): string {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  if (hf === 'lm_head.weight') return 'output.weight';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  const tail = m && LAYER_NAMES[m[2]!];
  if (!tail) throw new Error(`gguf: no llama.cpp name for ${hf}`);
  return `blk.${m[1]}.${tail}`;
}

/** The file's tensors, in the config's parameter order: matrices in `dtype`, vectors in f32. */
export function ggufTensors(c: LlamaConfig, dtype: 'f32' | 'f16'): GgufTensor[] {
  return paramSpecs(c).map((s) => ({
    name: ggufName(s.name),
    source: s.name,
    dims: [...s.shape].reverse(),
    type: s.shape.length === 2 ? dtype : 'f32',
  }));
}

/**
 * The rows of a q or k projection (weight or bias) reordered for llama.cpp's `llama` rotary
 * layout: within each head, row j of the first half and row j of the second become rows 2j and
 * 2j + 1 (convert_hf_to_gguf.py's permute). `cols` is 1 for a bias.
 */
export function permuteRotary(values: Float32Array, heads: number, cols: number): Float32Array {
  const rows = values.length / cols;
  const hd = rows / heads;
  const half = hd / 2;
  const out = new Float32Array(values.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < half; j++)
      for (const [from, to] of [
        [j, 2 * j],
        [half + j, 2 * j + 1],
      ] as const)
        out.set(values.subarray((h * hd + from) * cols, (h * hd + from + 1) * cols), (h * hd + to) * cols);
  return out;
}

function metadata(c: LlamaConfig, dtype: 'f32' | 'f16', vocab: GgufTokens, name: string): [string, Value][] {
  if (c.rope_scaling) throw new Error('gguf: RoPE scaling is not written (the peers run plain RoPE shapes)');
  if (vocab.tokens.length !== c.vocab_size) throw new Error(`gguf: ${vocab.tokens.length} tokens for a vocabulary of ${c.vocab_size}`);
  const arch = ggufArch(c);
  const hd = headDim(c);
  const control = new Set(vocab.control);
  const kv: [string, Value][] = [
    ['general.architecture', { type: 'string', value: arch }],
    ['general.name', { type: 'string', value: name }],
    ['general.file_type', { type: 'u32', value: FILE_TYPE[dtype] }],
    ['general.alignment', { type: 'u32', value: ALIGNMENT }],
    [`${arch}.context_length`, { type: 'u32', value: c.max_position_embeddings }],
    [`${arch}.embedding_length`, { type: 'u32', value: c.hidden_size }],
    [`${arch}.block_count`, { type: 'u32', value: c.num_hidden_layers }],
    [`${arch}.feed_forward_length`, { type: 'u32', value: c.intermediate_size }],
    [`${arch}.attention.head_count`, { type: 'u32', value: c.num_attention_heads }],
    [`${arch}.attention.head_count_kv`, { type: 'u32', value: c.num_key_value_heads }],
    [`${arch}.attention.key_length`, { type: 'u32', value: hd }],
    [`${arch}.attention.value_length`, { type: 'u32', value: hd }],
    [`${arch}.rope.dimension_count`, { type: 'u32', value: hd }],
    [`${arch}.rope.freq_base`, { type: 'f32', value: c.rope_theta }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: 'f32', value: c.rms_norm_eps }],
    [`${arch}.vocab_size`, { type: 'u32', value: c.vocab_size }],
    // A byte-level BPE vocabulary with no merges: ids go in and come out, nothing is tokenized.
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: 'default' }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: vocab.tokens }],
    ['tokenizer.ggml.token_type', { type: 'i32s', value: vocab.tokens.map((_, i) => (control.has(i) ? 3 : 1)) }],
    ['tokenizer.ggml.merges', { type: 'strings', value: [] }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: vocab.eos }],
  ];
  if (vocab.bos !== undefined) kv.push(['tokenizer.ggml.bos_token_id', { type: 'u32', value: vocab.bos }]);
  return kv;
}

/** Appends little-endian GGUF fields to a growing byte list. */
class Bytes {
  private chunks: Uint8Array[] = [];
  length = 0;
  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  private num(bytes: number, set: (v: DataView) => void): void {
    const b = new Uint8Array(bytes);
    set(new DataView(b.buffer));
    this.push(b);
  }
  u32 = (v: number) => this.num(4, (d) => d.setUint32(0, v, true));
  i32 = (v: number) => this.num(4, (d) => d.setInt32(0, v, true));
  f32 = (v: number) => this.num(4, (d) => d.setFloat32(0, v, true));
  u64 = (v: number) => this.num(8, (d) => d.setBigUint64(0, BigInt(v), true));
  str(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.push(b);
  }
  pad(): void {
    this.push(new Uint8Array((ALIGNMENT - (this.length % ALIGNMENT)) % ALIGNMENT));
  }
  value(v: Value): void {
    switch (v.type) {
      case 'u32':
        return this.u32(v.value);
      case 'i32':
        return this.i32(v.value);
      case 'f32':
        return this.f32(v.value);
      case 'string':
        return this.str(v.value);
      case 'strings':
        this.u32(T.string);
        this.u64(v.value.length);
        for (const s of v.value) this.str(s);
        return;
      case 'i32s':
        this.u32(T.i32);
        this.u64(v.value.length);
        for (const x of v.value) this.i32(x);
    }
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

const TYPE_CODE: Record<Value['type'], number> = { u32: T.u32, i32: T.i32, f32: T.f32, string: T.string, strings: T.array, i32s: T.array };

function tensorBytes(t: GgufTensor): number {
  return t.dims.reduce((a, b) => a * b, 1) * (t.type === 'f16' ? 2 : 4);
}

export interface GgufOptions {
  dtype: 'f32' | 'f16';
  vocab: GgufTokens;
  name?: string;
}

/**
 * Writes `path`: `config`'s model with each tensor's values read by its Hugging Face name
 * (`read(name)`, row-major as paramSpecs shapes it). Returns the bytes written.
 */
export function writeGguf(path: string, config: LlamaConfig, read: (hfName: string) => Float32Array, o: GgufOptions): number {
  const tensors = ggufTensors(config, o.dtype);
  const head = new Bytes();
  const kv = metadata(config, o.dtype, o.vocab, o.name ?? `${ggufArch(config)}-random`);
  head.u32(0x46554747); // "GGUF"
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.length);
  for (const [key, v] of kv) {
    head.str(key);
    head.u32(TYPE_CODE[v.type]);
    head.value(v);
  }
  let offset = 0;
  for (const t of tensors) {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML[t.type]);
    head.u64(offset);
    offset += Math.ceil(tensorBytes(t) / ALIGNMENT) * ALIGNMENT;
  }
  head.pad();
  const fd = openSync(path, 'w');
  try {
    let written = writeSync(fd, head.bytes());
    const rotary = ggufArch(config) === 'llama';
    const hd = headDim(config);
    for (const t of tensors) {
      let values = read(t.source);
      const expect = t.dims.reduce((a, b) => a * b, 1);
      if (values.length !== expect) throw new Error(`gguf: ${t.source} has ${values.length} values, its shape ${expect}`);
      if (rotary && /\.(q|k)_proj\./.test(t.source)) {
        const heads = t.source.includes('.q_proj.') ? config.num_attention_heads : config.num_key_value_heads;
        values = permuteRotary(values, heads, values.length / (heads * hd));
      }
      const data = t.type === 'f16' ? f32ToHalves(values) : values;
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      written += writeSync(fd, bytes);
      const pad = (ALIGNMENT - (bytes.length % ALIGNMENT)) % ALIGNMENT;
      if (pad) written += writeSync(fd, new Uint8Array(pad));
    }
    return written;
  } finally {
    closeSync(fd);
  }
}
