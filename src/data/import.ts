/**
 * Seed import: a JSONL file, streamed, becomes Problems with a report — counts per detected
 * format, every unusable line with its number and reason, duplicates (same normalised
 * statement) loaded once, or the whole file refused with the reason when it is not text.
 */
import { readJsonl } from './jsonl';
import { normaliseStatement, recordToProblem, type FieldMapping, type Format, type Problem } from './problem';

export interface ImportReport {
  problems: Problem[];
  /** Problems per detected format. */
  counts: Partial<Record<Format, number>>;
  errors: { line: number; reason: string }[];
  /** Lines whose statement was already loaded from line `first`. */
  duplicates: { line: number; first: number }[];
  /** Set when the file was not read at all. */
  refused?: string;
}

export interface ImportOptions {
  /** Names the problems' source and their ids when records have none. */
  source: string;
  /** Overrides format detection for every record. */
  mapping?: FieldMapping;
}

export async function importProblems(chunks: AsyncIterable<Uint8Array>, options: ImportOptions): Promise<ImportReport> {
  const report: ImportReport = { problems: [], counts: {}, errors: [], duplicates: [] };
  const firstLine = new Map<string, number>();
  for await (const ev of readJsonl(chunks)) {
    if ('refused' in ev) return { ...report, refused: ev.refused };
    if ('error' in ev) {
      report.errors.push({ line: ev.line, reason: ev.error });
      continue;
    }
    const r = recordToProblem(ev.value, options.source, `${options.source}:${ev.line}`, options.mapping);
    if ('error' in r) {
      report.errors.push({ line: ev.line, reason: r.error });
      continue;
    }
    const key = normaliseStatement(r.problem.statement);
    const first = firstLine.get(key);
    if (first !== undefined) {
      report.duplicates.push({ line: ev.line, first });
      continue;
    }
    firstLine.set(key, ev.line);
    report.problems.push(r.problem);
    report.counts[r.problem.format] = (report.counts[r.problem.format] ?? 0) + 1;
  }
  return report;
}

/** "148 gsm8k, 12 qa": the counts in one line. */
export function describeCounts(counts: ImportReport['counts']): string {
  return Object.entries(counts).map(([format, n]) => `${n} ${format}`).join(', ') || 'no problems';
}
