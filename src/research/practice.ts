/**
 * What the Solver practised in a run: the problems the bank drew each step (each draw records
 * the Solver's pass rate over its samples), by where they came from (the seeds or the
 * Challenger) and the level of their statement. A draw whose samples all fail, or all pass,
 * holds no contrast within the problem; the shares of those say what practice at a level can
 * teach, beside how much of it a method gave there.
 */
import type { Problem } from '../data/problem';
import type { BankEvent } from '../sage/bank';
import { compareLevels, problemLevel } from '../sage/levels';

export type PracticeOrigin = 'seed' | 'generated';

/** A run's draws of one origin and level: the pass rate of each. */
export interface PracticeCell {
  origin: PracticeOrigin;
  level: string;
  rates: number[];
}

/** Seeds before generated problems, then by level. */
export function comparePractice(a: Pick<PracticeCell, 'origin' | 'level'>, b: Pick<PracticeCell, 'origin' | 'level'>): number {
  return a.origin !== b.origin ? (a.origin === 'seed' ? -1 : 1) : compareLevels(a.level, b.level);
}

/**
 * A run's draws in its first `steps` steps by origin and level (sorted by comparePractice),
 * from its bank events and its seed problems. Throws where a drawn problem is neither a seed
 * nor admitted in the events: the records do not belong together.
 */
export function runPractice(events: readonly BankEvent[], seeds: readonly Problem[], steps: number): PracticeCell[] {
  const known = new Map<string, { origin: PracticeOrigin; level: string }>(seeds.map((p) => [p.id, { origin: 'seed', level: problemLevel(p) }]));
  const cells = new Map<string, PracticeCell>();
  for (const e of events) {
    if (e.type === 'admit') known.set(e.entry.problem.id, { origin: 'generated', level: problemLevel(e.entry.problem) });
    if (e.type !== 'pass-rate' || e.step >= steps) continue;
    const at = known.get(e.id);
    if (!at) throw new Error(`the bank drew problem "${e.id}" at step ${e.step}, which is neither among the run's seeds nor admitted before: its seeds and bank events do not belong together`);
    const key = `${at.origin} ${at.level}`;
    const cell = cells.get(key) ?? { ...at, rates: [] };
    cell.rates.push(e.rate);
    cells.set(key, cell);
  }
  return [...cells.values()].sort(comparePractice);
}
