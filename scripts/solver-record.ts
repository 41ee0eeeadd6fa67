// How the Solver answered problems beyond the seeds during a comparison's runs, from their
// transcripts (the loop keeps one rollout of each role and template a step): per method, pooled
// over seeds, its rollouts on problems whose statement reads as curriculum levels 3-5 (seeded or
// generated), alone or shown a plan; how many wrote the answer tag and how many were right; and,
// for those shown a plan, what the plan computed. The Planner learnt its plans on the seeds'
// single operations, so a plan that computes one step of a longer expression leads the Solver to
// that step's value.
// Usage: node scripts/node-gpu.mjs scripts/solver-record.ts --runs OUT [--methods sage,rlvr-ceiling]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PromptSet } from '../src/model/checkpoint';
import { escapeRegExp, readStatement } from '../src/data/curriculum';
import { countOperations, expressionKey } from '../src/research/challengerProbe';
import { TEMPLATE_SETS } from '../src/sage/templates';
import { RUN_FILES } from '../src/sage/runRecords';
import { isMain, runCli, type OptionValues } from '../src/cli/options';
import { COMPARISON_RUNS_OPTIONS, comparisonRuns, readTranscripts } from '../src/cli/comparisonFolder';

export const solverRecordCli = {
  name: 'solver-record',
  summary: "How the Solver answered problems of levels 3-5 in a comparison's runs, from their transcripts: answer tags, right answers, and what the plans it was shown computed.",
  options: COMPARISON_RUNS_OPTIONS,
} as const;

interface Answered {
  /** What the plan shown computed, or null where the Solver answered alone. */
  plan: 'one step of several' | 'the whole expression' | 'other' | null;
  tagged: boolean;
  right: boolean;
}

/** A template's rendering read back: a pattern with one named group a placeholder. */
function templatePattern(template: string): RegExp {
  const escaped = escapeRegExp(template).replace(/\\\{\\\{(\w+)\\\}\\\}/g, '(?<$1>[\\s\\S]*?)');
  return new RegExp(`^${escaped}$`);
}

function readPlan(plan: string, expression: string): NonNullable<Answered['plan']> {
  const computed = /^Compute (.+?)\.?$/.exec(plan.trim())?.[1];
  if (!computed) return 'other';
  if (expressionKey(computed) === expressionKey(expression)) return 'the whole expression';
  return countOperations(computed) < countOperations(expression) ? 'one step of several' : 'other';
}

function readRun(dir: string): Answered[] {
  const set = (JSON.parse(readFileSync(join(dir, RUN_FILES.config), 'utf8')) as { templates: PromptSet }).templates;
  const patterns = { solver: templatePattern(TEMPLATE_SETS[set].solver), solverWithPlan: templatePattern(TEMPLATE_SETS[set].solverWithPlan) };
  return readTranscripts(dir).transcripts.flatMap((t) => {
    if (t.role !== 'solver' || (t.template !== 'solver' && t.template !== 'solverWithPlan')) return [];
    const groups = patterns[t.template].exec(t.prompt)?.groups;
    const read = groups?.problem ? readStatement(groups.problem.trim()) : null;
    if (!read || read.level < 3) return [];
    return [{ plan: groups!.plan === undefined ? null : readPlan(groups!.plan, read.expression), tagged: t.fields.answer !== undefined, right: t.verdict === 'correct' }];
  });
}

const count = (xs: readonly Answered[], f: (a: Answered) => boolean) => xs.filter(f).length;

async function main(o: OptionValues<typeof solverRecordCli.options>): Promise<void> {
  for (const { method, seeds } of comparisonRuns(o.runs, o.methods)) {
    const answered = seeds.flatMap((d) => readRun(join(o.runs, method, d)));
    if (!answered.length) continue;
    console.log(`## ${method}: ${seeds.length} run(s) (${seeds.join(', ')}), ${answered.length} Solver transcripts on problems of levels 3-5\n`);
    console.log('| shown | rollouts | answer tag written | right | plan: one step of several | plan: the whole expression | plan: other |\n|---|--:|--:|--:|--:|--:|--:|');
    for (const [name, mine] of [['alone', answered.filter((a) => a.plan === null)], ['a plan', answered.filter((a) => a.plan !== null)]] as const) {
      const plans = (p: Answered['plan']) => (name === 'alone' ? '-' : String(count(mine, (a) => a.plan === p)));
      console.log(`| ${name} | ${mine.length} | ${count(mine, (a) => a.tagged)} | ${count(mine, (a) => a.right)} | ${plans('one step of several')} | ${plans('the whole expression')} | ${plans('other')} |`);
    }
    console.log('');
  }
}

if (isMain(import.meta.url)) await runCli(solverRecordCli, main);
