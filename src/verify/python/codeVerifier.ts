/**
 * Verdicts for code problems on any sandbox (a Node process pool, a browser Worker pool):
 * HumanEval check(candidate), MBPP assert lists, MBPP+ outputs against the canonical
 * solution's (run once per problem in the same sandbox, then cached), and model-written asserts.
 */
import type { DriverResult } from './driver.mjs';
import { compareOutputs, jobFor, programFor, verdictOf, type CodeTask, type CodeVerdict, type SandboxJob } from './verdict';

/** Runs one job in a sandbox instance and reports what the harness said, with the time it took. */
export interface SandboxRunner {
  run(job: SandboxJob): Promise<{ result: DriverResult; ms: number }>;
}

export class CodeVerifier {
  /** MBPP+ expected outputs by problem id: the canonical solution run once. */
  private readonly expected = new Map<string, Promise<DriverResult>>();

  constructor(private readonly sandbox: SandboxRunner) {}

  /** The verdict on a completion (a HumanEval function body, or a whole program). */
  async verify(problem: CodeTask, completion: string): Promise<CodeVerdict> {
    const job = jobFor(problem, programFor(problem, completion));
    const { result, ms } = await this.sandbox.run(job);
    if (problem.tests.style !== 'io') return verdictOf(result, ms);
    const expected = await this.expectedOutputs(problem);
    return compareOutputs(expected, result, problem.tests.inputs, problem.tests.atol, ms);
  }

  /** The verdict on a program against asserts a model wrote (every assert counted once). */
  async verifyAsserts(program: string, asserts: string): Promise<CodeVerdict> {
    const { result, ms } = await this.sandbox.run({ program, style: 'asserts', entryPoint: '', asserts: [asserts] });
    return verdictOf(result, ms);
  }

  private expectedOutputs(problem: CodeTask): Promise<DriverResult> {
    let p = this.expected.get(problem.id);
    if (!p) {
      if (!problem.solution) return Promise.resolve({ status: 'error', passed: 0, total: 0, detail: 'no canonical solution' });
      p = this.sandbox.run(jobFor(problem, programFor(problem, problem.solution))).then((r) => r.result);
      this.expected.set(problem.id, p);
    }
    return p;
  }
}
