/** Helpers for the model's GPU-versus-reference tests. Not part of the app bundle. */
import type { Runtime } from '../gpu/runtime';
import { rng } from '../util/random';
import { BYTE_VOCAB_SIZE, flatParamSize, paramSpecs, type LlamaConfig } from './config';
import { randomParams, type RefBatch, type RefParams } from './reference';
import { Transformer, type Batch } from './transformer';

/** A config small enough for the float64 reference, with GQA and every kind of parameter. */
export const SMALL_CONFIG: LlamaConfig = {
  vocab_size: 37,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: false,
  attention_bias: false,
};

/** A byte-vocabulary model for the generation tests, with GQA and tied embeddings. */
export const DECODE_CONFIG: LlamaConfig = {
  vocab_size: BYTE_VOCAB_SIZE,
  hidden_size: 48,
  intermediate_size: 96,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 96,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  attention_bias: false,
};

/** Random weights large enough that the next-token logits are well apart (greedy choices are not near-ties). */
export function decodeModel(rt: Runtime, config: LlamaConfig, seed: number): Transformer {
  return Transformer.fromFlat(rt, config, toFlat(config, randomParams(config, rng(seed), 0.25)));
}

export function toFlat(config: LlamaConfig, params: RefParams): Float32Array {
  const flat = new Float32Array(flatParamSize(config));
  for (const s of paramSpecs(config)) flat.set(params.get(s.name)!, s.offset);
  return flat;
}

/** toFlat's inverse: the named tensors of a flat parameter array, in float64. */
export function fromFlat(config: LlamaConfig, flat: Float32Array): RefParams {
  return new Map(paramSpecs(config).map((s) => [s.name, Float64Array.from(flat.subarray(s.offset, s.offset + s.size))]));
}

/** The reference computed on exactly the f32 weights the GPU holds. */
export function roundToF32(params: RefParams): RefParams {
  return new Map([...params].map(([k, v]) => [k, Float64Array.from(v, Math.fround)]));
}

export function makeBatch(config: LlamaConfig, B: number, T: number, padding: 'none' | 'left' | 'right', random: () => number): RefBatch {
  const N = B * T;
  const tokens = Int32Array.from({ length: N }, () => Math.floor(random() * config.vocab_size));
  const mask = new Uint8Array(N).fill(1);
  for (let b = 0; b < B && padding !== 'none'; b++) {
    const pad = b === 0 ? 2 : Math.floor(random() * 3);
    for (let i = 0; i < pad; i++) mask[b * T + (padding === 'left' ? i : T - 1 - i)] = 0;
  }
  const positions = new Int32Array(N);
  for (let b = 0; b < B; b++) {
    let p = 0;
    for (let t = 0; t < T; t++) {
      positions[b * T + t] = padding === 'left' ? Math.max(0, p - 1 + mask[b * T + t]!) : t;
      p += mask[b * T + t]!;
    }
  }
  const targets = Int32Array.from({ length: N }, (_, i) =>
    mask[i] && random() > 0.15 ? Math.floor(random() * config.vocab_size) : -1,
  );
  const weights = Float64Array.from(targets, (t) => (t >= 0 ? 0.05 + random() * 0.1 : 0));
  return { B, T, tokens, mask, positions, targets, weights };
}

export function gpuBatch(b: RefBatch): Batch {
  return { B: b.B, T: b.T, tokens: b.tokens, mask: b.mask, positions: b.positions, targets: b.targets, weights: b.weights };
}

/** The model's weights with its adapter merged in, as one flat array (what an export writes). */
export async function readMerged(model: Transformer): Promise<Float32Array> {
  const flat = new Float32Array(flatParamSize(model.config));
  for (const s of model.specs) flat.set(await model.readWeight(s.name), s.offset);
  return flat;
}
