/**
 * One policy-gradient update (Task-Relative REINFORCE++ with the PPO clipped surrogate):
 * the step's rollouts in micro-batches, their gradients accumulated, one AdamW update of
 * the shared weights with the global-norm clip. The loss statistics that verl reports
 * (clip fraction, approx-KL, entropy) come from the per-token outputs of the fused kernel.
 */
import { matmulTuner } from '../gpu/ops/matmul';
import type { Tensor } from '../gpu/tensor';
import type { PolicyLossCoefficients } from '../model/kernels/loss';
import type { Batch, Transformer } from '../model/transformer';
import type { AdamW } from './adamw';

export interface PolicyMicroBatch {
  batch: Batch;
  /** 4 per token: weight, advantage, old log-prob, reference log-prob (see forwardPolicyLoss). */
  perToken: Float32Array;
}

export const DEFAULT_POLICY_LOSS: PolicyLossCoefficients = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 };

export interface PolicyStepResult {
  /** Σ of the weighted per-token losses: the token-mean surrogate when weights are 1/count. */
  loss: number;
  /** Share of response tokens whose ratio was clipped (the gradient did not flow). */
  clipFraction: number;
  /** Mean of (old log-prob − log-prob) over response tokens (verl's ppo_kl). */
  approxKl: number;
  /** Mean k3 estimate of KL to the reference (0 when klCoef is 0). */
  referenceKl: number;
  /** Mean entropy of the policy over response tokens, in nats. */
  entropy: number;
  /** Response tokens trained on. */
  tokens: number;
  gradNorm: number;
  /** False when a gradient was NaN/inf: the update was skipped, weights unchanged. */
  finite: boolean;
}

/** Statistics of the step from the kernel's per-token (loss, logp, entropy) and the inputs. */
export function policyStatistics(micro: readonly PolicyMicroBatch[], outputs: readonly Float32Array[], k: PolicyLossCoefficients) {
  let loss = 0;
  let tokens = 0;
  let clipped = 0;
  let kl = 0;
  let refKl = 0;
  let entropy = 0;
  micro.forEach(({ perToken }, m) => {
    const out = outputs[m]!;
    for (let t = 0; t < perToken.length / 4; t++) {
      loss += out[t * 3]!;
      const w = perToken[t * 4]!;
      if (w === 0) continue;
      const A = perToken[t * 4 + 1]!;
      const logp = out[t * 3 + 1]!;
      const old = perToken[t * 4 + 2]!;
      const ratio = Math.exp(logp - old);
      if (ratio * A > Math.min(Math.max(ratio, 1 - k.clipLow), 1 + k.clipHigh) * A) clipped++;
      kl += old - logp;
      const d = perToken[t * 4 + 3]! - logp;
      if (k.klCoef) refKl += Math.exp(d) - d - 1;
      entropy += out[t * 3 + 2]!;
      tokens++;
    }
  });
  const mean = (x: number) => (tokens ? x / tokens : 0);
  return { loss, tokens, clipFraction: mean(clipped), approxKl: mean(kl), referenceKl: mean(refKl), entropy: mean(entropy) };
}

export async function policyStep(
  model: Transformer,
  optimizer: AdamW,
  micro: readonly PolicyMicroBatch[],
  lr: number,
  k: PolicyLossCoefficients = DEFAULT_POLICY_LOSS,
  autotune = true,
): Promise<PolicyStepResult> {
  if (!micro.length) throw new Error('policy step: no rollouts to train on');
  // A NaN advantage would silently zero its token's gradient in the kernel's min: refuse it.
  micro.forEach(({ perToken }, m) => {
    const bad = perToken.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) throw new Error(`policy step: micro-batch ${m}, token ${bad >> 2} has a non-finite ${['weight', 'advantage', 'old log-prob', 'reference log-prob'][bad & 3]}`);
  });
  const rt = model.rt;
  model.zeroGrad();
  // The workspace's output buffer is reused by the next micro-batch: keep a copy of each.
  const kept: Tensor<'f32'>[] = micro.map(({ batch, perToken }) => {
    const out = model.forwardPolicyLoss(batch, perToken, k);
    model.backward();
    const copy = rt.empty([out.size], 'f32');
    rt.copy(out, copy);
    return copy;
  });
  const [stats, ...outputs] = await Promise.all([optimizer.update(model.params, model.grads, lr), ...kept.map((t) => rt.read(t))]);
  rt.release(...kept);
  if (autotune) await matmulTuner(rt).tunePending();
  return { ...policyStatistics(micro, outputs, k), gradNorm: stats.gradNorm, finite: stats.finite };
}
