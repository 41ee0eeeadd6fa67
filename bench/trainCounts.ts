/**
 * What one training step records, on any hardware: the dispatches and workgroups of each op of
 * a forward pass with its loss and the backward pass (the optimizer's update aside), as a GPU's
 * untuned runtime would choose its kernels. Counted as recorded, never run: a step of a
 * SmolLM2-135M-shaped model is counted in seconds where SwiftShader would run it for many minutes.
 */
import type { LlamaConfig } from '../src/model/config';
import type { Transformer } from '../src/model/transformer';
import { countOps, opTotals, planAsGpu, type OpCounts } from './decodeCounts';

/** SmolLM2-135M's shape (its config.json): 30 layers, 9 query heads over 3 kv heads of 64, tied embeddings. */
export const SMOLLM2_135M: LlamaConfig = {
  vocab_size: 49152,
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  max_position_embeddings: 8192,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  tie_word_embeddings: true,
  attention_bias: false,
};

export interface TrainCounts {
  B: number;
  T: number;
  /** Per training step (forward, loss and backward of B·T tokens), by dispatch label. */
  ops: Record<string, OpCounts>;
  dispatches: number;
  workgroups: number;
}

/**
 * The work of one step of B rows of T tokens, as a GPU's untuned runtime records it: matmuls of
 * the untuned table for an adapter with subgroups, and the cooperative kernels (the runtime
 * must have serialRows false).
 */
export function trainStepCounts(model: Transformer, B: number, T: number): TrainCounts {
  const rt = model.rt;
  const restorePlan = planAsGpu(rt, 'train counts');
  const counting = countOps(rt, false);
  const V = model.config.vocab_size;
  const N = B * T;
  try {
    model.forwardLoss({
      B,
      T,
      tokens: Array.from({ length: N }, (_, i) => (31 * i + 7) % V),
      targets: Array.from({ length: N }, (_, i) => (i % T === T - 1 ? -1 : (31 * (i + 1) + 7) % V)),
      weights: new Float32Array(N).fill(1 / N),
    });
    model.backward();
  } finally {
    counting.stop();
    restorePlan();
  }
  return { B, T, ops: counting.ops, ...opTotals(counting.ops) };
}
