/**
 * What a run's command line names on disk, read for every command that takes it (evolve, eval
 * and the research scripts): a problem file (seeds or held-out problems), its import reported
 * and its bad lines named, and a loop settings file (--config), each refused in one line.
 */
import { readFileSync } from 'node:fs';
import { describeCounts, type ImportReport } from '../data/import';
import { readProblemFile } from '../data/nodeFile';
import { parseFieldMapping, type Problem } from '../data/problem';
import { parseSettings, type RunSettings } from '../sage/settings';
import { errorText } from '../util/errorText';
import { UsageError } from './options';

/** Loop settings from a --config file: known keys only, each checked. */
export function readConfig(file: string): Partial<RunSettings> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`--config ${file}: not valid JSON (${errorText(e)})`);
  }
  try {
    return parseSettings(raw);
  } catch (e) {
    throw new UsageError(`--config ${file}: ${(e as Error).message}`);
  }
}

/**
 * A problem file read as `what` (seeds, validation): its import reported, the first bad lines and
 * duplicates named, refused where it holds no usable problem; `mapping`: a --fields mapping.
 */
export async function readSplit(file: string, what: string, mapping?: string): Promise<Problem[]> {
  let fieldMapping;
  if (mapping) {
    const m = parseFieldMapping(mapping);
    if (typeof m === 'string') throw new UsageError(`--fields: ${m}`);
    fieldMapping = m;
  }
  const report: ImportReport = await readProblemFile(file, fieldMapping);
  if (report.refused) throw new Error(`${file}: ${report.refused}`);
  console.log(`${what}: ${file}: ${report.problems.length} problems (${describeCounts(report.counts)})` +
    `${report.errors.length ? `, ${report.errors.length} bad lines` : ''}${report.duplicates.length ? `, ${report.duplicates.length} duplicates loaded once` : ''}`);
  for (const e of report.errors.slice(0, 20)) console.warn(`${file}:${e.line}: skipped: ${e.reason}`);
  if (report.errors.length > 20) console.warn(`... and ${report.errors.length - 20} more bad lines`);
  for (const d of report.duplicates.slice(0, 5)) console.warn(`${file}:${d.line}: duplicate of line ${d.first}`);
  if (report.duplicates.length > 5) console.warn(`... and ${report.duplicates.length - 5} more duplicates`);
  if (!report.problems.length) throw new Error(`${file}: no usable problems`);
  return report.problems;
}
