import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

/**
 * Fused cross-entropy: per-token weighted loss and log-probabilities; the logits are
 * replaced in place by d(Σ loss)/d(logits). targets: i32 (−1 ignores a token). With `rows`
 * (u32, one per logits row) logits row r is token rows[r]'s, the targets, weights and outputs
 * per token (an LM head run on the loss's rows alone): tokens no row names keep their outputs.
 */
export function crossEntropy(
  rt: Runtime,
  t: { logits: Tensor; targets: Tensor<'i32'>; weights: Tensor; loss: Tensor; logp: Tensor; rows?: Tensor<'u32'> },
): void {
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  if (t.rows && t.rows.size !== rows) throw new Error(`cross entropy: ${t.rows.size} token rows for ${rows} logits rows`);
  const tokens = t.rows ? t.targets.size : rows;
  for (const [name, x] of [['targets', t.targets], ['weights', t.weights], ['loss', t.loss], ['logp', t.logp]] as const) {
    if (x.size !== tokens) throw new Error(`cross entropy: ${name} holds ${x.size} values for ${tokens} ${t.rows ? 'tokens' : 'rows'}`);
  }
  if (t.loss.buffer === t.logp.buffer) throw new Error('cross entropy: loss and logp must be separate buffers');
  rt.dispatch({
    kernel: { shader: 'loss', entry: rt.serialRows ? 'cross_entropy_serial' : 'cross_entropy', defines: { ROWS: t.rows !== undefined } },
    params: new Params().u32(rows, vocab, t.logits.offset, t.targets.offset, t.weights.offset, t.loss.offset, t.logp.offset, t.rows?.offset ?? 0),
    buffers: [t.logits, t.targets, t.weights, t.loss, t.logp, ...(t.rows ? [t.rows] : [])],
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
 * d(Σ loss)/d(logits). targets: i32 (−1 ignores a token). With `rows` (u32, one per logits
 * row) logits row r is token rows[r]'s, as in crossEntropy.
 */
export function policyLoss(
  rt: Runtime,
  t: { logits: Tensor; targets: Tensor<'i32'>; tokIn: Tensor; tokOut: Tensor; rows?: Tensor<'u32'> },
  k: PolicyLossCoefficients,
): void {
  const vocab = t.logits.shape[t.logits.shape.length - 1]!;
  const rows = t.logits.size / vocab;
  if (t.rows && t.rows.size !== rows) throw new Error(`policy loss: ${t.rows.size} token rows for ${rows} logits rows`);
  const tokens = t.rows ? t.targets.size : rows;
  const per = t.rows ? 'token' : 'row';
  if (!t.rows && t.targets.size !== rows) throw new Error(`policy loss: targets holds ${t.targets.size} values for ${rows} rows`);
  if (t.tokIn.size !== tokens * 4) throw new Error(`policy loss: tokIn holds ${t.tokIn.size} values, expected 4 per ${per} (${tokens * 4})`);
  if (t.tokOut.size !== tokens * 3) throw new Error(`policy loss: tokOut holds ${t.tokOut.size} values, expected 3 per ${per} (${tokens * 3})`);
  const temperature = k.temperature ?? 1;
  if (!(temperature > 0 && Number.isFinite(temperature))) throw new Error(`policy loss: temperature ${temperature} is not a positive number (greedy rollouts are not trained)`);
  if (!(k.clipLow >= 0 && k.clipLow < 1 && k.clipHigh >= 0)) throw new Error(`policy loss: clip range [1 − ${k.clipLow}, 1 + ${k.clipHigh}] is not around 1`);
  rt.dispatch({
    kernel: { shader: 'policy_loss', entry: 'policy_loss', defines: { SERIAL: rt.serialRows, ROWS: t.rows !== undefined } },
    params: new Params()
      .u32(rows, vocab, t.logits.offset, t.targets.offset, t.tokIn.offset, t.tokOut.offset)
      .f32(1 / temperature)
      .u32(t.rows?.offset ?? 0)
      .f32(k.clipLow, k.clipHigh, k.klCoef, k.entCoef),
    // The token rows at binding 6, as in cross_entropy (shaders/token_rows.wgsl).
    buffers: [t.logits, t.targets, t.tokIn, t.tokOut, ...(t.rows ? [null, t.rows] : [])],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
    label: 'policy_loss',
  });
}
