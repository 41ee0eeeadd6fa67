/**
 * The loop's validators over src/verify: math answers judged by equivalence, curriculum
 * problems written by the Challenger checked by evaluating their expression (the answer
 * the Challenger claims must equal it), code through a sandbox runner when one is given.
 */
import { answerStatement } from '../data/curriculum';
import type { MathProblem, Problem } from '../data/problem';
import { extractAnswer, judgeMath, normaliseAnswer } from '../verify/math';
import type { Validators } from './loop';

/** Runs a code answer against a code problem's tests: the pass fraction. */
export type CodeRunner = (problem: Extract<Problem, { kind: 'code' }>, response: string) => Promise<number>;

export function createValidators(runCode?: CodeRunner): Validators {
  return {
    async judge(problem, response) {
      if (problem.kind === 'math') return judgeMath(response, problem.answer, { lastNumber: false }).correct ? 1 : 0;
      if (!runCode) throw new Error(`problem ${problem.id} is code, and this run has no code sandbox`);
      return runCode(problem, response);
    },
    async propose(fields, kind, id) {
      if (kind !== 'math') return { unusable: 'only math problems can be proposed in this run' };
      const statement = fields.question?.trim();
      const claimed = fields.answer?.trim();
      if (!statement) return { unusable: 'empty question' };
      if (!claimed) return { unusable: 'empty answer' };
      const answer = extractAnswer(`<answer>${claimed}</answer>`, { lastNumber: false });
      if (answer === null || !normaliseAnswer(answer)) return { unusable: `the answer "${claimed.slice(0, 40)}" does not parse` };
      const base = { id, source: 'challenger', statement, raw: { question: statement, answer } as Record<string, unknown> };
      const curriculum = answerStatement(statement);
      if ('error' in curriculum) {
        // Outside the curriculum's styles nothing recomputes the answer: it must at least parse.
        return curriculum.error === 'not in a curriculum style'
          ? { problem: { ...base, format: 'qa', kind: 'math', answer } satisfies MathProblem }
          : { unusable: curriculum.error };
      }
      if (!judgeMath(`<answer>${answer}</answer>`, curriculum.answer, { lastNumber: false }).correct) {
        return { unusable: `claims ${answer}, but ${curriculum.expression} = ${curriculum.answer}` };
      }
      const raw = { ...base.raw, expression: curriculum.expression, level: curriculum.level };
      return { problem: { ...base, raw, format: 'curriculum', kind: 'math', answer: curriculum.answer, expression: curriculum.expression, level: curriculum.level } satisfies MathProblem };
    },
  };
}
