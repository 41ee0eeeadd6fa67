/**
 * What one training step records, on any hardware: the dispatches and workgroups of each op of
 * a forward pass with its loss and the backward pass (the optimizer's update aside), as a GPU's
 * untuned runtime would choose its kernels. Counted as recorded, never run: a step of a
 * SmolLM2-135M-shaped model is counted in seconds where SwiftShader would run it for many minutes.
 */
import type { LlamaConfig } from '../src/model/config';
import type { Transformer } from '../src/model/transformer';
import { DEFAULT_POLICY_LOSS, packRollouts, type PolicyMicroBatch } from '../src/train/policy';
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
  /** The step's matmul work, 2·M·N·K summed. */
  matmulGflop: number;
}

/** Counts what `record` records as a GPU's untuned runtime would choose its kernels, never running it. */
function countStep(model: Transformer, B: number, T: number, record: () => void): TrainCounts {
  const rt = model.rt;
  const restorePlan = planAsGpu(rt, 'train counts');
  const counting = countOps(rt, false);
  const flops = rt.counters.matmulFlops;
  try {
    record();
  } finally {
    counting.stop();
    restorePlan();
  }
  return { B, T, ops: counting.ops, ...opTotals(counting.ops), matmulGflop: (rt.counters.matmulFlops - flops) / 1e9 };
}

/**
 * The work of one step of B rows of T tokens, as a GPU's untuned runtime records it: matmuls of
 * the untuned table for an adapter with subgroups, and the cooperative kernels (the runtime
 * must have serialRows false).
 */
export function trainStepCounts(model: Transformer, B: number, T: number): TrainCounts {
  const V = model.config.vocab_size;
  const N = B * T;
  return countStep(model, B, T, () => {
    model.forwardLoss({
      B,
      T,
      tokens: Array.from({ length: N }, (_, i) => (31 * i + 7) % V),
      targets: Array.from({ length: N }, (_, i) => (i % T === T - 1 ? -1 : (31 * (i + 1) + 7) % V)),
      weights: new Float32Array(N).fill(1 / N),
    });
    model.backward();
  });
}

/** An update's rollouts: problems whose prompt of `prompt` tokens `samples` completions of `completion` tokens share, packed into micro-batches of `tokens`. */
export interface PolicyShape {
  prompt: number;
  samples: number;
  completion: number;
  tokens: number;
  granule: number;
}

export interface PolicyCounts extends TrainCounts {
  /** The micro-batch's completion tokens: the rows its LM head computes. */
  lossRows: number;
  /** The same micro-batch with the LM head on every row (as before the head kept the loss's rows alone). */
  everyRow: TrainCounts;
}

/**
 * The first micro-batch packRollouts makes of an update's rollouts of this shape (a family per
 * problem: its prompt once, then each completion; random token ids, advantages ±1).
 */
export function policyMicroBatch(config: LlamaConfig, s: PolicyShape): PolicyMicroBatch {
  const V = config.vocab_size;
  const id = (i: number) => (31 * i + 7) % V;
  const problems = Math.max(1, Math.ceil(s.tokens / (s.prompt + s.samples * (s.completion + 1))));
  const rollouts = Array.from({ length: problems * s.samples }, (_, i) => ({
    promptIds: Array.from({ length: s.prompt }, (_, t) => id(1000 * Math.floor(i / s.samples) + t)),
    completionIds: Array.from({ length: s.completion }, (_, t) => id(7 * i + t)),
    oldLogprobs: new Array<number>(s.completion).fill(-1),
    advantage: i % 2 ? 1 : -1,
  }));
  return packRollouts(rollouts, { tokens: s.tokens, maxLength: config.max_position_embeddings, lengthGranule: s.granule, padId: 0 })[0]!;
}

/** The micro-batch with a target on every row (0 where it had none, its weight still 0): its LM head runs on all, the loss unchanged. */
export function everyRowTargets(micro: PolicyMicroBatch): PolicyMicroBatch {
  return { ...micro, batch: { ...micro.batch, targets: Array.from(micro.batch.targets!, (t) => Math.max(t, 0)) } };
}

/**
 * The work of one policy-gradient micro-batch (forward, the fused surrogate and backward) of
 * policyMicroBatch, counted as trainStepCounts counts; beside it the same micro-batch with a
 * target on every row (everyRowTargets), whose LM head runs on all.
 */
export function policyStepCounts(model: Transformer, s: PolicyShape): PolicyCounts {
  const micro = policyMicroBatch(model.config, s);
  const { B, T } = micro.batch;
  const step = (m: PolicyMicroBatch) =>
    countStep(model, B, T, () => {
      model.forwardPolicyLoss(m.batch, m.perToken, DEFAULT_POLICY_LOSS);
      model.backward();
    });
  return { ...step(micro), lossRows: Array.from(micro.batch.targets!).filter((t) => t >= 0).length, everyRow: step(everyRowTargets(micro)) };
}
