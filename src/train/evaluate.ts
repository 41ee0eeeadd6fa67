/**
 * Greedy exact-match accuracy of a model on math problems, per difficulty level: the
 * warm-up curve of the curriculum.
 */
import type { MathProblem } from '../data/problem';
import type { Generator } from '../model/generate';

export interface LevelAccuracy {
  level: number;
  correct: number;
  total: number;
}

/**
 * Exact greedy accuracy per level (problems without a level count as level 0): each statement
 * framed as in training (BOS, then its tokens), answered up to EOS or `maxNewTokens` by a
 * Generator or the ModelSession that holds one.
 */
export async function accuracyByLevel(generator: Pick<Generator, 'generate'>, problems: MathProblem[], maxNewTokens: number): Promise<LevelAccuracy[]> {
  const { rows } = await generator.generate(
    problems.map((p) => p.statement),
    { temperature: 0, maxNewTokens },
  );
  const answers = rows.map((r) => r.text);
  const byLevel = new Map<number, LevelAccuracy>();
  problems.forEach((p, i) => {
    const level = p.level ?? 0;
    const acc = byLevel.get(level) ?? { level, correct: 0, total: 0 };
    acc.total++;
    if (p.answer !== undefined && answers[i]!.trim() === p.answer.trim()) acc.correct++;
    byLevel.set(level, acc);
  });
  return [...byLevel.values()].sort((a, b) => a.level - b.level);
}

/** The first `perLevel` problems of each level, in file order: the same subset at every evaluation. */
export function firstPerLevel(problems: MathProblem[], perLevel: number): MathProblem[] {
  const taken = new Map<number, number>();
  return problems.filter((p) => {
    const n = taken.get(p.level ?? 0) ?? 0;
    taken.set(p.level ?? 0, n + 1);
    return n < perLevel;
  });
}
