import { matmulTuner } from '../gpu/ops/autotune';
import { sum } from '../gpu/ops/reduce';
import { view } from '../gpu/tensor';
import type { Batch, Transformer } from '../model/transformer';
import type { AdamW } from './adamw';

export interface StepResult {
  /** Σ weighted per-token loss over the micro-batches. */
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** False when a gradient was NaN/inf: the update was skipped, weights unchanged. */
  finite: boolean;
}

/**
 * One optimizer step: gradients of the micro-batches accumulated (their per-token weights
 * decide how the loss is normalised), AdamW with the clip on the GPU, and one readback for
 * the losses (summed on the GPU) and the gradient statistics together. With `autotune`,
 * matmul shapes this step used for the first time are measured afterwards (once per
 * adapter; nothing to do on later steps).
 */
export async function trainStep(
  model: Transformer,
  optimizer: AdamW,
  micro: Batch[],
  lr: number,
  autotune = true,
): Promise<StepResult> {
  const rt = model.rt;
  model.zeroGrad();
  const lossSums = rt.empty([micro.length]);
  micro.forEach((b, i) => {
    const out = model.forwardLoss(b);
    model.backward();
    sum(rt, out.loss, view(lossSums, [1], i));
  });
  const [stats, sums] = await Promise.all([optimizer.update(model.paramsForUpdate(), model.grads, lr), rt.read(lossSums)]);
  rt.release(lossSums);
  if (autotune) await matmulTuner(rt).tunePending();
  return { loss: sums.reduce((a, x) => a + x, 0), gradNorm: stats.gradNorm, finite: stats.finite };
}
