/**
 * What `npm run compare` records before its runs start and checks on every later call: a pilot's
 * record (OUT/pilot.json: its named levels and seeds, its verdict once its runs end) and a
 * comparison's plan (OUT/plan.json: its primary figure, named levels and pilot). A later call
 * may not rename what was named before the runs; a comparison may not reuse its pilot's seeds
 * or start from another checkpoint than the pilot judged.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ComparisonPlan, PilotRecord } from '../research/namedLevels';
import { UsageError } from './options';

export const PLAN_FILES = {
  pilot: 'pilot.json',
  plan: 'plan.json',
  /** The primary figure as computed at the last report. */
  primary: 'primary.json',
} as const;

export function readJson<T>(file: string): T | null {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    throw new Error(`${file}: not valid JSON`);
  }
}

/** Writes through a temporary name: a record is never left half written. */
export function writeJson(file: string, value: unknown): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(value, null, 2) + '\n');
  renameSync(`${file}.tmp`, file);
}

const sameLevels = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const levelList = (ls: readonly string[]) => (ls.length ? ls.join(',') : 'none (every held-out level)');

/** The pilot `--pilot-record DIR` names, checked against the comparison that states it. */
export function readPilot(dir: string, comparison: { model: string; seeds: readonly number[]; levels: readonly string[] | null }): PilotRecord {
  const record = readJson<PilotRecord>(join(dir, PLAN_FILES.pilot));
  if (!record || record.kind !== 'pilot') throw new UsageError(`--pilot-record ${dir}: no pilot record there (${PLAN_FILES.pilot}, written by npm run compare -- --pilot)`);
  if (!record.result) throw new UsageError(`--pilot-record ${dir}: the pilot has no verdict yet (its runs are not finished)`);
  if (resolve(record.model) !== resolve(comparison.model)) throw new UsageError(`--pilot-record ${dir}: the pilot ran from ${record.model}, this comparison from ${comparison.model}`);
  const reused = comparison.seeds.filter((s) => record.seeds.includes(s));
  if (reused.length) throw new UsageError(`--pilot-record ${dir}: seeds ${reused.join(',')} were the pilot's: a comparison may not reuse them`);
  if (comparison.levels && !sameLevels(comparison.levels, record.levels)) throw new UsageError(`--levels ${levelList(comparison.levels)}: the pilot named ${levelList(record.levels)} before its runs`);
  return record;
}

/** The levels named earlier in `what` (a pilot or a plan), refusing another list given now. */
export function keepNamed(given: readonly string[] | null, named: readonly string[], what: string): string[] {
  if (given && !sameLevels(given, named)) throw new UsageError(`--levels ${levelList(given)}: ${what} named ${levelList(named)} before its runs`);
  return [...named];
}

/** The plan recorded in `out`, checked against the primary given now (a primary is named once, before the runs). */
export function checkPlan(plan: ComparisonPlan, primary: string | undefined, out: string): void {
  if (primary === undefined || primary === plan.primary) return;
  throw new UsageError(
    plan.primary
      ? `--primary ${primary}: this comparison named ${plan.primary} at its start (${join(out, PLAN_FILES.plan)})`
      : `--primary ${primary}: this comparison started without one (${join(out, PLAN_FILES.plan)}): a primary is named before the runs; start another --out`,
  );
}
