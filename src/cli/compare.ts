/**
 * `npm run compare`: several methods × several seeds from one starting checkpoint, run one
 * after another (each an `npm run evolve` in its own process), every run resumed where it
 * stopped when the command is given again, then reported per method: start and final as mean
 * ± standard error over seeds, and from the per-problem outcomes the gain from the start and
 * the difference from the baseline with 95% paired-bootstrap intervals over problems and seeds
 * (src/research/pairedStats.ts), overall, per level and pooled over the levels the seeds do not
 * show; the ceiling (rlvr-ceiling: RLVR on seeds of all five levels, what a perfect Challenger
 * could give) beside the methods, and each method's share of the gap from the baseline to it;
 * the bank's growth and the levels of what it admitted; each run's commit, clock times and
 * kernels (src/research/runsTable.ts); a Markdown table, a chart with bands and the summary as
 * JSON, under one folder:
 *
 *   OUT/<method>/seed-<n>/   each run's folder (metrics, transcripts, bank, checkpoints)
 *   OUT/<method>/seed-<n>.log  its printed progress
 *   OUT/summary.md, OUT/summary.json, OUT/chart.svg
 *
 * Runs go seed by seed (every method at seed 0, then seed 1, ...) so that a comparison cut
 * short is still balanced. Every run makes the same number of steps: early stopping is off.
 *
 * Before the runs it records what the comparison will be judged by (OUT/plan.json,
 * src/research/namedLevels.ts): the primary figure (`--primary A:B`, A − B on the named held-out
 * levels, the Solver alone), the levels, and the pilot it rests on; the report gives those
 * first and calls every other figure exploratory. `--pilot` runs the pilot instead: RLVR and
 * the ceiling on seeds of their own (PILOT_SEED_OFFSET on), its levels recorded in
 * OUT/pilot.json at its start and its verdict there at its end, cleared or failed.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SHIPPED_SPLITS } from '../data/curriculum';
import type { Problem } from '../data/problem';
import { readProblemFile } from '../data/nodeFile';
import { PROMPT_SETS } from '../model/checkpoint';
import { COMPARED_METHODS, METHODS } from '../sage/config';
import { CEILING, methodOutcomes, summarize, type ComparedRun } from '../research/compare';
import { compareChart } from '../research/compareChart';
import { compareTable } from '../research/compareTable';
import { runsSection, type RunProvenance } from '../research/runsTable';
import { namedLevelDifference, namedLevelShare, parsePrimary, pilotSection, pilotVerdict, planSection, PILOT_BAR, PILOT_METHODS, PILOT_SEED_OFFSET, primaryName, seedSpan, type ComparisonPlan, type Headroom, type LevelFigures, type PilotRecord, type StatedPilot } from '../research/namedLevels';
import { MIN_RESAMPLES, RESAMPLES, shareable } from '../research/pairedStats';
import type { BankEvent } from '../sage/bank';
import type { MetricsRecord, RunState } from '../sage/run';
import type { ValidationOutcomes } from '../sage/validation';
import { parseJsonl, parseProblems, RUN_FILES, type RunStart } from '../sage/runRecords';
import { isMain, runCli, UsageError, type OptionValues } from './options';
import { checkPlan, keepNamed, PLAN_FILES, readJson, readPilot, writeJson } from './comparePlan';
import { onInterrupt } from './interrupt';
import { SHIPPED_MODEL } from './runFiles';

/** What --methods names: the methods, and the ceiling (RLVR on --ceiling-seeds). */
const ENTRIES = [...Object.keys(METHODS), CEILING.name];

