/**
 * The level of a bank problem, as the run page's bank and a comparison's report show it: the
 * curriculum style its statement is in, else its own `level` field, else UNREADABLE; and the
 * order levels are listed in.
 */
import { readStatement } from '../data/curriculum';
import type { Problem } from '../data/problem';

/** The level of a problem no curriculum style reads and that carries no level of its own. */
export const UNREADABLE = 'unreadable';

/** A bank problem's level: the curriculum style its statement is in, else its `level` field, else UNREADABLE. */
export function problemLevel(p: Problem): string {
  const level = (p.kind === 'math' ? readStatement(p.statement)?.level : undefined) ?? p.level;
  return level === undefined ? UNREADABLE : String(level);
}

/** Levels in order, unreadable last. */
export function compareLevels(a: string, b: string): number {
  return a === UNREADABLE ? (b === UNREADABLE ? 0 : 1) : b === UNREADABLE ? -1 : a.localeCompare(b, undefined, { numeric: true });
}
