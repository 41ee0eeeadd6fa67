/**
 * What the Critic should tell apart, as data: real problems from corrupted ones, a problem's
 * own plan from a wrong plan or another problem's. The warm-up teaches these with graded
 * targets (a score per kind of corruption, on the Critic's 1-10 scale), and validation
 * measures the Critic on the same kinds of pairs built from held-out problems (criticAuc):
 * a Critic that scores everything alike filters nothing, and its AUC says so (0.5).
 */
import type { Problem } from '../data/problem';
import { shuffle } from '../util/random';
import { planVerdict } from './validators';

/** A worked solution as plain steps: calculator notes and the final-answer line removed. */
export function steps(solution: string): string[] {
  return solution
    .replace(/<<[^>]*>>/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('####'));
}

/** The plan for a problem: its expression (curriculum) or its solution's steps, numbered. */
export function planOf(p: Problem): string | null {
  if (p.kind === 'math' && p.expression) return `Compute ${p.expression}.`;
  if (p.kind !== 'math' || !p.solution) return null;
  const s = steps(p.solution);
  return s.length ? s.map((l, i) => `${i + 1}. ${l}`).join(' ') : null;
}

export type ProblemVariant = 'real' | 'altered' | 'shuffled' | 'truncated' | 'noise';
export type PlanVariant = 'matching' | 'altered' | 'other';

/**
 * Warm-up targets on the 1-10 scale. With alpha 0.7 (a score of 8 or more) only real problems
 * pass the quality filter; with beta 0.3 (4 or more) only a problem's own plan passes the gate.
 * A statement that contradicts itself is nearer a real one than noise, so it scores between.
 */
export const PROBLEM_TARGETS: Record<ProblemVariant, number> = { real: 9, altered: 5, shuffled: 3, truncated: 3, noise: 1 };
export const PLAN_TARGETS: Record<PlanVariant, number> = { matching: 9, altered: 3, other: 2 };
/** The Judge's rating of an answer (criticAnswer): a seed's own worked answer, and the same with its final answer changed. */
export const ANSWER_TARGETS = { right: 9, wrong: 2 } as const;

const NUMBER = /\d+/g;

/**
 * One number of the text changed (to another of the same length class), at one of its
 * occurrences: where the number occurs twice (a curriculum statement says it in words and in
 * the expression; a plan restates the problem's numbers) the text then contradicts itself.
 * Null when the text has no number.
 */
export function alterNumber(text: string, random: () => number, requireRepeat = false): string | null {
  const found = [...text.matchAll(NUMBER)];
  const counts = new Map<string, number>();
  for (const m of found) counts.set(m[0], (counts.get(m[0]) ?? 0) + 1);
  const candidates = found.filter((m) => !requireRepeat || counts.get(m[0])! > 1);
  if (!candidates.length) return null;
  const m = candidates[Math.floor(random() * candidates.length)]!;
  const n = Number(m[0]);
  const replacement = String(n + 1 + Math.floor(random() * Math.max(3, n)));
  return text.slice(0, m.index) + replacement + text.slice(m.index! + m[0].length);
}

/**
 * The text's final answer (inside its <answer> tag) with one number changed: a wrong answer in
 * the right form, its worked steps (if any) left as they were. Null without a number there.
 */
export function alterAnswer(text: string, random: () => number): string | null {
  const m = /<answer>([\s\S]*?)<\/answer>/.exec(text);
  const inner = m && alterNumber(m[1]!, random);
  if (!m || inner === null) return null;
  return `${text.slice(0, m.index)}<answer>${inner}</answer>${text.slice(m.index + m[0].length)}`;
}

/**
 * The problem and its plan with one number they share changed alike, everywhere it occurs in
 * either: another problem whose plan still matches. Taught beside the same plan with a number
 * changed in the plan alone, it leaves the Critic one way to tell them apart, comparing the
 * plan with the problem; on the seeds' own pairs alone it can learn which plan strings it has
 * seen scored high instead, which tells nothing on a new problem. Null when they share no number.
 */
export function consistentVariant(statement: string, plan: string, random: () => number): { statement: string; plan: string } | null {
  const inStatement = new Set([...statement.matchAll(NUMBER)].map((m) => m[0]));
  const shared = [...new Set([...plan.matchAll(NUMBER)].map((m) => m[0]))].filter((n) => inStatement.has(n));
  if (!shared.length) return null;
  const n = shared[Math.floor(random() * shared.length)]!;
  let m = n;
  while (m === n || inStatement.has(m)) m = String(Math.floor(random() * Math.max(10, 2 * Number(n) + 2)));
  const whole = new RegExp(`(?<!\\d)${n}(?!\\d)`, 'g');
  return { statement: statement.replace(whole, m), plan: plan.replace(whole, m) };
}

