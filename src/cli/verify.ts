/**
 * Checks code samples in the Python sandbox, in the format of HumanEval's
 * evaluate_functional_correctness:
 *   npm run verify -- --problems P.jsonl --samples S.jsonl
 * Problems are HumanEval / MBPP / MBPP+ records; each sample is {"task_id", "completion"}.
 * Prints each sample back, in the samples' order, with its fields and `result` and `passed`
 * added (as evaluate_functional_correctness writes `<samples>_results.jsonl`; `--out` writes
 * them to a file too), then pass@k for every k the samples per task allow (the unbiased
 * estimator), the counts per verdict and the throughput. `--canonical` checks every problem's
 * own canonical solution instead.
 */
import { writeFileSync } from 'node:fs';
import { readProblemFile, fileChunks } from '../data/nodeFile';
import { readJsonl } from '../data/jsonl';
import type { CodeProblem } from '../data/problem';
import { CodeVerifier } from '../verify/python/codeVerifier';
import { NodeSandboxPool } from '../verify/python/nodePool';
import { DEFAULT_LIMITS, type CodeVerdict, type VerdictStatus } from '../verify/python/verdict';
import { passAtK, reportedKs } from '../util/stats';
import { isMain, runCli, UsageError, type OptionValues } from './options';

export const verifyCli = {
  name: 'verify',
  summary: 'Runs code samples against their problems’ tests in the Python sandbox (each sample’s result in the samples’ order, pass@k).',
  options: {
    problems: { type: 'string', arg: 'FILE', exists: 'file', required: true, help: 'HumanEval / MBPP / MBPP+ problems (JSONL)' },
    samples: { type: 'string', arg: 'FILE', exists: 'file', help: 'samples: one {"task_id", "completion"} per line' },
    canonical: { type: 'flag', help: 'check each problem’s canonical solution instead of samples' },
    timeout: { type: 'int', min: 100, max: 600_000, default: DEFAULT_LIMITS.timeoutMs, arg: 'MS', help: 'time per program and its tests' },
    memory: { type: 'int', min: 64, max: 4096, default: DEFAULT_LIMITS.memoryBytes / 2 ** 20, arg: 'MIB', help: 'wasm memory per sandbox' },
    pool: { type: 'int', min: 1, max: 64, default: 2, help: 'warm sandbox processes' },
    out: { type: 'string', arg: 'FILE', help: 'also write the samples with their results there (JSONL, in the samples’ order)' },
    quiet: { type: 'flag', help: 'print only the summary' },
  },
  notes: [
    'example: npm run verify -- --problems data/seeds/humaneval-87.jsonl --samples samples.jsonl',
    'example: npm run verify -- --problems data/seeds/mbppplus-109.jsonl --canonical',
  ],
} as const;

interface Sample {
  task_id: string;
  completion: string;
  /** The sample's line in the samples file (none for a canonical solution). */
  line?: number;
  /** Every field of the sample as given, written back beside its result. */
  fields: Record<string, unknown>;
}

async function readSamples(file: string, known: Map<string, CodeProblem>): Promise<Sample[]> {
  const samples: Sample[] = [];
  for await (const ev of readJsonl(fileChunks(file))) {
    if ('refused' in ev) throw new Error(`${file}: ${ev.refused}`);
    if ('error' in ev) {
      console.warn(`${file}:${ev.line}: skipped: ${ev.error}`);
      continue;
    }
    const { task_id, completion } = ev.value;
    if (typeof task_id !== 'string' && typeof task_id !== 'number') console.warn(`${file}:${ev.line}: skipped: no "task_id"`);
    else if (typeof completion !== 'string') console.warn(`${file}:${ev.line}: skipped: no "completion" text`);
    else if (!known.has(String(task_id))) console.warn(`${file}:${ev.line}: skipped: task_id ${task_id} is not among the problems`);
    else samples.push({ task_id: String(task_id), completion, line: ev.line, fields: ev.value });
  }
  return samples;
}

async function main(o: OptionValues<typeof verifyCli.options>): Promise<void> {
  if (o.canonical === Boolean(o.samples)) throw new UsageError('give either --samples FILE or --canonical');
  const report = await readProblemFile(o.problems);
  if (report.refused) throw new Error(`${o.problems}: ${report.refused}`);
  for (const e of report.errors.slice(0, 20)) console.warn(`${o.problems}:${e.line}: skipped: ${e.reason}`);
  const problems = new Map(report.problems.filter((p): p is CodeProblem => p.kind === 'code').map((p) => [p.id, p]));
  if (!problems.size) throw new Error(`no code problems in ${o.problems}`);
  const samples = o.samples
    ? await readSamples(o.samples, problems)
    : [...problems.values()].filter((p) => p.solution).map((p) => ({ task_id: p.id, completion: p.solution!, fields: { task_id: p.id, completion: p.solution! } }));
  if (!samples.length) throw new Error('no samples to check');

  const pool = new NodeSandboxPool({ size: o.pool, timeoutMs: o.timeout, memoryBytes: o.memory * 2 ** 20 });
  try {
    await pool.warm();
    const verifier = new CodeVerifier(pool);
    const t0 = performance.now();
    // Verdicts arrive as sandboxes finish; each is printed once every sample before it has been.
    const lines: (string | undefined)[] = new Array(samples.length);
    let printed = 0;
    const verdicts = await Promise.all(
      samples.map(async (s, i) => {
        const v = await verifier.verify(problems.get(s.task_id)!, s.completion);
        lines[i] = JSON.stringify(resultRecord(s, v));
        for (; printed < samples.length && lines[printed] !== undefined; printed++) if (!o.quiet) console.log(lines[printed]);
        return { sample: s, verdict: v };
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    if (o.out) writeFileSync(o.out, lines.join('\n') + '\n');
    console.log(summary(verdicts, seconds, pool));
  } finally {
    pool.close();
  }
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** A sample with its verdict: its own fields, then HumanEval's `result` and `passed`, then ours. */
function resultRecord(s: Sample, v: CodeVerdict): Record<string, unknown> {
  const result = v.status === 'pass' ? 'passed' : v.status === 'timeout' ? 'timed out' : `failed: ${v.detail ?? v.status}`;
  return { ...s.fields, ...(s.line !== undefined ? { line: s.line } : {}), result, passed: v.status === 'pass', status: v.status, fraction: round(v.fraction) };
}

/** pass@k (the mean over tasks), counts per verdict, throughput. */
function summary(verdicts: { sample: Sample; verdict: CodeVerdict }[], seconds: number, pool: NodeSandboxPool): string {
  const byTask = new Map<string, { n: number; c: number }>();
  const counts: Record<VerdictStatus, number> = { pass: 0, fail: 0, error: 0, timeout: 0, killed: 0 };
  for (const { sample, verdict } of verdicts) {
    const t = byTask.get(sample.task_id) ?? { n: 0, c: 0 };
    t.n++;
    if (verdict.status === 'pass') t.c++;
    byTask.set(sample.task_id, t);
    counts[verdict.status]++;
  }
  const tasks = [...byTask.values()];
  const passAt = Object.fromEntries(
    reportedKs(Math.min(...tasks.map((t) => t.n))).map((k) => [`pass@${k}`, round(tasks.reduce((s, t) => s + passAtK(t.n, t.c, k), 0) / tasks.length)]),
  );
  return JSON.stringify({
    ...passAt,
    samples: verdicts.length,
    ...counts,
    seconds: round(seconds),
    verdictsPerSecond: round(verdicts.length / seconds),
    pool: { processes: pool.size, isolation: pool.isolation, started: pool.started },
  });
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(verifyCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
