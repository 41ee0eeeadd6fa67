/**
 * An evaluation's report as `npm run eval` writes it (and the research scripts that score a
 * model the same way): the files beside its outcomes, and its tables, greedy pass@1 per mode
 * and level, and greedy and pass@k per form.
 */
import type { FormResult, SampledTally } from '../sage/sampledValidation';
import type { Accuracy, Tally, ValidationResult } from '../sage/validation';

/** What eval writes beside the outcomes. */
export const EVAL_SUMMARY = 'summary.json';
/** Each problem's greedy verdict and sample count per form (with --samples or --corpus-form). */
export const EVAL_SAMPLES = 'samples.jsonl';

const percent = (x: number) => `${(100 * x).toFixed(1)}%`;
const cell = (t: { correct: number; total: number }) => `${percent(t.correct / t.total)} ${t.correct}/${t.total}`;

/**
 * The tallies as a table: a row per mode (the Solver alone, the method's own), a column for all
 * problems (± one binomial standard error), each level and each source when there are several.
 */
export function validationTable(result: ValidationResult, method: string): string {
  const rows: [string, Accuracy & { planShown?: number }][] = [['Solver alone', result]];
  if (result.planned) rows.push([`${method}'s own mode`, result.planned]);
  const keys = (pick: (a: Accuracy) => Tally) => [...new Set(rows.flatMap(([, a]) => Object.keys(pick(a))))].sort();
  const levels = keys((a) => a.perLevel);
  const sources = keys((a) => a.perSource);
  const columns: [string, (a: Accuracy) => string][] = [
    ['all', (a) => {
      const [correct, n] = Object.values(a.perSource).reduce(([c, m], t) => [c + t.correct, m + t.total], [0, 0]);
      return `${percent(a.accuracy)} ± ${(100 * Math.sqrt((a.accuracy * (1 - a.accuracy)) / n)).toFixed(1)} (${correct}/${n})`;
    }],
    ...levels.map((l): [string, (a: Accuracy) => string] => [`L${l}`, (a) => (a.perLevel[l] ? cell(a.perLevel[l]!) : '-')]),
    ...(sources.length > 1 ? sources.map((s): [string, (a: Accuracy) => string] => [s, (a) => (a.perSource[s] ? cell(a.perSource[s]!) : '-')]) : []),
  ];
  const table = [['', ...columns.map(([name]) => name)], ...rows.map(([label, a]) => [label, ...columns.map(([, f]) => f(a))])];
  const lines = aligned(table);
  if (result.planned) lines.push(`plans shown to the Solver (passed the Critic's gate): ${percent(result.planned.planShown)}`);
  if (result.critic) lines.push(criticLine(result.critic));
  return lines.join('\n');
}

/** The Critic's AUC on its probe in one sentence, as eval prints it and the lab's Evaluate panel shows it. */
export function criticLine(c: NonNullable<ValidationResult['critic']>): string {
  const auc = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  const answers = c.answerAuc === undefined ? '' : `, answers ${auc(c.answerAuc)} (${c.pairs.answers} right against a number changed)`;
  return `Critic AUC: problems ${auc(c.problemAuc)} (${c.pairs.problems} real against corrupted), plans ${auc(c.planAuc)} (${c.pairs.plans} own plan against a wrong one)${answers}`;
}

/** Rows of cells as columns padded to their widest cell. */
function aligned(table: string[][]): string[] {
  const widths = table[0]!.map((_, j) => Math.max(...table.map((r) => r[j]!.length)));
  return table.map((r) => r.map((c, j) => c.padEnd(widths[j]!)).join('  ').trimEnd());
}

/**
 * Greedy and pass@k per form: a row per form and measure (greedy with its counts, then each
 * pass@k), a column for all problems and one per level.
 */
export function formsTable(results: readonly FormResult[]): string {
  const levels = [...new Set(results.flatMap((r) => Object.keys(r.perLevel)))].sort((a, b) => Number(a) - Number(b));
  const groups = (r: FormResult): [string, SampledTally | undefined][] => [['all', r.all], ...levels.map((l): [string, SampledTally | undefined] => [`L${l}`, r.perLevel[l]])];
  const rows: string[][] = [['', '', ...groups(results[0]!).map(([name]) => name)]];
  for (const r of results) {
    rows.push([r.form, 'greedy', ...groups(r).map(([, t]) => (t ? `${percent(t.greedy)} ${Math.round(t.greedy * t.problems)}/${t.problems}` : '-'))]);
    for (const k of Object.keys(r.all.passAt)) rows.push([r.form, `pass@${k}`, ...groups(r).map(([, t]) => (t ? percent(t.passAt[k]!) : '-'))]);
  }
  return aligned(rows).join('\n');
}
