// What the Challenger posed during a comparison's runs, from their transcripts (the loop keeps a
// sample of each step's rollouts): per method, pooled over seeds and split into the runs' first
// and second halves, the proposals read as the environment reads them (parse rate, curriculum
// levels, right claims, expressions no seed holds; challengerProbe's table, so that it reads
// beside the probe of the checkpoint before RL) and what the loop did with each level's
// proposals (admitted, or refused and why).
// Usage: node scripts/node-gpu.mjs scripts/challenger-record.ts --runs OUT [--methods sage,mae]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseProblems, RUN_FILES } from '../src/sage/runRecords';
import { COMPARISON_RUNS_OPTIONS, comparisonRuns, readTranscripts } from '../src/cli/comparisonFolder';
import { isMain, runCli, type OptionValues } from '../src/cli/options';
import { expressionKey, probeTable, readProposal, tallyProposals, verdictClass, type ProposalReading } from '../src/research/challengerProbe';

export const recordCli = {
  name: 'challenger-record',
  summary: "What the Challenger posed in a comparison's runs, from their transcripts: levels, right claims, novel expressions, and the loop's verdict per level.",
  options: COMPARISON_RUNS_OPTIONS,
} as const;

interface Posed {
  step: number;
  reading: ProposalReading;
  verdict: string;
}

function readRun(dir: string): { posed: Posed[]; steps: number } {
  const seeds = parseProblems(readFileSync(join(dir, RUN_FILES.seeds), 'utf8'), RUN_FILES.seeds);
  const known = new Set(seeds.flatMap((p) => (p.kind === 'math' && p.expression ? [expressionKey(p.expression)] : [])));
  const { transcripts, steps } = readTranscripts(dir);
  const posed = transcripts
    .filter((t) => t.role === 'challenger')
    .map((t) => ({ step: t.step, reading: readProposal(t.output, known), verdict: verdictClass(t.verdict) }));
  return { posed, steps };
}

/** Per level (as the probe names them), how many proposals met each verdict. */
function verdictTable(posed: readonly Posed[]): string {
  const byLevel = new Map<string, Map<string, number>>();
  for (const p of posed) {
    const r = p.reading;
    const level = r.value !== null ? (r.level === null ? 'other' : `L${r.level}`) : r.parsed ? 'no expression' : 'unparsable';
    const row = byLevel.get(level) ?? new Map<string, number>();
    row.set(p.verdict, (row.get(p.verdict) ?? 0) + 1);
    byLevel.set(level, row);
  }
  const verdicts = [...new Set([...byLevel.values()].flatMap((r) => [...r.keys()]))].sort();
  const order = ['L1', 'L2', 'L3', 'L4', 'L5', 'other', 'no expression', 'unparsable'];
  const levels = [...byLevel.keys()].sort((a, b) => order.indexOf(a) - order.indexOf(b));
  return [
    `| read as | ${verdicts.join(' | ')} |`,
    `|---|${verdicts.map(() => '--:').join('|')}|`,
    ...levels.map((l) => `| ${l} | ${verdicts.map((v) => byLevel.get(l)!.get(v) ?? 0).join(' | ')} |`),
  ].join('\n');
}

async function main(o: OptionValues<typeof recordCli.options>): Promise<void> {
  for (const { method, seeds } of comparisonRuns(o.runs, o.methods)) {
    const runs = seeds.map((d) => readRun(join(o.runs, method, d)));
    const posed = runs.flatMap((r) => r.posed.map((p) => ({ ...p, half: p.step < r.steps / 2 ? 0 : 1 })));
    if (!posed.length) continue;
    console.log(`## ${method}: ${seeds.length} run(s) (${seeds.join(', ')}), ${posed.length} Challenger transcripts\n`);
    for (const [half, name] of [[0, 'first half of each run'], [1, 'second half']] as const) {
      const mine = posed.filter((p) => p.half === half);
      console.log(`### ${name}: ${mine.length} proposals\n\n\`\`\`\n${probeTable(tallyProposals(mine.map((p) => p.reading)))}\n\`\`\`\n`);
    }
    console.log(`### the loop's verdict, all steps\n\n${verdictTable(posed)}\n`);
  }
}

if (isMain(import.meta.url)) await runCli(recordCli, main);
