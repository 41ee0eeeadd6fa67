/**
 * `npm run compare`: several methods × several seeds from one starting checkpoint, run one
 * after another (each an `npm run evolve` in its own process), every run resumed where it
 * stopped when the command is given again, then reported per method: start and final as mean
 * ± standard error over seeds, and from the per-problem outcomes the gain from the start and
 * the difference from the baseline with 95% paired-bootstrap intervals over problems and seeds
 * (src/sage/pairedStats.ts), overall, per level and pooled over the levels the seeds do not
 * show; the ceiling (rlvr-ceiling: RLVR on seeds of all five levels, what a perfect Challenger
 * could give) beside the methods, and each method's share of the gap from the baseline to it;
 * the bank's growth and the levels of what it admitted; a Markdown table, a chart with bands
 * and the summary as JSON, under one folder:
 *
 *   OUT/<method>/seed-<n>/   each run's folder (metrics, transcripts, bank, checkpoints)
 *   OUT/<method>/seed-<n>.log  its printed progress
 *   OUT/summary.md, OUT/summary.json, OUT/chart.svg
 *
 * Runs go seed by seed (every method at seed 0, then seed 1, ...) so that a comparison cut
 * short is still balanced. Every run makes the same number of steps: early stopping is off.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SHIPPED_SPLITS } from '../data/curriculum';
import type { Problem } from '../data/problem';
import { readProblemFile } from '../data/nodeFile';
import { PROMPT_SETS } from '../model/checkpoint';
import { METHODS } from '../sage/config';
import { CEILING, compareChart, compareTable, summarize, type ComparedRun } from '../sage/compare';
import type { BankEvent } from '../sage/bank';
import type { MetricsRecord, RunState } from '../sage/run';
import type { ValidationOutcomes } from '../sage/validation';
import { parseJsonl, parseProblems, RUN_FILES } from '../sage/runRecords';
import { isMain, runCli, UsageError, type OptionValues } from './options';
import { onInterrupt } from './interrupt';
import { SHIPPED_MODEL } from './runFiles';

const DEFAULT_METHODS = ['sage', 'rlvr', 'sage-no-quality-filter', 'mae'];
/** What --methods names: the methods, and the ceiling (RLVR on --ceiling-seeds). */
const ENTRIES = [...Object.keys(METHODS), CEILING.name];

export const compareCli = {
  name: 'compare',
  summary: 'Several methods × several seeds from one checkpoint, run or resumed one after another, reported with paired-bootstrap intervals over problems and seeds.',
  options: {
    methods: { type: 'string', multiple: true, choices: ENTRIES, arg: 'M,M', help: `methods to compare, comma-separated (default ${[...DEFAULT_METHODS, CEILING.name].join(',')}, the last only on the shipped seeds or with --ceiling-seeds); ${CEILING.name}: ${CEILING.method} on --ceiling-seeds (${CEILING.label})` },
    repeats: { type: 'int', min: 1, default: 5, help: 'seeds per method (0, 1, ... N−1)' },
    steps: { type: 'int', min: 1, default: 40, help: 'loop steps of every run' },
    model: { type: 'string', arg: 'DIR', exists: 'dir', default: SHIPPED_MODEL, help: 'the starting checkpoint of every run (Hugging Face folder)' },
    templates: { type: 'string', choices: PROMPT_SETS, help: 'role prompts: compact for models trained from scratch, instruct for instruction-tuned ones (default: those the checkpoint records in sage_lab.json, else instruct)' },
    seeds: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.seeds.file, help: 'seed problems' },
    'ceiling-seeds': { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.ceiling.file, help: `seed problems of ${CEILING.name}: --seeds and problems of the levels they lack, none held out` },
    validation: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.validation.file, help: 'held-out problems' },
    'validation-limit': { type: 'int', min: 1, default: 400, help: 'held-out problems per validation (the same ones in every run)' },
    'eval-every': { type: 'int', min: 1, default: 10, help: 'validate every N steps (and before the first, and after the last)' },
    config: { type: 'string', arg: 'FILE', exists: 'file', help: 'JSON loop settings for every run (as evolve --config)' },
    lr: { type: 'number', min: 0, minExclusive: true, help: 'learning rate of every run (default: evolve\'s)' },
    baseline: { type: 'string', choices: ENTRIES, default: 'rlvr', help: 'the method every other is compared with (difference with a paired 95% interval)' },
    out: { type: 'string', arg: 'DIR', default: 'runs/compare', help: 'the comparison folder (given again: finished runs are kept, unfinished ones resumed)' },
    'report-only': { type: 'flag', help: 'only write the report from the runs already in --out' },
    export: { type: 'string', arg: 'DIR', help: 'also copy the report and each finished run\'s records and log (no checkpoints) to DIR, after every run: a folder to publish or commit, which --out takes again (its runs count as done)' },
  },
  notes: ['Ctrl-C stops the run in flight at its next phase boundary (saved); the same command resumes the comparison.', 'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader'],
} as const;

type Options = OptionValues<typeof compareCli.options>;