export const compareCli = {
  name: 'compare',
  summary: 'Several methods × several seeds from one checkpoint, run or resumed one after another, reported with paired-bootstrap intervals over problems and seeds.',
  options: {
    methods: { type: 'string', multiple: true, choices: ENTRIES, arg: 'M,M', help: `methods to compare, comma-separated (default ${[...COMPARED_METHODS, CEILING.name].join(',')}, the last only on the shipped seeds or with --ceiling-seeds); ${CEILING.name}: ${CEILING.method} on --ceiling-seeds (${CEILING.label})` },
    repeats: { type: 'int', min: 1, default: 5, help: `seeds per method (0, 1, ... N−1; a pilot's ${PILOT_SEED_OFFSET}, ${PILOT_SEED_OFFSET + 1}, ...)` },
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
    jobs: { type: 'int', min: 1, default: 1, help: 'runs at once (each its own evolve process): on a GPU a small model\'s run leaves most of the card idle, so several side by side finish sooner; each run is the same command whatever N is, its kernels tuned beside the others\' (its kernels.json records the plan)' },
    'report-only': { type: 'flag', help: 'only write the report from the runs already in --out' },
    export: { type: 'string', arg: 'DIR', help: 'also copy the report and each finished run\'s records and log (no checkpoints) to DIR, after every run: a folder to publish or commit, which --out takes again (its runs count as done)' },
    pilot: { type: 'flag', help: `the pilot instead of a comparison: ${PILOT_METHODS.join(' and ')} on seeds from ${PILOT_SEED_OFFSET} (none a comparison uses), reporting ${CEILING.name} − rlvr on --levels and whether it clears the bar (${PILOT_BAR.text}); recorded in OUT/${PLAN_FILES.pilot} (--out default runs/pilot)` },
    levels: { type: 'string', multiple: true, arg: 'L,L', help: 'the held-out levels the pilot and the primary comparison are judged on, named before the runs (default: the pilot\'s, else those of --validation the seeds do not show)' },
    primary: { type: 'string', arg: 'A:B', help: 'the primary comparison, named at the first command: A − B on --levels, the Solver alone, given first in the report; every other figure is exploratory (e.g. sage-verified-problems:rlvr)' },
    'pilot-record': { type: 'string', arg: 'DIR', exists: 'dir', help: `the pilot this comparison rests on (a --pilot --out folder): its verdict goes in the report; its seeds may not be reused` },
    resamples: { type: 'int', min: MIN_RESAMPLES, default: RESAMPLES, help: 'bootstrap resamples of every interval' },
  },
  notes: ['Ctrl-C stops the run in flight at its next phase boundary (saved); the same command resumes the comparison.', 'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader'],
} as const;

type Options = OptionValues<typeof compareCli.options>;

const runDir = (out: string, method: string, seed: number) => join(out, method, `seed-${seed}`);

/** What one call runs and reports: the methods, their seeds, the folder, and the levels named for it. */
interface Setup {
  out: string;
  methods: readonly string[];
  seeds: readonly number[];
  levels: string[];
}

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
async function collect(out: string, methods: readonly string[], seedList: readonly number[], steps: number): Promise<{ runs: ComparedRun[]; provenance: RunProvenance[]; unfinished: string[] }> {
  const runs: ComparedRun[] = [];
  const provenance: RunProvenance[] = [];
  const unfinished: string[] = [];
  for (const method of methods) {
    for (const seed of seedList) {
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
      provenance.push({ method, seed, starts: readJson<{ starts?: RunStart[] }>(join(runDir(out, method, seed), RUN_FILES.config))?.starts ?? [] });
    }
  }
  return { runs, provenance, unfinished };
}

/** The levels the problems of a file show, as strings (none: its format has no levels). */
async function fileLevels(file: string): Promise<string[]> {
  const { problems } = await readProblemFile(file);
  return [...new Set(problems.flatMap((p) => (p.level === undefined ? [] : [String(p.level)])))].sort();
}

/** The levels given with --levels, checked: held out in --validation, and not shown by the seeds; null where none were given. */
async function givenLevels(o: Options, seedLevelList: readonly string[]): Promise<string[] | null> {
  if (!o.levels.length) return null;
  const held = await fileLevels(o.validation);
  const levels = [...new Set(o.levels)].sort();
  const missing = levels.find((l) => !held.includes(l));
  if (missing !== undefined) throw new UsageError(`--levels ${o.levels.join(',')}: no held-out problem of level ${missing} in ${o.validation}`);
  const seen = levels.find((l) => seedLevelList.includes(l));
  if (seen !== undefined) throw new UsageError(`--levels ${o.levels.join(',')}: the seeds (${o.seeds}) show level ${seen}: name held-out levels they do not`);
  return levels;
}

