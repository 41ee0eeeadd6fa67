/**
 * One policy-gradient update (Task-Relative REINFORCE++ with the PPO clipped surrogate):
 * the step's rollouts in micro-batches, their gradients accumulated, one AdamW update of
 * the shared weights with the global-norm clip. The loss statistics that verl reports
 * (clip fraction, approx-KL, entropy) come from the per-token outputs of the fused kernel.
 */
import { matmulTuner } from '../gpu/ops/autotune';
import type { Tensor } from '../gpu/tensor';
import type { PolicyLossCoefficients } from '../model/kernels/loss';
import type { Batch, Transformer } from '../model/transformer';
import type { AdamW } from './adamw';
import { maxOf } from '../util/stats';

export interface PolicyMicroBatch {
  batch: Batch;
  /** 4 per token: weight, advantage, old log-prob, reference log-prob (see forwardPolicyLoss). */
  perToken: Float32Array;
  /** Per token, the group (Rollout.group) of the rollout it trains, '' where none: for per-group statistics. */
  groups?: readonly string[];
}

/** Statistics of one group's response tokens: their mean loss (unweighted), entropy, (old − new) log-prob and clipped share. */
export interface GroupStepStats {
  loss: number;
  entropy: number;
  approxKl: number;
  clipFraction: number;
  tokens: number;
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
  /** Matmul shape classes first met in this step and tuned after its update (0 once a run's shapes are tuned). */
  tuned: number;
  /** Per Rollout.group (the loop's roles), where rollouts carry one. */
  groups?: Record<string, GroupStepStats>;
}

/** Statistics of the step from the kernel's per-token (loss, logp, entropy) and the inputs, overall and per group. */
export function policyStatistics(micro: readonly PolicyMicroBatch[], outputs: readonly Float32Array[], k: PolicyLossCoefficients) {
  let loss = 0;
  let tokens = 0;
  let clipped = 0;
  let kl = 0;
  let refKl = 0;
  let entropy = 0;
  const byGroup = new Map<string, { loss: number; entropy: number; kl: number; clipped: number; tokens: number }>();
  micro.forEach(({ perToken, groups }, m) => {
    const out = outputs[m]!;
    for (let t = 0; t < perToken.length / 4; t++) {
      loss += out[t * 3]!;
      const w = perToken[t * 4]!;
      if (w === 0) continue;
      const A = perToken[t * 4 + 1]!;
      const logp = out[t * 3 + 1]!;
      const old = perToken[t * 4 + 2]!;
      const ratio = Math.exp(logp - old);
      const isClipped = ratio * A > Math.min(Math.max(ratio, 1 - k.clipLow), 1 + k.clipHigh) * A;
      if (isClipped) clipped++;
      kl += old - logp;
      const d = perToken[t * 4 + 3]! - logp;
      if (k.klCoef) refKl += Math.exp(d) - d - 1;
      entropy += out[t * 3 + 2]!;
      tokens++;
      const group = groups?.[t];
      if (group) {
        const g = byGroup.get(group) ?? { loss: 0, entropy: 0, kl: 0, clipped: 0, tokens: 0 };
        // The kernel's loss is weighted by the batch's 1/count: unweighted, a group's mean is its own.
        g.loss += out[t * 3]! / w;
        g.entropy += out[t * 3 + 2]!;
        g.kl += old - logp;
        g.clipped += isClipped ? 1 : 0;
        g.tokens++;
        byGroup.set(group, g);
      }
    }
  });
  const mean = (x: number) => (tokens ? x / tokens : 0);
  const groups: Record<string, GroupStepStats> = {};
  for (const [name, g] of byGroup) groups[name] = { loss: g.loss / g.tokens, entropy: g.entropy / g.tokens, approxKl: g.kl / g.tokens, clipFraction: g.clipped / g.tokens, tokens: g.tokens };
  return {
    loss, tokens, clipFraction: mean(clipped), approxKl: mean(kl), referenceKl: mean(refKl), entropy: mean(entropy),
    ...(byGroup.size ? { groups } : {}),
  };
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
  const [stats, ...outputs] = await Promise.all([optimizer.update(model.paramsForUpdate(), model.grads, lr), ...kept.map((t) => rt.read(t))]);
  rt.release(...kept);
  const tuned = autotune ? await matmulTuner(rt).tunePending() : 0;
  return { ...policyStatistics(micro, outputs, k), gradNorm: stats.gradNorm, finite: stats.finite, tuned };
}

