/**
 * The loop's validators over src/verify: math answers judged by equivalence, curriculum
 * problems written by the Challenger checked by evaluating their expression (the answer
 * the Challenger claims must equal it), code run in a sandbox: a Solver's program against the
 * problem's tests, a Challenger's tests against its own reference solution.
 */
import { answerStatement } from '../data/curriculum';
import type { CodeProblem, MathProblem, Problem } from '../data/problem';
import { evaluateExpression } from '../verify/arithmetic';
import { extractAnswer, judgeMath, normaliseAnswer } from '../verify/math';
import type { CodeVerdict } from '../verify/python/verdict';
import type { Validators } from './loopContract';

/** An integer expression closing a statement, as every curriculum style ends: `… 4+3=?`. */
const TRAILING_EXPRESSION = /(?:^|[^\w.])([\d+\-*/() ]*\d[\d+\-*/() ]*)=\s*\?\s*$/;

/** What the validators need of a sandbox (src/verify/python's CodeVerifier). */
export interface CodeChecks {
  verify(problem: CodeProblem, program: string): Promise<CodeVerdict>;
  verifyAsserts(program: string, asserts: string): Promise<CodeVerdict>;
}

/** The program in a response: the `<answer>` content, else the whole text, without a Markdown fence around it. */
export function programOf(response: string): string {
  const open = response.indexOf('<answer>');
  const close = open >= 0 ? response.indexOf('</answer>', open) : -1;
  const body = open >= 0 ? response.slice(open + 8, close >= 0 ? close : undefined) : response;
  const fenced = /^\s*```[\w+-]*[ \t]*\n([\s\S]*?)\n?```\s*$/.exec(body);
  return fenced ? fenced[1]! : body;
}

/** The function a solution defines first: the problem's entry point. */
function entryPoint(solution: string): string | null {
  return /^def\s+([A-Za-z_]\w*)\s*\(/m.exec(solution)?.[1] ?? null;
}

async function proposeCode(fields: Readonly<Record<string, string>>, id: string, code: CodeChecks | undefined): Promise<{ problem: Problem } | { unusable: string }> {
  if (!code) return { unusable: 'this run has no code sandbox to check code problems' };
  const statement = fields.question?.trim();
  const solution = fields.solution?.trim();
  if (!statement) return { unusable: 'empty question' };
  if (!solution) return { unusable: 'no reference solution' };
  const entry = entryPoint(solution);
  if (!entry) return { unusable: 'the solution defines no function' };
  const asserts = (fields.tests ?? '').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('assert'));
  if (!asserts.length) return { unusable: 'no assert statement in the tests' };
  const verdict = await code.verifyAsserts(solution, asserts.join('\n'));
  if (verdict.status !== 'pass') return { unusable: `the tests fail on the reference solution (${verdict.status}${verdict.detail ? `: ${verdict.detail.slice(0, 80)}` : ''})` };
  const problem: CodeProblem = {
    id, source: 'challenger', format: 'mbpp', kind: 'code', statement, solution,
    tests: { style: 'asserts', entryPoint: entry, asserts },
    raw: { text: statement, code: solution, test_list: asserts },
  };
  return { problem };
}

/**
 * A Challenger's output as a problem taken on trust, nothing computed or run: what a
 * validator-free method (MAE) banks when its Judge's quality score admits it. It must still
 * be a problem of its kind — a question, and an answer (math) or a solution defining a
 * function with asserts (code) — so that the Solver's outputs on it can be scored at all.
 */
export function unverifiedProblem(fields: Readonly<Record<string, string>>, kind: Problem['kind'], id: string): { problem: Problem } | { unusable: string } {
  const statement = fields.question?.trim();
  if (!statement) return { unusable: 'empty question' };
  if (kind === 'math') {
    const answer = fields.answer?.trim();
    if (!answer) return { unusable: 'empty answer' };
    return { problem: { id, source: 'challenger', format: 'qa', kind: 'math', statement, answer, raw: { question: statement, answer } } satisfies MathProblem };
  }
  const solution = fields.solution?.trim() ?? '';
  const entry = entryPoint(solution);
  const asserts = (fields.tests ?? '').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('assert'));
  if (!entry || !asserts.length) return { unusable: !entry ? 'the solution defines no function' : 'no assert statement in the tests' };
  return { problem: { id, source: 'challenger', format: 'mbpp', kind: 'code', statement, solution, tests: { style: 'asserts', entryPoint: entry, asserts }, raw: { text: statement, code: solution, test_list: asserts } } satisfies CodeProblem };
}