/** The runs' report: the tables and chart, and before them the pilot's verdict or the comparison's plan; the table, or null without a finished run. */
async function report(o: Options, setup: Setup, plan: ComparisonPlan | null, pilot: StatedPilot | null): Promise<string | null> {
  const { out, methods, seeds } = setup;
  const { runs, provenance, unfinished } = await collect(out, methods, seeds, o.steps);
  if (!runs.length) return null;
  const bootstrap = { resamples: o.resamples };
  const summaries = summarize(runs, o.pilot ? 'rlvr' : o.baseline, { ceiling: CEILING.name, seedLevels: await fileLevels(o.seeds), resamples: o.resamples });
  const table = compareTable(summaries);
  /** A method's runs' outcomes once all its seeds have run. */
  const of = (m: string) => {
    const mine = runs.filter((r) => r.method === m);
    return mine.length === seeds.length ? methodOutcomes(mine) : null;
  };
  /** A − B on the named levels, once every run of both is finished. */
  const figures = (a: string, b: string): LevelFigures | null => {
    const [x, y] = [of(a), of(b)];
    return x && y ? namedLevelDifference(x, y, setup.levels, bootstrap) : null;
  };
  let head: string[];
  if (o.pilot) {
    // The verdict once every run of both has made its steps; the record is written either way, cleared or failed.
    const record = pilot!.record;
    const f = figures(CEILING.name, 'rlvr');
    record.result = f ? { ...pilotVerdict(f.pooled), pooled: f.pooled, perLevel: f.perLevel, finishedAt: record.result?.finishedAt ?? new Date().toISOString() } : null;
    record.resamples = o.resamples;
    writeJson(join(out, PLAN_FILES.pilot), record);
    head = [...pilotSection(record), '', '## Exploratory', '', 'Every figure below other than the pilot\'s verdict is exploratory.'];
  } else {
    const p = plan?.primary ? (parsePrimary(plan.primary, ENTRIES) as { a: string; b: string }) : null;
    const primary = p ? figures(p.a, p.b) : null;
    if (primary) writeJson(join(out, PLAN_FILES.primary), { primary: plan!.primary, ...primary });
    // The goal reads an A − RLVR figure against the ceiling's headroom over RLVR: the pilot's, and this comparison's own once its ceiling runs end.
    const headroom: Headroom[] = [];
    if (primary && p?.b === 'rlvr' && p.a !== CEILING.name) {
      if (pilot?.record.result) headroom.push({ source: `the pilot's gap (seeds ${seedSpan(pilot.record.seeds)})`, gap: pilot.record.result.pooled });
      const gap = methods.includes(CEILING.name) ? figures(CEILING.name, 'rlvr') : null;
      const share = shareable(gap?.pooled) ? namedLevelShare(of(p.a)!, of('rlvr')!, of(CEILING.name)!, setup.levels, bootstrap) : null;
      if (gap) headroom.push({ source: `this comparison's own gap (seeds ${seedSpan(seeds)})`, gap: gap.pooled, share });
    }
    head = planSection(plan, pilot, primary, headroom);
  }
  const md = [
    `# ${o.pilot ? 'Pilot' : 'Comparison'}: ${methods.join(', ')}`,
    '',
    `From \`${o.model}\`, ${o.steps} steps a run, seed${seeds.length > 1 ? 's' : ''} ${seedSpan(seeds)}, seed problems ${o.seeds}${methods.includes(CEILING.name) ? ` (${CEILING.name}: ${o['ceiling-seeds']})` : ''}, validation on ${o.validation} (${o['validation-limit']} problems, greedy, the same in every run), every ${o['eval-every']} steps; baseline ${o.pilot ? 'rlvr' : o.baseline}.`,
    'The final validation, not the best. "Own mode" is the method\'s inference (Planner, Critic gate, Solver for SAGE; the Solver alone otherwise); per level in own mode.',
    ...(unfinished.length ? [`Left out, not finished: ${unfinished.join(', ')}.`] : []),
    '',
    ...head,
    '',
    table,
    '',
    ...runsSection(provenance),
    '',
  ].join('\n');
  writeFileSync(join(out, 'summary.md'), md);
  writeFileSync(join(out, 'summary.json'), JSON.stringify(summaries, null, 2) + '\n');
  writeFileSync(join(out, 'chart.svg'), compareChart(summaries));
  if (o.export) exportRuns(out, o.export, runs);
  return [...head, '', table].join('\n');
}

/**
 * Copies the report and the finished runs' records and logs from `out` to `to`, checkpoints
 * left behind (a run's weights are megabytes to gigabytes; its records a few hundred kB). The
 * copy keeps each run's state.json, so a comparison given it as --out counts those runs as done.
 */
function exportRuns(out: string, to: string, runs: readonly ComparedRun[]): void {
  mkdirSync(to, { recursive: true });
  for (const file of ['summary.md', 'summary.json', 'chart.svg', ...Object.values(PLAN_FILES)]) if (existsSync(join(out, file))) copyFileSync(join(out, file), join(to, file));
  for (const { method, seed } of runs) {
    const [from, dest] = [runDir(out, method, seed), runDir(to, method, seed)];
    mkdirSync(dest, { recursive: true });
    for (const file of Object.values(RUN_FILES)) if (existsSync(join(from, file))) copyFileSync(join(from, file), join(dest, file));
    if (existsSync(`${from}.log`)) copyFileSync(`${from}.log`, `${dest}.log`);
  }
}