/** One sampled completion to learn from: its tokens, the log-probs it was sampled with, its advantage. */
export interface Rollout {
  promptIds: readonly number[];
  /** Sampled tokens, the final EOS included when the row ended on it. */
  completionIds: readonly number[];
  /** log p of each completion token at sampling time, under softmax(z / T) at the temperature trained with (PolicySettings.loss.temperature). */
  oldLogprobs: readonly number[];
  /** Reference-model log-probs of the completion tokens, when a KL term is used. */
  refLogprobs?: readonly number[];
  advantage: number;
  /** What the step's statistics are broken down by (the loop's role), when given. */
  group?: string;
}

export interface PackOptions {
  /** Tokens per micro-batch (rows × row length): bounds the activations of one forward. */
  tokens: number;
  /** Longest sequence the model takes (its context). */
  maxLength: number;
  /** Row lengths are multiples of this, so that steps reuse a few workspace and kernel shapes. */
  lengthGranule: number;
  padId: number;
}

/** Where a row's columns fit the attention mask's 16-bit halves (see shaders/attention.wgsl). */
const MAX_ROW = 0xffff;

/**
 * What a row holds: one rollout's whole sequence, or a family (a prompt several rollouts
 * share, all but its last token once, then each rollout from that token on).
 */
type Unit = { rollouts: number[]; shared: boolean; length: number };

/**
 * The rollouts packed into micro-batches. Rollouts with the same prompt (the n samples of one
 * problem) form a family: the prompt's tokens but the last once, then each rollout's sequence
 * from the prompt's last token on, attending that shared prefix as its own (the same
 * gradient, for the prompt's share of the tokens once instead of n times). Families and
 * single sequences are placed whole in the first row with room (longest first), several to a
 * row with no padding between them, a row's remainder pad tokens that attend only each
 * other. A row is as long as the token budget, rounded to the granule and at most the context, but never shorter than the
 * longest sequence (a family longer than a row is split, each part with its prefix); a
 * micro-batch is as many rows as the budget holds (at least one). Positions restart at each
 * sequence and the mask says which columns each token attends (see shaders/attention.wgsl).
 * The loss is on completion tokens only, each weighted 1 / (completion tokens of the whole
 * batch): the token mean over the batch, however it is split.
 */
