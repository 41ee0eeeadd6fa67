// The pilot's verdict on runs made elsewhere: scripts/fixtures/rl_reference.py's records (one
// JSON line a step or validation, each validation with every prompt's 0/1 in the prompts
// file's order), judged by the statistics and bar `npm run compare -- --pilot` uses
// (src/research/pairedStats.ts, src/research/namedLevels.ts): ceiling − RLVR at the last
// validation, paired by problem and by seed (the runs of one seed share their step 0), each
// arm's gain from step 0, per named level and pooled, 10,000 bootstrap draws.
// Usage: npx tsx scripts/reference-pilot.ts --prompts PROMPTS.jsonl --levels 3,4,5 \
//          --rlvr A.jsonl --rlvr B.jsonl --ceiling C.jsonl --ceiling D.jsonl [--out FILE.json]
// The n-th --rlvr and the n-th --ceiling are one seed.
import { readFileSync, writeFileSync } from 'node:fs';
import { isMain, runCli, UsageError, type OptionValues } from '../src/cli/options';
import { pilotVerdict, PILOT_BAR } from '../src/research/namedLevels';
import { pairedDifference, pairedGain, RESAMPLES, type Correct, type Interval } from '../src/research/pairedStats';

export const referencePilotCli = {
  name: 'reference-pilot',
  summary: "The pilot's verdict on rl_reference.py's records: ceiling − RLVR paired by problem and seed, and each arm's gain.",
  options: {
    prompts: { type: 'string', arg: 'FILE', exists: 'file', required: true, help: "the prompts the runs validated on (scripts/reference-eval.ts --prompts), task form in order" },
    levels: { type: 'string', arg: 'LIST', default: '3,4,5', help: 'the named levels' },
    rlvr: { type: 'string', arg: 'FILE', exists: 'file', multiple: true, help: "an RLVR run's records, one per seed" },
    ceiling: { type: 'string', arg: 'FILE', exists: 'file', multiple: true, help: "a ceiling run's records, in the same seeds' order" },
    out: { type: 'string', arg: 'FILE', help: 'the figures as JSON' },
  },
} as const;

interface Validation {
  step: number;
  right: number[];
}

/** A run's first and last validations, each as problem id → 0/1. */
function readRun(file: string, ids: readonly string[]): { start: Correct; final: Correct; steps: number } {
  const validations = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { kind: string } & Validation).filter((r) => r.kind === 'validation');
  if (!validations.length) throw new UsageError(`${file}: no validation record`);
  const correct = (v: Validation): Correct => {
    if (v.right?.length !== ids.length) throw new UsageError(`${file}: the validation of step ${v.step} has ${v.right?.length ?? 'no'} outcomes for ${ids.length} prompts`);
    return new Map(ids.map((id, i) => [id, v.right[i]!]));
  };
  const last = validations.at(-1)!;
  return { start: correct(validations[0]!), final: correct(last), steps: last.step };
}

const pts = (i: Interval | null) => (i ? `${(100 * i.estimate).toFixed(1)} [${(100 * i.lo).toFixed(1)}, ${(100 * i.hi).toFixed(1)}]${i.insideNoise ? ' (covers 0)' : ''}` : '–');

async function main(o: OptionValues<typeof referencePilotCli.options>): Promise<void> {
  if (!o.rlvr.length || o.rlvr.length !== o.ceiling.length) throw new UsageError(`give as many --ceiling as --rlvr runs, one per seed (got ${o.rlvr.length} and ${o.ceiling.length})`);
  const prompts = readFileSync(o.prompts!, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { id: string; level: number; form?: string }).filter((p) => (p.form ?? 'task') === 'task');
  const ids = prompts.map((p) => p.id);
  const levels = o.levels.split(',').map((l) => l.trim());
  const rlvr = o.rlvr.map((f) => readRun(f, ids));
  const ceiling = o.ceiling.map((f) => readRun(f, ids));
  const opts = { resamples: RESAMPLES, pairSeeds: true };
  const within = (ls: readonly string[]) => new Set(prompts.filter((p) => ls.includes(String(p.level))).map((p) => p.id));
  const rows = [...levels.map((l) => [l]), levels].map((ls) => {
    const w = within(ls);
    return {
      levels: ls.join(','),
      problems: w.size,
      difference: pairedDifference(ceiling.map((r) => r.final), rlvr.map((r) => r.final), w, opts),
      rlvrGain: pairedGain(rlvr.map((r) => r.start), rlvr.map((r) => r.final), w, opts),
      ceilingGain: pairedGain(ceiling.map((r) => r.start), ceiling.map((r) => r.final), w, opts),
    };
  });
  const pooled = rows.at(-1)!;
  const verdict = pilotVerdict(pooled.difference);
  console.log(`${rlvr.length} seed(s); steps: RLVR ${rlvr.map((r) => r.steps).join('/')}, ceiling ${ceiling.map((r) => r.steps).join('/')}; ${RESAMPLES} paired draws`);
  console.log('| levels | problems | ceiling − RLVR | RLVR gain from step 0 | ceiling gain from step 0 |');
  console.log('|:--|--:|--:|--:|--:|');
  for (const r of rows) console.log(`| ${r.levels === levels.join(',') ? `${r.levels} pooled` : r.levels} | ${r.problems} | ${pts(r.difference)} | ${pts(r.rlvrGain)} | ${pts(r.ceilingGain)} |`);
  console.log(`bar: ${PILOT_BAR.text}: ${verdict.clears ? 'cleared' : 'not cleared'} (${verdict.reason})`);
  if (o.out) writeFileSync(o.out, JSON.stringify({ levels, bar: PILOT_BAR.text, verdict, rlvr: o.rlvr, ceiling: o.ceiling, rows }, null, 1) + '\n');
}

if (isMain(import.meta.url)) runCli(referencePilotCli, main);
