import { flatParamSize, headDim, paramSpecs, type LlamaConfig } from './config';

/** Byte sizes of what a training run of this model holds on the GPU. */
export interface MemoryEstimate {
  parameters: number;
  weights: number;
  gradients: number;
  adamMoments: number;
  activations: number;
  total: number;
  /** The largest single buffer (must fit maxStorageBufferBindingSize). */
  largestBuffer: number;
}

function activationElements(c: LlamaConfig, N: number): { total: number; largest: number } {
  const H = c.hidden_size;
  const hd = headDim(c);
  const q = c.num_attention_heads * hd;
  const kv = c.num_key_value_heads * hd;
  const I = c.intermediate_size;
  const perLayer = N * (H + 1 + q + 2 * kv + q + c.num_attention_heads + H + H + 1 + 3 * I);
  const residual = (c.num_hidden_layers + 1) * N * H;
  const final = N * (H + 1 + c.vocab_size);
  const scratch = N * (2 * H + 2 * q + 2 * kv + 3 * I + c.num_attention_heads) + 4 * N;
  return {
    total: c.num_hidden_layers * perLayer + residual + final + scratch,
    largest: Math.max(N * c.vocab_size, N * I, N * q),
  };
}

/** What training this config at B×T needs; pure arithmetic, no GPU. */
export function memoryEstimate(c: LlamaConfig, B: number, T: number): MemoryEstimate {
  const P = flatParamSize(c);
  const acts = activationElements(c, B * T);
  const weights = P * 4;
  const est = {
    parameters: paramSpecs(c).reduce((n, p) => n + p.size, 0),
    weights,
    gradients: weights,
    adamMoments: 2 * weights,
    activations: acts.total * 4,
    total: 0,
    largestBuffer: Math.max(weights, acts.largest * 4),
  };
  est.total = est.weights + est.gradients + est.adamMoments + est.activations;
  return est;
}

const MiB = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** Refuses, with the numbers, a configuration the adapter cannot hold. */
export function checkFits(c: LlamaConfig, B: number, T: number, maxBinding: number): MemoryEstimate {
  const est = memoryEstimate(c, B, T);
  if (est.largestBuffer > maxBinding) {
    throw new Error(
      `model does not fit this GPU: its largest buffer needs ${MiB(est.largestBuffer)} but the adapter binds at most ` +
        `${MiB(maxBinding)} (weights ${MiB(est.weights)}, activations ${MiB(est.activations)} at batch ${B}×${T}); ` +
        'use a smaller preset, batch or sequence length',
    );
  }
  if (T > c.max_position_embeddings) {
    throw new Error(`sequence length ${T} exceeds max_position_embeddings ${c.max_position_embeddings}`);
  }
  return est;
}

