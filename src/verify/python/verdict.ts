/**
 * Code verdicts, shared by the Node pool and the browser Worker: how a problem and a
 * candidate become a sandbox job, and how the harness's report becomes a verdict. MBPP+
 * outputs are compared here, outside the interpreter that ran the candidate, so a program
 * cannot read the values it is compared with.
 */
import type { DriverResult } from './driver.mjs';

/** How a code problem is checked. */
export type CodeTests =
  /** HumanEval: `test` defines `check(candidate)`, called with the entry point. */
  | { style: 'check'; entryPoint: string; test: string }
  /** MBPP and model-written tests: assert statements, each counted on its own. */
  | { style: 'asserts'; entryPoint: string; asserts: string[]; setup?: string }
  /** MBPP+: each input's output compared with the canonical solution's (floats within `atol`). */
  | { style: 'io'; entryPoint: string; inputs: unknown[][]; atol: number };

/** What a verdict reads of a code problem (the seed importer's CodeProblem is one). */
export interface CodeTask {
  id: string;
  format: string;
  statement: string;
  /** The canonical solution, when the record has one. */
  solution?: string;
  tests: CodeTests;
}

export type VerdictStatus = 'pass' | 'fail' | 'error' | 'timeout' | 'killed';

export interface CodeVerdict {
  status: VerdictStatus;
  /** Checks passed and counted: asserts, or MBPP+ inputs. */
  passed: number;
  total: number;
  /** passed / total (0 when nothing was counted). */
  fraction: number;
  /** The failing assertion, the exception, or why the program was stopped. */
  detail?: string;
  /** The program's output, cut to the kept size. */
  output?: string;
  ms: number;
}

export interface SandboxLimits {
  /** Time for one program and its tests. */
  timeoutMs: number;
  memoryBytes: number;
  /** Output past this kills the program. */
  outputBytes: number;
}

export const DEFAULT_LIMITS: SandboxLimits = { timeoutMs: 5000, memoryBytes: 512 * 2 ** 20, outputBytes: 1 << 20 };
/** Output kept in a verdict. */
export const KEPT_OUTPUT = 2000;

/** What the harness runs: a program and one way of testing it (see harness.py). */
export interface SandboxJob {
  program: string;
  style: CodeTests['style'];
  entryPoint: string;
  test?: string;
  asserts?: string[];
  setup?: string;
  inputs?: unknown[][];
}

/**
 * The program a completion stands for: HumanEval completions continue the prompt (a function
 * body); a completion that defines the entry point itself is the whole program.
 */
export function programFor(problem: CodeTask, completion: string): string {
  const definesEntry = new RegExp(`^\\s*def\\s+${problem.tests.entryPoint}\\s*\\(`, 'm').test(completion);
  return problem.format === 'humaneval' && !definesEntry ? problem.statement + completion : completion;
}

export function jobFor(problem: CodeTask, program: string): SandboxJob {
  const t = problem.tests;
  const base = { program, entryPoint: t.entryPoint };
  if (t.style === 'check') return { ...base, style: 'check', test: t.test };
  if (t.style === 'asserts') return { ...base, style: 'asserts', asserts: t.asserts, setup: t.setup };
  return { ...base, style: 'io', inputs: t.inputs };
}

/**
 * The job as JSON for Python: non-finite numbers (MBPP+ inputs hold inf and NaN) are written
 * as Python's json reads them, where JSON.stringify would write null.
 */
export function jobJson(job: SandboxJob): string {
  const marked = JSON.stringify(job, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? `\u0000${v}` : v));
  return marked.replace(/"\\u0000(-?Infinity|NaN)"/g, '$1');
}

function fraction(passed: number, total: number): number {
  return total > 0 ? passed / total : 0;
}

/** A harness report (not an MBPP+ output list) as a verdict. */
export function verdictOf(r: DriverResult, ms: number): CodeVerdict {
  const status: VerdictStatus = r.status === 'outputs' ? 'error' : r.status;
  return { status, passed: r.passed, total: r.total, fraction: fraction(r.passed, r.total), detail: r.detail, output: r.output, ms };
}

type Encoded = unknown;

function isTagged(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Equality of outputs encoded by the harness; floats within `atol` (and a relative 1e-7, as EvalPlus). */
export function outputsEqual(a: Encoded, b: Encoded, atol: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isInteger(a) && Number.isInteger(b)) return a === b;
    return Math.abs(a - b) <= Math.max(atol, 1e-6) + 1e-7 * Math.abs(b);
  }
  if (isTagged(a) && isTagged(b)) {
    const [ka] = Object.keys(a);
    const [kb] = Object.keys(b);
    if (ka !== kb || ka === undefined) return false;
    const va = a[ka];
    const vb = b[kb!];
    if (Array.isArray(va) && Array.isArray(vb)) return va.length === vb.length && va.every((x, i) => outputsEqual(x, vb[i], atol));
    return va === vb;
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => outputsEqual(x, b[i], atol));
  return a === b;
}

/**
 * MBPP+: the candidate's outputs against the canonical solution's, input by input. Inputs the
 * canonical solution itself raises on are not counted: JSON cannot say which lists were
 * tuples, and a few solutions need tuples.
 */
export function compareOutputs(expected: DriverResult, actual: DriverResult, inputs: unknown[][], atol: number, ms: number): CodeVerdict {
  if (actual.status !== 'outputs') return verdictOf(actual, ms);
  if (expected.status !== 'outputs' || !expected.outputs) return { ...verdictOf(expected, ms), status: 'error', detail: `the canonical solution failed: ${expected.detail}` };
  const got = actual.outputs ?? [];
  let passed = 0;
  let total = 0;
  let detail: string | undefined;
  expected.outputs.forEach((want, i) => {
    if (!('value' in want)) return;
    total++;
    const have = got[i];
    if (have && 'value' in have && outputsEqual(have.value, want.value, atol)) passed++;
    else {
      const shown = have && 'error' in have ? have.error : `got ${JSON.stringify(have && 'value' in have ? have.value : null).slice(0, 200)}, expected ${JSON.stringify(want.value).slice(0, 200)}`;
      detail ??= `input ${JSON.stringify(inputs[i]).slice(0, 200)}: ${shown}`;
    }
  });
  if (total === 0) return { status: 'error', passed: 0, total: 0, fraction: 0, detail: 'the canonical solution raises on every input', output: actual.output, ms };
  return { status: passed === total ? 'pass' : 'fail', passed, total, fraction: fraction(passed, total), detail, output: actual.output, ms };
}