/**
 * The answer the environment computes for a statement it can read: a curriculum statement
 * (with its level), or one ending in an expression ("…: 4+3=?"). Null when it reads neither;
 * an error when it reads one that does not evaluate.
 */
export function computedAnswer(statement: string): { answer: string; expression: string; level?: number } | { error: string } | null {
  const curriculum = answerStatement(statement);
  if (!('error' in curriculum)) return { answer: curriculum.answer, expression: curriculum.expression, level: curriculum.level };
  if (curriculum.error !== 'not in a curriculum style') return { error: curriculum.error };
  const tail = TRAILING_EXPRESSION.exec(statement);
  if (!tail) return null;
  const expression = tail[1]!.trim();
  const value = evaluateExpression(expression);
  return 'error' in value ? { error: `${expression}: ${value.error}` } : { answer: String(value.value), expression };
}

/** Integer expressions (or lone numbers) in a plan: `Compute (3+4)*2.` holds `(3+4)*2`. */
const PLAN_EXPRESSION = /[\d(](?:[\d+\-*/() ×÷]*[\d)])?/g;

/** Whether the environment can check a plan for this problem at all: math with a reference answer. */
export function plansCheckable(problem: Problem): problem is MathProblem & { answer: string } {
  return problem.kind === 'math' && problem.answer !== undefined;
}

/**
 * Whether a plan computes its problem's answer, as far as the environment can tell: the last
 * integer expression in the plan, evaluated, against the problem's reference answer. Null when
 * it cannot tell: not a math problem with a reference, or no expression in the plan that
 * evaluates. A plan that computes the right value another way counts as right.
 */
export function planVerdict(problem: Problem, plan: string): boolean | null {
  if (!plansCheckable(problem)) return null;
  const expression = plan.match(PLAN_EXPRESSION)?.at(-1);
  if (!expression) return null;
  const value = evaluateExpression(expression);
  if ('error' in value) return null;
  return judgeMath(`<answer>${value.value}</answer>`, problem.answer, { lastNumber: false }).correct;
}

export function createValidators(code?: CodeChecks): Validators {
  return {
    async judge(problem, response) {
      if (problem.kind === 'math') {
        if (problem.answer === undefined) throw new Error(`problem ${problem.id} has no answer to check against (only a validator-free method trains on such problems)`);
        return judgeMath(response, problem.answer, { lastNumber: false }).correct ? 1 : 0;
      }
      if (!code) throw new Error(`problem ${problem.id} is code, and this run has no code sandbox`);
      return (await code.verify(problem, programOf(response))).fraction;
    },
    async propose(fields, kind, id, answers = 'claimed') {
      if (kind === 'code') return proposeCode(fields, id, code);
      const statement = fields.question?.trim();
      const claimed = fields.answer?.trim();
      if (!statement) return { unusable: 'empty question' };
      const computed = computedAnswer(statement);
      if (computed && 'error' in computed) return { unusable: computed.error };
      // What the environment read from the statement: its expression, and its level in a curriculum style.
      const read = computed ? { expression: computed.expression, ...(computed.level ? { level: computed.level } : {}) } : {};
      const problem = (answer: string): MathProblem => ({
        id, source: 'challenger', statement, format: 'level' in read ? 'curriculum' : 'qa', kind: 'math', answer, ...read, raw: { question: statement, answer, ...read },
      });
      if (answers === 'verified' && !('level' in read)) return { unusable: 'not a statement the environment reads whole (verified problems only)' };
      // The environment's answer, not the Challenger's claim (AZR's executor computing a program's output).
      if (computed && answers !== 'claimed') return { problem: problem(computed.answer) };
      if (!claimed) return { unusable: 'empty answer' };
      const answer = extractAnswer(`<answer>${claimed}</answer>`, { lastNumber: false });
      if (answer === null || !normaliseAnswer(answer)) return { unusable: `the answer "${claimed.slice(0, 40)}" does not parse` };
      // Otherwise nothing recomputes the answer: it must at least parse.
      if (!computed) return { problem: problem(answer) };
      if (!judgeMath(`<answer>${answer}</answer>`, computed.answer, { lastNumber: false }).correct) return { unusable: `claims ${answer}, but ${computed.expression} = ${computed.answer}` };
      return { problem: problem(computed.answer) };
    },
  };
}
