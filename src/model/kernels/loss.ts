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
    buffers: [t.logits.buffer, t.targets.buffer, t.weights.buffer, t.loss.buffer, t.logp.buffer],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
    label: 'cross_entropy',
  });
}