const runDir = (out: string, method: string, seed: number) => join(out, method, `seed-${seed}`);

function readState(dir: string): RunState | null {
  const file = join(dir, RUN_FILES.state);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RunState) : null;
}

/**
 * A run's seed problems: its seeds.json, else the file its config names (a report's copy of the
 * records leaves the shipped seed file out); undefined where neither is there.
 */
async function runSeeds(dir: string): Promise<Problem[] | undefined> {
  const own = join(dir, RUN_FILES.seeds);
  if (existsSync(own)) return parseProblems(readFileSync(own, 'utf8'), own);
  const configFile = join(dir, RUN_FILES.config);
  const named = existsSync(configFile) ? (JSON.parse(readFileSync(configFile, 'utf8')) as { seeds?: unknown }).seeds : undefined;
  return typeof named === 'string' && existsSync(named) ? (await readProblemFile(named)).problems : undefined;
}

/**
 * The runs in the folder that made the comparison's steps, and those short of them (a run in flight, or one
 * stopped): the report leaves those out and names them, since their last validation is not a
 * final one. Each run with its per-problem outcomes, bank events and seeds where it has them.
 */
async function collect(out: string, methods: readonly string[], repeats: number, steps: number): Promise<{ runs: ComparedRun[]; unfinished: string[] }> {
  const runs: ComparedRun[] = [];
  const unfinished: string[] = [];
  for (const method of methods) {
    for (let seed = 0; seed < repeats; seed++) {
      const file = join(runDir(out, method, seed), RUN_FILES.metrics);
      if (!existsSync(file)) continue;
      const records = parseJsonl<MetricsRecord>(readFileSync(file, 'utf8'), file);
      // Steps count from 0 in the records; a run copied without its checkpoints still has them.
      const made = Math.max(0, ...records.filter((r) => r.kind === 'step').map((r) => r.step + 1));
      if (made === 0) continue;
      if (made < steps) {
        unfinished.push(`${method} seed ${seed} (${made} of ${steps} steps)`);
        continue;
      }
      const outcomesFile = join(runDir(out, method, seed), RUN_FILES.outcomes);
      // Runs recorded before outcomes were kept have none: the report says no paired interval is possible for them.
      const outcomes = existsSync(outcomesFile) ? parseJsonl<ValidationOutcomes>(readFileSync(outcomesFile, 'utf8'), outcomesFile) : undefined;
      const bankFile = join(runDir(out, method, seed), RUN_FILES.bank);
      const bankEvents = existsSync(bankFile) ? parseJsonl<BankEvent>(readFileSync(bankFile, 'utf8'), bankFile) : undefined;
      const seeds = await runSeeds(runDir(out, method, seed));
      runs.push({ method, seed, records, ...(outcomes ? { outcomes } : {}), ...(bankEvents ? { bankEvents } : {}), ...(seeds ? { seeds } : {}) });
    }
  }
  return { runs, unfinished };
}

/** The levels the seed problems show (none: their format has no levels). */
async function seedLevels(file: string): Promise<string[]> {
  const { problems } = await readProblemFile(file);
  return [...new Set(problems.flatMap((p) => (p.level === undefined ? [] : [String(p.level)])))].sort();
}

async function report(o: Options, methods: readonly string[]): Promise<string | null> {
  const { runs, unfinished } = await collect(o.out, methods, o.repeats, o.steps);
  if (!runs.length) return null;
  const summaries = summarize(runs, o.baseline, { ceiling: CEILING.name, seedLevels: await seedLevels(o.seeds) });
  const table = compareTable(summaries);
  const md = [
    `# Comparison: ${methods.join(', ')}`,
    '',
    `From \`${o.model}\`, ${o.steps} steps a run, seeds 0-${o.repeats - 1}, seed problems ${o.seeds}${methods.includes(CEILING.name) ? ` (${CEILING.name}: ${o['ceiling-seeds']})` : ''}, validation on ${o.validation} (${o['validation-limit']} problems, greedy, the same in every run), every ${o['eval-every']} steps; baseline ${o.baseline}.`,
    'The final validation, not the best. "Own mode" is the method\'s inference (Planner, Critic gate, Solver for SAGE; the Solver alone otherwise); per level in own mode.',
    ...(unfinished.length ? [`Left out, not finished: ${unfinished.join(', ')}.`] : []),
    '',
    table,
    '',
  ].join('\n');
  writeFileSync(join(o.out, 'summary.md'), md);
  writeFileSync(join(o.out, 'summary.json'), JSON.stringify(summaries, null, 2) + '\n');
  writeFileSync(join(o.out, 'chart.svg'), compareChart(summaries));
  if (o.export) exportRuns(o.out, o.export, runs);
  return table;
}

/**
 * Copies the report and the finished runs' records and logs from `out` to `to`, checkpoints
 * left behind (a run's weights are megabytes to gigabytes; its records a few hundred kB). The
 * copy keeps each run's state.json, so a comparison given it as --out counts those runs as done.
 */
