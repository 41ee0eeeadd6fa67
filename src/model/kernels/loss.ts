import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

/**
 * Fused cross-entropy: per-token weighted loss and log-probabilities; the logits are
 * replaced in place by d(Σ loss)/d(logits). targets: i32 (−1 ignores a token).
 */
export function crossEntropy(
  rt: Runtime,
  t: { logits: Tensor; targets: Tensor<'i32'>; weights: Tensor; loss: Tensor; logp: Tensor },
): void {
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  for (const [name, x] of [['targets', t.targets], ['weights', t.weights], ['loss', t.loss], ['logp', t.logp]] as const) {
    if (x.size !== rows) throw new Error(`cross entropy: ${name} holds ${x.size} values for ${rows} rows`);
  }
  if (t.loss.buffer === t.logp.buffer) throw new Error('cross entropy: loss and logp must be separate buffers');
  rt.dispatch({
    kernel: { shader: 'loss', entry: rt.serialRows ? 'cross_entropy_serial' : 'cross_entropy' },
    params: new Params().u32(rows, vocab, t.logits.offset, t.targets.offset, t.weights.offset, t.loss.offset, t.logp.offset, 0),
    buffers: [t.logits, t.targets, t.weights, t.loss, t.logp],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
    label: 'cross_entropy',
  });
}

/** Coefficients of the PPO clipped surrogate (see shaders/policy_loss.wgsl). */
export interface PolicyLossCoefficients {
  /** Ratio clip range [1 − clipLow, 1 + clipHigh]. */
  clipLow: number;
  clipHigh: number;
  /** Weight of the k3 KL estimate to the reference log-probs (0: no reference needed). */
  klCoef: number;
  /** Weight of the entropy bonus. */
  entCoef: number;
  /**
   * The sampling temperature: log-probs, ratio, entropy and gradient under softmax(z / T),
   * the distribution the rollouts were drawn from (their old log-probs are under it too). 1: untempered.
   */
  temperature?: number;
}

/**
 * Fused policy-gradient loss: per row of `tokIn` (w, advantage, old log-prob, reference
 * log-prob) writes `tokOut` (loss, log-prob, entropy) and replaces the logits in place by
 * d(Σ loss)/d(logits). targets: i32 (−1 ignores a token).
 */
export function policyLoss(
  rt: Runtime,
  t: { logits: Tensor; targets: Tensor<'i32'>; tokIn: Tensor; tokOut: Tensor },
  k: PolicyLossCoefficients,
): void {
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  if (t.targets.size !== rows) throw new Error(`policy loss: targets holds ${t.targets.size} values for ${rows} rows`);
  if (t.tokIn.size !== rows * 4) throw new Error(`policy loss: tokIn holds ${t.tokIn.size} values, expected 4 per row (${rows * 4})`);
  if (t.tokOut.size !== rows * 3) throw new Error(`policy loss: tokOut holds ${t.tokOut.size} values, expected 3 per row (${rows * 3})`);
  const temperature = k.temperature ?? 1;
  if (!(temperature > 0 && Number.isFinite(temperature))) throw new Error(`policy loss: temperature ${temperature} is not a positive number (greedy rollouts are not trained)`);
  if (!(k.clipLow >= 0 && k.clipLow < 1 && k.clipHigh >= 0)) throw new Error(`policy loss: clip range [1 − ${k.clipLow}, 1 + ${k.clipHigh}] is not around 1`);
  rt.dispatch({
    kernel: { shader: 'policy_loss', entry: 'policy_loss', defines: { SERIAL: rt.serialRows } },
    params: new Params()
      .u32(rows, vocab, t.logits.offset, t.targets.offset, t.tokIn.offset, t.tokOut.offset)
      .f32(1 / temperature)
      .u32(0)
      .f32(k.clipLow, k.clipHigh, k.klCoef, k.entCoef),
    buffers: [t.logits, t.targets, t.tokIn, t.tokOut],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
    label: 'policy_loss',
  });
}
