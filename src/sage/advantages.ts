/**
 * Advantage estimators, one small named function each in one registry (as verl's
 * core_algos.py has them): each turns a step's rollout rewards into advantages, from the
 * rewards of the rollouts it groups them with.
 *   task-whiten  Task-Relative REINFORCE++ (SAGE's, AZR's, MAE's): whitened within each
 *                (role, task kind) group over the batch, A = (r − mean) / (std + 1e-8), the
 *                unbiased std (as verl's masked_whiten).
 *   grpo         per prompt (the n samples of one problem): (r − mean) / (std + 1e-8).
 *   rloo         per prompt: r minus the mean of the other samples' rewards.
 *   dr-grpo      per prompt: r − mean, not divided by the std (Dr. GRPO).
 * A group of one, or of identical rewards, gives zero advantage rather than NaN: with a
 * per-prompt estimator a role with one rollout per prompt (the Challenger, the Critic, the
 * Planner) learns nothing. Zero-spread groups can also be dropped from the update (DAPO's
 * dynamic sampling); either way their share is reported per role.
 */

import { mean, sampleStd } from '../util/stats';

export interface AdvantageInput {
  /** The task group: role and task kind ("solver/math"). */
  task: string;
  /** The prompt group: rollouts with the same key are samples of one prompt. */
  prompt: string;
  reward: number;
}

export interface GroupStats {
  group: string;
  count: number;
  mean: number;
  std: number;
}

export const WHITEN_EPS = 1e-8;

/** Advantages of the members of one group, in their order. */
type GroupAdvantage = (rewards: readonly number[]) => number[];


/** Identical rewards carry no signal; rounding must not turn them into ±1/eps. */
export function zeroSpread(rewards: readonly number[]): boolean {
  return rewards.length < 2 || sampleStd(rewards) <= 1e-12 * Math.max(1, Math.abs(mean(rewards)));
}

const whiten: GroupAdvantage = (rs) => {
  const m = mean(rs);
  const std = sampleStd(rs);
  return rs.map((r) => (r - m) / (std + WHITEN_EPS));
};

export const ADVANTAGE_ESTIMATORS = {
  'task-whiten': { by: 'task', group: whiten },
  grpo: { by: 'prompt', group: whiten },
  rloo: { by: 'prompt', group: (rs) => rs.map((r) => r - (rs.reduce((a, b) => a + b, 0) - r) / (rs.length - 1)) },
  'dr-grpo': { by: 'prompt', group: (rs) => rs.map((r) => r - mean(rs)) },
} as const satisfies Record<string, { by: 'task' | 'prompt'; group: GroupAdvantage }>;

export type AdvantageName = keyof typeof ADVANTAGE_ESTIMATORS;
export const ADVANTAGE_NAMES = Object.keys(ADVANTAGE_ESTIMATORS) as AdvantageName[];

export interface Advantages {
  advantages: Float64Array;
  /** Whether each rollout enters the update (false: its group had zero spread and they are dropped). */
  kept: boolean[];
  /** The estimator's groups, with their reward statistics. */
  groups: GroupStats[];
  /** Per task group, how many estimator groups it had and how many of them had zero reward spread. */
  spread: Record<string, { groups: number; zero: number }>;
}

export function computeAdvantages(rollouts: readonly AdvantageInput[], name: AdvantageName = 'task-whiten', o: { dropZeroSpread?: boolean } = {}): Advantages {
  const estimator = ADVANTAGE_ESTIMATORS[name];
  const byGroup = new Map<string, number[]>();
  rollouts.forEach((r, i) => {
    if (!Number.isFinite(r.reward)) throw new Error(`rollout ${i} (${r.task}) has reward ${r.reward}`);
    const key = estimator.by === 'task' ? r.task : `${r.task}\u0000${r.prompt}`;
    const list = byGroup.get(key);
    if (list) list.push(i);
    else byGroup.set(key, [i]);
  });
  const advantages = new Float64Array(rollouts.length);
  const kept = rollouts.map(() => true);
  const groups: GroupStats[] = [];
  const spread = new Map<string, { groups: number; zero: number }>();
  for (const [key, members] of byGroup) {
    const rewards = members.map((i) => rollouts[i]!.reward);
    const task = rollouts[members[0]!]!.task;
    groups.push({ group: estimator.by === 'task' ? key : `${task}:${rollouts[members[0]!]!.prompt}`, count: members.length, mean: mean(rewards), std: sampleStd(rewards) });
    const s = spread.get(task) ?? { groups: 0, zero: 0 };
    s.groups++;
    spread.set(task, s);
    if (zeroSpread(rewards)) {
      s.zero++;
      if (o.dropZeroSpread) for (const i of members) kept[i] = false;
      continue;
    }
    estimator.group(rewards).forEach((a, k) => (advantages[members[k]!] = a));
  }
  return { advantages, kept, groups, spread: Object.fromEntries(spread) };
}