function exportRuns(out: string, to: string, runs: readonly ComparedRun[]): void {
  mkdirSync(to, { recursive: true });
  for (const file of ['summary.md', 'summary.json', 'chart.svg']) copyFileSync(join(out, file), join(to, file));
  for (const { method, seed } of runs) {
    const [from, dest] = [runDir(out, method, seed), runDir(to, method, seed)];
    mkdirSync(dest, { recursive: true });
    for (const file of Object.values(RUN_FILES)) if (existsSync(join(from, file))) copyFileSync(join(from, file), join(dest, file));
    if (existsSync(`${from}.log`)) copyFileSync(`${from}.log`, `${dest}.log`);
  }
}

/** Runs one evolve to its end (or resumes it), its output prefixed on the console and kept in a log. */
function evolve(args: string[], prefix: string, log: string): Promise<number> {
  return new Promise((resolve, reject) => {
    // Node itself, not through npx: a Ctrl-C reaches the run once, and it stops cleanly (npm's wrapper would end it at once).
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/evolve.ts', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    const forward = (chunk: Buffer) => {
      appendFileSync(log, chunk);
      for (const line of chunk.toString().split('\n')) if (line.trim() && !/^npm warn/.test(line)) console.log(`${prefix} ${line}`);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
}

async function main(o: Options, given: ReadonlySet<string>): Promise<void> {
  // The shipped ceiling's seeds are the shipped seeds and harder ones: other seeds need a ceiling of their own.
  const ceilingFits = !given.has('seeds') || given.has('ceiling-seeds');
  const methods = o.methods.length ? o.methods : [...DEFAULT_METHODS, ...(ceilingFits ? [CEILING.name] : [])];
  if (methods.includes(CEILING.name) && !ceilingFits) throw new UsageError(`--methods ${CEILING.name}: its seeds (--ceiling-seeds, default ${SHIPPED_SPLITS.ceiling.file}) extend the shipped seeds, not ${o.seeds}: give --ceiling-seeds too`);
  if (new Set(methods).size !== methods.length) throw new UsageError('--methods: a method given twice');
  if (o.export && resolve(o.export) === resolve(o.out)) throw new UsageError(`--export ${o.export}: the comparison's own folder (--out): give another`);
  mkdirSync(o.out, { recursive: true });
  let stopping = false;
  onInterrupt(() => {
    stopping = true;
    console.log('\nstopping after the run in flight saves (the same command resumes; Ctrl-C again to quit now) ...');
  });
  if (!o['report-only']) {
    // Every run makes every step: early stopping would end runs at different lengths.
    const patience = ['--patience', String(o.steps + 1)];
    const common = [
      '--validation', o.validation, '--validation-limit', String(o['validation-limit']), '--eval-every', String(o['eval-every']),
      ...patience,
      ...(o.config ? ['--config', o.config] : []),
      ...(o.lr !== undefined ? ['--lr', String(o.lr)] : []),
    ];
    outer: for (let seed = 0; seed < o.repeats; seed++) {
      for (const method of methods) {
        if (stopping) break outer;
        const dir = runDir(o.out, method, seed);
        const state = readState(dir);
        const label = `[${method} seed ${seed}]`;
        if (state && state.step >= o.steps) {
          console.log(`${label} done earlier (${state.step} steps)`);
          continue;
        }
        let args: string[];
        if (state) {
          console.log(`${label} resuming after step ${state.step}`);
          // It goes on with what it recorded (its seed, files, settings); only a longer comparison's patience replaces the recorded one.
          args = ['--resume', dir, '--steps', String(o.steps - state.step), ...patience];
        } else {
          // A run that stopped before its first checkpoint has nothing to resume: it starts again, the old folder kept aside.
          if (existsSync(dir)) renameSync(dir, `${dir}.unfinished-${Date.now()}`);
          mkdirSync(join(o.out, method), { recursive: true });
          // Without --templates each run takes the prompts the checkpoint records, as evolve does.
          // The ceiling is RLVR on its own seeds; every other entry is its method on --seeds.
          const [evolveMethod, seeds] = method === CEILING.name ? [CEILING.method, o['ceiling-seeds']] : [method, o.seeds];
          args = ['--model', o.model, ...(o.templates ? ['--templates', o.templates] : []), '--method', evolveMethod, '--seeds', seeds, '--seed', String(seed), '--steps', String(o.steps), '--out', dir, ...common];
        }
        const code = await evolve(args, label, `${dir}.log`);
        // Ctrl-C reaches the run too: whatever it exited with then, the comparison stops as asked (saved runs resume).
        if (stopping) break outer;
        if (code !== 0) throw new Error(`${label} stopped with exit code ${code}: see ${dir}.log`);
        await report(o, methods);
      }
    }
  }
  const table = await report(o, methods);
  if (!table) {
    console.log(`no run in ${o.out} has made its ${o.steps} steps yet`);
    return;
  }
  console.log(table);
  console.log(`report in ${join(o.out, 'summary.md')}, ${join(o.out, 'chart.svg')}, ${join(o.out, 'summary.json')}`);
}

if (isMain(import.meta.url)) await runCli(compareCli, main);