/** A corrupted statement and its kind: a number contradicting the rest, words shuffled, cut short, or noise. */
export function corruptProblem(statement: string, random: () => number): { text: string; variant: Exclude<ProblemVariant, 'real'> } {
  const words = statement.split(/\s+/).filter(Boolean);
  const r = random();
  if (r < 0.25) {
    const altered = alterNumber(statement, random, true);
    if (altered) return { text: altered, variant: 'altered' };
  }
  if (r < 0.55 && words.length > 2) {
    const shuffled = shuffle([...words], random).join(' ');
    if (shuffled !== words.join(' ')) return { text: shuffled, variant: 'shuffled' };
  }
  if (r < 0.8 && words.length > 1) return { text: words.slice(0, Math.max(1, Math.floor(words.length / 3))).join(' '), variant: 'truncated' };
  const noise = Array.from({ length: Math.max(3, Math.min(40, statement.length)) }, () => String.fromCharCode(33 + Math.floor(random() * 90))).join('');
  return { text: noise, variant: 'noise' };
}

/**
 * A wrong plan for `p`: its own with a number changed, or the plan of another problem. Never one
 * that still computes `p`'s answer (another problem's `4+3` for `3+4=?`, `0*5` altered to `0*7`):
 * taught low or counted wrong, such a plan would teach and measure the Critic against the truth.
 * Null when no such plan is found.
 */
export function wrongPlan(p: Problem, others: readonly Problem[], random: () => number): { plan: string; variant: Exclude<PlanVariant, 'matching'> } | null {
  const own = planOf(p);
  const wrong = (plan: string | null): plan is string => !!plan && plan !== own && planVerdict(p, plan) !== true;
  if (own && random() < 0.5) {
    for (let tries = 0; tries < 4; tries++) {
      const altered = alterNumber(own, random);
      if (wrong(altered)) return { plan: altered, variant: 'altered' };
    }
  }
  const pool = others.filter((q) => q.id !== p.id);
  for (let tries = 0; tries < 8 && pool.length; tries++) {
    const plan = planOf(pool[Math.floor(random() * pool.length)]!);
    if (wrong(plan)) return { plan, variant: 'other' };
  }
  return null;
}

/**
 * Held-out pairs for the Critic's discrimination: each problem real and corrupted, each plan
 * matching and wrong, each math problem's answer right and with a number changed (the Judge's
 * task in MAE; the answer as the Solver's plain target writes it).
 */
export interface CriticProbe {
  problems: { statement: string; real: boolean }[];
  plans: { problem: string; plan: string; matching: boolean }[];
  answers: { problem: string; answer: string; right: boolean }[];
}

export function criticProbe(problems: readonly Problem[], random: () => number): CriticProbe {
  const probe: CriticProbe = { problems: [], plans: [], answers: [] };
  for (const p of problems) {
    probe.problems.push({ statement: p.statement, real: true }, { statement: corruptProblem(p.statement, random).text, real: false });
    const own = planOf(p);
    const wrong = own ? wrongPlan(p, problems, random) : null;
    if (own && wrong) probe.plans.push({ problem: p.statement, plan: own, matching: true }, { problem: p.statement, plan: wrong.plan, matching: false });
  }
  // After the problems' and plans' draws, which stay those of probes made before answers were probed.
  for (const p of problems) {
    const right = p.kind === 'math' && p.answer !== undefined ? `<answer>${p.answer}</answer>` : null;
    const wrong = right && alterAnswer(right, random);
    if (right && wrong) probe.answers.push({ problem: p.statement, answer: right, right: true }, { problem: p.statement, answer: wrong, right: false });
  }
  return probe;
}

/**
 * The area under the ROC curve of scores for positives against negatives: the probability
 * that a random positive scores above a random negative, ties counting half (Mann-Whitney).
 * Null when either side is empty.
 */
export function auc(positives: readonly number[], negatives: readonly number[]): number | null {
  if (!positives.length || !negatives.length) return null;
  let wins = 0;
  for (const a of positives) for (const b of negatives) wins += a > b ? 1 : a === b ? 0.5 : 0;
  return wins / (positives.length * negatives.length);
}
