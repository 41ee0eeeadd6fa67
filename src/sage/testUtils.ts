/** Helpers for the loop's tests. Not part of the app bundle. */
import type { MathProblem } from '../data/problem';
import type { SftExample } from '../train/sft';
import type { PolicyStepResult, Rollout } from '../train/policy';
import type { Completion, GenerationRequest, Validators } from './loopContract';
import { parseOutput } from './parse';
import type { RunModel } from './run';
import { OUTPUTS } from './templates';

const bytes = (s: string) => Array.from(new TextEncoder().encode(s));

/**
 * A scripted policy for the orchestration: each role answers in its format, the Solver
 * right on sums and wrong on differences, the Challenger writes sums numbered by prompt, and
 * a list of references is continued with products as an arithmetic corpus writes them.
 * It checks the loop's bookkeeping, not learning (the Dawn test of the loop does that).
 */
export class ScriptedModel implements RunModel {
  requests: GenerationRequest[] = [];
  trained: Rollout[][] = [];

  async generate(r: GenerationRequest): Promise<Completion[]> {
    this.requests.push(r);
    return r.prompts.map((prompt, i) => {
      let text: string;
      // Continuing a list of references (the own Challenger warm-up): a product in their style, the first one unreadable.
      if (r.stop.includes('\n')) text = i === 0 ? 'garbage' : `${i}*${i}=? The answer is ${i * i}.`;
      else if (prompt.includes('harder')) text = i === 0 ? 'garbage' : `<question>${i}+${i + 10}=?</question><answer>${2 * i + 10}</answer>`;
      else if (prompt.includes('Rate')) text = '<score>9</score>';
      else if (prompt.includes('<plan>')) text = '<plan>Compute it.</plan>';
      else {
        const m = /(\d+)([+-])(\d+)=\?/.exec(prompt);
        text = m ? `<answer>${m[2] === '+' ? Number(m[1]) + Number(m[3]) : 0}</answer>` : '<answer>?</answer>';
      }
      return { text, promptIds: [1, ...bytes(prompt)], completionIds: bytes(text), modelLogprobs: bytes(text).map(() => -1) };
    });
  }

  warmups: SftExample[][] = [];
  checkpoints: string[] = [];

  async warmup(examples: SftExample[], steps: number, onStep: (step: number, loss: number) => void): Promise<void> {
    this.warmups.push(examples);
    for (let i = 1; i <= steps; i++) onStep(i, 1 / i);
  }

  async saveCheckpoint(tag: string): Promise<void> {
    this.checkpoints.push(tag);
  }

  async train(rollouts: Rollout[]): Promise<PolicyStepResult> {
    this.trained.push(rollouts);
    const tokens = rollouts.reduce((n, r) => n + r.completionIds.length, 0);
    return { loss: 0, clipFraction: 0, approxKl: 0, referenceKl: 0, entropy: 1, tokens, gradNorm: 1, finite: true, tuned: 0 };
  }
}

export function math(id: string, statement: string, answer: string): MathProblem {
  return { id, source: 'seeds', format: 'curriculum', kind: 'math', statement, answer, raw: { question: statement, answer } };
}

export const validators: Validators = {
  async judge(problem, response) {
    const answer = parseOutput(response, OUTPUTS.solver).fields.answer;
    return problem.kind === 'math' && answer === problem.answer ? 1 : 0;
  },
  async propose(fields, kind, id) {
    if (!/^\d+$/.test(fields.answer ?? '')) return { unusable: 'the answer is not a number' };
    return { problem: math(id, fields.question!, fields.answer!) };
  },
};