export function packRollouts(rollouts: readonly Rollout[], o: PackOptions): PolicyMicroBatch[] {
  const total = rollouts.reduce((n, r) => n + r.completionIds.length, 0);
  if (!total) return [];
  const length = (r: Rollout) => r.promptIds.length + r.completionIds.length;
  rollouts.forEach((r, i) => {
    if (r.oldLogprobs.length !== r.completionIds.length) throw new Error(`rollout ${i}: ${r.oldLogprobs.length} log-probs for ${r.completionIds.length} tokens`);
    if (!r.promptIds.length) throw new Error(`rollout ${i}: empty prompt (it needs at least a BOS token)`);
    if (length(r) > o.maxLength) throw new Error(`rollout ${i}: ${length(r)} tokens exceed the model's context of ${o.maxLength}`);
  });
  const granule = (n: number) => Math.ceil(n / o.lengthGranule) * o.lengthGranule;
  const longest = maxOf(rollouts, length);
  const T = Math.min(o.maxLength, Math.max(granule(longest), Math.floor(o.tokens / o.lengthGranule) * o.lengthGranule));
  if (T > MAX_ROW) throw new Error(`policy rows of ${T} tokens: at most ${MAX_ROW} (use a smaller token budget)`);
  const rowsPer = Math.max(1, Math.floor(o.tokens / T));

  // Families by prompt, in order of first appearance; a prompt of one token has nothing to share.
  const byPrompt = new Map<string, number[]>();
  rollouts.forEach((r, i) => {
    const key = r.promptIds.length > 1 ? r.promptIds.join(',') : `single ${i}`;
    byPrompt.set(key, [...(byPrompt.get(key) ?? []), i]);
  });
  const units: Unit[] = [];
  for (const members of byPrompt.values()) {
    if (members.length === 1) {
      units.push({ rollouts: members, shared: false, length: length(rollouts[members[0]!]!) });
      continue;
    }
    const prefix = rollouts[members[0]!]!.promptIds.length - 1;
    let unit: Unit = { rollouts: [], shared: true, length: prefix };
    for (const i of members) {
      const n = 1 + rollouts[i]!.completionIds.length;
      if (unit.rollouts.length && unit.length + n > T) {
        units.push(unit);
        unit = { rollouts: [], shared: true, length: prefix };
      }
      unit.rollouts.push(i);
      unit.length += n;
    }
    units.push(unit);
  }

  // First fit, longest first: rows[k] lists the units placed in row k, `used` its tokens.
  const order = units.map((_, u) => u).sort((a, b) => units[b]!.length - units[a]!.length || a - b);
  const rows: Unit[][] = [];
  const used: number[] = [];
  for (const u of order) {
    const n = units[u]!.length;
    let k = used.findIndex((x) => x + n <= T);
    if (k < 0) {
      k = rows.length;
      rows.push([]);
      used.push(0);
    }
    rows[k]!.push(units[u]!);
    used[k]! += n;
  }
  const w = 1 / total;
  const out: PolicyMicroBatch[] = [];
  for (let first = 0; first < rows.length; first += rowsPer) {
    const group = rows.slice(first, first + rowsPer);
    const B = group.length;
    const tokens = new Array<number>(B * T).fill(o.padId);
    const mask = new Array<number>(B * T).fill(0);
    const positions = new Array<number>(B * T).fill(0);
    const targets = new Array<number>(B * T).fill(-1);
    const perToken = new Float32Array(B * T * 4);
    const groups = new Array<string>(B * T).fill('');
    const grouped = rollouts.some((r) => r.group);
    group.forEach((row, b) => {
      let col = 0;
      /** Writes `seq` from column `col` at positions from `pos`; token k predicts `predicts[k]` of rollout r. */
      const place = (seq: readonly number[], pos: number, maskValue: number, r?: Rollout, predicts = 0) => {
        for (let t = 0; t < seq.length; t++) {
          const at = b * T + col + t;
          tokens[at] = seq[t]!;
          mask[at] = maskValue;
          positions[at] = pos + t;
        }
        // Column predicts + j holds the token before completion token j.
        for (let j = 0; r && j < r.completionIds.length; j++) {
          const at = b * T + col + predicts + j;
          targets[at] = r.completionIds[j]!;
          perToken.set([w, r.advantage, r.oldLogprobs[j]!, r.refLogprobs?.[j] ?? 0], at * 4);
          groups[at] = r.group ?? '';
        }
        col += seq.length;
      };
      for (const unit of row) {
        if (!unit.shared) {
          const r = rollouts[unit.rollouts[0]!]!;
          place([...r.promptIds, ...r.completionIds], 0, col + 1, r, r.promptIds.length - 1);
          continue;
        }
        const prompt = rollouts[unit.rollouts[0]!]!.promptIds;
        const p = prompt.length;
        const prefixCol = col;
        place(prompt.slice(0, p - 1), 0, col + 1);
        for (const i of unit.rollouts) {
          const r = rollouts[i]!;
          place([prompt[p - 1]!, ...r.completionIds], p - 1, ((col + 1) | ((prefixCol + 1) << 16)) >>> 0, r, 0);
        }
      }
      // The row's remainder is a sequence of its own, without targets: a packed row holds no padding query (see shaders/attention.wgsl).
      if (col < T) place(new Array<number>(T - col).fill(o.padId), 0, col + 1);
    });
    out.push({ batch: { B, T, tokens, mask, positions, targets }, perToken, ...(grouped ? { groups } : {}) });
  }
  return out;
}
