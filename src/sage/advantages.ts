/**
 * Task-Relative REINFORCE++ advantages: each rollout's scalar reward, whitened within its
 * (role, task kind) group over the step's batch: A = (r − mean) / (std + 1e-8), with the
 * unbiased std (as verl's masked_whiten). A group of one, or of identical rewards, gives
 * zero advantage rather than NaN.
 */

export interface GroupStats {
  group: string;
  count: number;
  mean: number;
  std: number;
}

export const WHITEN_EPS = 1e-8;

export function taskRelativeAdvantages(rollouts: readonly { group: string; reward: number }[]): { advantages: Float64Array; groups: GroupStats[] } {
  const byGroup = new Map<string, number[]>();
  rollouts.forEach((r, i) => {
    if (!Number.isFinite(r.reward)) throw new Error(`rollout ${i} (${r.group}) has reward ${r.reward}`);
    const list = byGroup.get(r.group);
    if (list) list.push(i);
    else byGroup.set(r.group, [i]);
  });
  const advantages = new Float64Array(rollouts.length);
  const groups: GroupStats[] = [];
  for (const [group, members] of byGroup) {
    const n = members.length;
    const mean = members.reduce((s, i) => s + rollouts[i]!.reward, 0) / n;
    const variance = n > 1 ? members.reduce((s, i) => s + (rollouts[i]!.reward - mean) ** 2, 0) / (n - 1) : 0;
    const std = Math.sqrt(variance);
    groups.push({ group, count: n, mean, std });
    // Identical rewards carry no signal; rounding must not turn them into ±1/eps.
    if (n < 2 || std <= 1e-12 * Math.max(1, Math.abs(mean))) continue;
    for (const i of members) advantages[i] = (rollouts[i]!.reward - mean) / (std + WHITEN_EPS);
  }
  return { advantages, groups };
}
