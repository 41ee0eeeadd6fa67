// What the Critic scored during a comparison's runs, from their transcripts (the loop keeps one
// rollout of each role and template a step): per method and Critic task (rating a problem, a
// plan, an answer), pooled over seeds and split into the runs' first and second halves, how many
// ratings parsed and how the scores spread. The Critic is paid for its format alone, so nothing
// stops it from giving every input one score; a score that does not vary carries nothing to the
// roles it pays (the quality filter, the plan gate, MAE's Solver), which the modal share shows.
// Usage: node scripts/node-gpu.mjs scripts/critic-record.ts --runs OUT [--methods sage,mae]
import { join } from 'node:path';
import { isMain, runCli, type OptionValues } from '../src/cli/options';
import { COMPARISON_RUNS_OPTIONS, comparisonRuns, readTranscripts } from '../src/cli/comparisonFolder';

export const criticRecordCli = {
  name: 'critic-record',
  summary: "What the Critic scored in a comparison's runs, from their transcripts: parsed ratings, distinct scores and the most common one's share, per task and half.",
  options: COMPARISON_RUNS_OPTIONS,
} as const;

interface Rating {
  run: string;
  task: string;
  half: 0 | 1;
  /** The score as written (1-10), null where the rating did not parse. */
  score: string | null;
}

function readRun(dir: string, run: string): Rating[] {
  const { transcripts, steps } = readTranscripts(dir);
  return transcripts
    .filter((t) => t.role === 'critic')
    .map((t) => ({ run, task: t.template, half: t.step < steps / 2 ? 0 : 1, score: t.score === null ? null : (t.fields.score ?? null) }));
}

const pct = (x: number) => `${(100 * x).toFixed(0)}%`;

/** The most common score among parsed ratings, and its share of them. */
function mode(scores: readonly string[]): { score: string; share: number } | null {
  const counts = new Map<string, number>();
  for (const s of scores) counts.set(s, (counts.get(s) ?? 0) + 1);
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  return top ? { score: top[0], share: top[1] / scores.length } : null;
}

/** One task and half: pooled counts, then each run's own most common score (a Critic collapses per run, not across runs). */
function row(name: string, ratings: readonly Rating[], runs: readonly string[]): string {
  const parsed = ratings.flatMap((r) => (r.score === null ? [] : [r.score]));
  const modes = runs.map((run) => mode(ratings.flatMap((r) => (r.run === run && r.score !== null ? [r.score] : []))));
  const found = modes.filter((m): m is NonNullable<typeof m> => m !== null);
  const meanShare = found.length ? pct(found.reduce((a, m) => a + m.share, 0) / found.length) : '-';
  return `| ${name} | ${ratings.length} | ${ratings.length ? pct(parsed.length / ratings.length) : '-'} | ${new Set(parsed).size} | ${modes.map((m) => m?.score ?? '-').join(', ')} | ${meanShare} |`;
}

async function main(o: OptionValues<typeof criticRecordCli.options>): Promise<void> {
  for (const { method, seeds } of comparisonRuns(o.runs, o.methods)) {
    const ratings = seeds.flatMap((d) => readRun(join(o.runs, method, d), d));
    if (!ratings.length) continue;
    console.log(`## ${method}: ${seeds.length} run(s) (${seeds.join(', ')}), ${ratings.length} Critic transcripts\n`);
    console.log("| task, half | ratings | parsed | distinct scores | each run's most common score | its share of the run's parsed, mean |\n|---|--:|--:|--:|--:|--:|");
    for (const task of [...new Set(ratings.map((r) => r.task))].sort()) {
      for (const [half, name] of [[0, 'first'], [1, 'second']] as const) console.log(row(`${task}, ${name}`, ratings.filter((r) => r.task === task && r.half === half), seeds));
    }
    console.log('');
  }
}

if (isMain(import.meta.url)) await runCli(criticRecordCli, main);