/** The evolve a run spawns: the bundle beside this one where compare runs as a bundle (the GPU kit's), else the source through tsx. */
const bundledEvolve = join(dirname(fileURLToPath(import.meta.url)), 'evolve.mjs');
const EVOLVE = existsSync(bundledEvolve) ? [bundledEvolve] : ['--import', 'tsx', 'src/cli/evolve.ts'];

/** Runs one evolve to its end (or resumes it), its output prefixed on the console and kept in a log. */
function evolve(args: string[], prefix: string, log: string): Promise<number> {
  return new Promise((resolve, reject) => {
    // Node itself, not through npx: a Ctrl-C reaches the run once, and it stops cleanly (npm's wrapper would end it at once).
    const child = spawn(process.execPath, [...EVOLVE, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
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

/** The options a pilot fixes itself: its methods, its baseline, and no primary or pilot of its own. */
const NOT_WITH_PILOT = ['methods', 'baseline', 'primary', 'pilot-record'] as const;

/**
 * What this call runs, and the records named before the runs: the pilot's (OUT/pilot.json),
 * or the comparison's plan (OUT/plan.json) and the pilot it states. Written here, before any
 * run, where absent; checked against what is given where present.
 */
export async function prepare(o: Options, given: ReadonlySet<string>): Promise<{ setup: Setup; plan: ComparisonPlan | null; pilot: StatedPilot | null }> {
  const seedLevelList = await fileLevels(o.seeds);
  const levels = await givenLevels(o, seedLevelList);
  const beyond = async () => (await fileLevels(o.validation)).filter((l) => !seedLevelList.includes(l));
  const seedRange = (from: number) => Array.from({ length: o.repeats }, (_, k) => from + k);
  if (o.pilot) {
    const bad = NOT_WITH_PILOT.find((name) => given.has(name));
    if (bad) throw new UsageError(`--${bad}: not with --pilot (a pilot runs ${PILOT_METHODS.join(' and ')} and reports ${CEILING.name} − rlvr)`);
    const out = given.has('out') ? o.out : 'runs/pilot';
    const seeds = seedRange(PILOT_SEED_OFFSET);
    const recorded = readJson<PilotRecord>(join(out, PLAN_FILES.pilot));
    if (!recorded && o['report-only']) throw new UsageError(`--report-only: no pilot in ${out} (its ${PLAN_FILES.pilot} is written when its runs start)`);
    const named = recorded ? keepNamed(levels, recorded.levels, `the pilot in ${out}`) : (levels ?? (await beyond()));
    const record: PilotRecord = {
      kind: 'pilot', levels: named, bar: PILOT_BAR.text, model: o.model, steps: o.steps, seeds, methods: [...PILOT_METHODS],
      seedProblems: o.seeds, ceilingSeeds: o['ceiling-seeds'], validation: o.validation, validationLimit: o['validation-limit'], resamples: o.resamples,
      startedAt: recorded?.startedAt ?? new Date().toISOString(), result: recorded?.result ?? null,
    };
    mkdirSync(out, { recursive: true });
    // Written before the first run: the levels are named before any result, and a pilot that fails stays on record.
    writeJson(join(out, PLAN_FILES.pilot), record);
    return { setup: { out, methods: PILOT_METHODS, seeds, levels: named }, plan: null, pilot: { dir: out, record } };
  }
  // The shipped ceiling's seeds are the shipped seeds and harder ones: other seeds need a ceiling of their own.
  const ceilingFits = !given.has('seeds') || given.has('ceiling-seeds');
  const methods = o.methods.length ? o.methods : [...COMPARED_METHODS, ...(ceilingFits ? [CEILING.name] : [])];
  if (methods.includes(CEILING.name) && !ceilingFits) throw new UsageError(`--methods ${CEILING.name}: its seeds (--ceiling-seeds, default ${SHIPPED_SPLITS.ceiling.file}) extend the shipped seeds, not ${o.seeds}: give --ceiling-seeds too`);
  if (new Set(methods).size !== methods.length) throw new UsageError('--methods: a method given twice');
  const primary = o.primary === undefined ? undefined : parsePrimary(o.primary, methods);
  if (typeof primary === 'string') throw new UsageError(primary);
  const seeds = seedRange(0);
  const planFile = join(o.out, PLAN_FILES.plan);
  const recorded = readJson<ComparisonPlan>(planFile);
  if (recorded) checkPlan(recorded, primary && primaryName(primary), o.out);
  else if (primary && o['report-only']) throw new UsageError(`--primary ${o.primary}: a primary is named with a comparison's first command, before its runs (${o.out} has no ${PLAN_FILES.plan})`);
  const pilotDir = o['pilot-record'] ?? recorded?.pilot?.dir;
  const pilotRecord = pilotDir ? readPilot(pilotDir, { model: o.model, seeds, levels: levels ?? recorded?.levels ?? null }) : null;
  const named = recorded ? keepNamed(levels, recorded.levels, `the comparison in ${o.out}`) : (levels ?? pilotRecord?.levels ?? (await beyond()));
  const setup = { out: o.out, methods, seeds, levels: named };
  const pilot = pilotRecord && { dir: pilotDir!, record: pilotRecord };
  if (recorded || o['report-only']) return { setup, plan: recorded, pilot };
  mkdirSync(o.out, { recursive: true });
  // Runs already in the folder when the plan is first written: its primary was not named before them, and the report says so.
  const runsBefore = methods.reduce((n, m) => n + seeds.filter((s) => existsSync(join(runDir(o.out, m, s), RUN_FILES.state))).length, 0);
  const plan: ComparisonPlan = {
    kind: 'comparison', primary: primary ? primaryName(primary) : null, levels: named,
    pilot: pilotRecord && pilotDir ? { dir: pilotDir, clears: pilotRecord.result!.clears, reason: pilotRecord.result!.reason, levels: pilotRecord.levels, seeds: pilotRecord.seeds } : null,
    methods: [...methods], seeds, steps: o.steps, model: o.model, resamples: o.resamples, recordedAt: new Date().toISOString(), runsBefore,
  };
  writeJson(planFile, plan);
  return { setup, plan, pilot };
}

async function main(o: Options, given: ReadonlySet<string>): Promise<void> {
  const { setup, plan, pilot } = await prepare(o, given);
  const { out, methods, seeds } = setup;
  if (o.export && resolve(o.export) === resolve(out)) throw new UsageError(`--export ${o.export}: the comparison's own folder (--out): give another`);
  mkdirSync(out, { recursive: true });
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
    // Every (seed, method) in the order one job would run them; --jobs N runs N at once.
    const queue = seeds.flatMap((seed) => methods.map((method) => ({ seed, method })));
    let failed: Error | null = null;
    // One report at a time: runs that end together must not write the report's files at once.
    let reported = Promise.resolve();
    const job = async (): Promise<void> => {
      for (let next = queue.shift(); next && !stopping && !failed; next = queue.shift()) {
        const { method, seed } = next;
        const dir = runDir(out, method, seed);
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
          mkdirSync(join(out, method), { recursive: true });
          // Without --templates each run takes the prompts the checkpoint records, as evolve does.
          // The ceiling is RLVR on its own seeds; every other entry is its method on --seeds.
          const [evolveMethod, seedFile] = method === CEILING.name ? [CEILING.method, o['ceiling-seeds']] : [method, o.seeds];
          args = ['--model', o.model, ...(o.templates ? ['--templates', o.templates] : []), '--method', evolveMethod, '--seeds', seedFile, '--seed', String(seed), '--steps', String(o.steps), '--out', dir, ...common];
        }
        const code = await evolve(args, label, `${dir}.log`);
        // Ctrl-C reaches the run too: whatever it exited with then, the comparison stops as asked (saved runs resume).
        if (stopping) return;
        if (code !== 0) {
          failed = new Error(`${label} stopped with exit code ${code}: see ${dir}.log`);
          return;
        }
        await (reported = reported.then(async () => void (await report(o, setup, plan, pilot))));
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.jobs, queue.length) }, job));
    if (failed) throw failed;
  }
  const text = await report(o, setup, plan, pilot);
  if (!text) {
    console.log(`no run in ${out} has made its ${o.steps} steps yet`);
    return;
  }
  console.log(text);
  console.log(`report in ${join(out, 'summary.md')}, ${join(out, 'chart.svg')}, ${join(out, 'summary.json')}${o.pilot ? `; the pilot's record in ${join(out, PLAN_FILES.pilot)}` : ''}`);
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(compareCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
