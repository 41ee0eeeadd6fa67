import { describe, expect, it } from 'vitest';
import type { Completion, GenerationRequest, LoopModel } from './loopContract';
import { DEFAULT_REWARDS } from './config';
import { criticProbe } from './criticData';
import { stratified } from './run';
import { math, validators } from './testUtils';
import { DEFAULT_TEMPLATES } from './templates';
import { EarlyStopping, ownAccuracy, validate } from './validation';

/**
 * A model whose Solver gets differences right only when shown a plan naming them; whose
 * Planner plans sums and differences; whose Critic scores a plan 9 when it names the
 * problem's expression and 2 otherwise, and a problem 9 when it ends in "=?" and 1 otherwise.
 */
class PlannedModel implements Pick<LoopModel, 'generate'> {
  requests: GenerationRequest[] = [];
  async generate(r: GenerationRequest): Promise<Completion[]> {
    this.requests.push(r);
    return r.prompts.map((prompt) => {
      const expr = /(\d+)([+-])(\d+)=\?/.exec(prompt);
      let text: string;
      if (prompt.includes('Rate the answer')) {
        // A Judge that computes: the answer's number against the problem's value.
        const given = /Answer: <answer>(-?\d+)<\/answer>/.exec(prompt)?.[1];
        const value = expr && (expr[2] === '+' ? Number(expr[1]) + Number(expr[3]) : Number(expr[1]) - Number(expr[3]));
        text = `<score>${given !== undefined && Number(given) === value ? 9 : 2}</score>`;
      } else if (prompt.includes('Rate the plan')) {
        const plan = /Plan: Compute (\S+)\./.exec(prompt)?.[1];
        text = `<score>${expr && plan === `${expr[1]}${expr[2]}${expr[3]}` ? 9 : 2}</score>`;
      } else if (prompt.includes('Rate its quality')) text = `<score>${/=\?\n/.test(prompt) ? 9 : 1}</score>`;
      else if (prompt.includes('<plan>')) text = expr ? `<plan>Compute ${expr[1]}${expr[2]}${expr[3]}.</plan>` : '<plan></plan>';
      else if (!expr) text = '<answer>?</answer>';
      else {
        const planned = prompt.includes(`Plan: Compute ${expr[1]}${expr[2]}${expr[3]}.`);
        const value = expr[2] === '+' ? Number(expr[1]) + Number(expr[3]) : planned ? Number(expr[1]) - Number(expr[3]) : 0;
        text = `<answer>${value}</answer>`;
      }
      return { text, promptIds: [1], completionIds: [2], modelLogprobs: [-1] };
    });
  }
}

const withExpr = (id: string, a: number, op: '+' | '-', b: number, level: number) => ({
  ...math(id, `Ann: ${a}${op}${b}=?`, String(op === '+' ? a + b : a - b)),
  expression: `${a}${op}${b}`,
  level,
});

describe('validation in the method’s own mode', () => {
  const problems = [withExpr('p1', 2, '+', 3, 1), withExpr('p2', 9, '-', 4, 2), withExpr('p3', 8, '-', 1, 2), withExpr('p4', 5, '+', 5, 1)];
  const base = { templates: DEFAULT_TEMPLATES, maxNewTokens: { solver: 16, planner: 12, critic: 4 }, step: 2, unparsableScore: 0.5 };

  it('plans, gates the plan by the Critic’s score and solves with it, beside the Solver alone', async () => {
    const model = new PlannedModel();
    const { result: v, outcomes } = await validate(model, validators, problems, { ...base, planned: { rewards: DEFAULT_REWARDS } });
    expect(v.accuracy).toBe(0.5);
    // Per problem and mode, what the tallies count: the Solver alone fails the differences, with plans it solves them.
    const [alone, own] = outcomes;
    expect(alone).toMatchObject({ step: 2, mode: 'solver' });
    expect(alone!.problems.map((p) => [p.id, p.verdict, p.answer])).toEqual([['p1', 1, '5'], ['p2', 0, '0'], ['p3', 0, '0'], ['p4', 1, '10']]);
    expect(own).toMatchObject({ step: 2, mode: 'planned' });
    expect(own!.problems.map((p) => [p.id, p.verdict, p.answer, p.planShown, p.level, p.source])).toEqual([
      ['p1', 1, '5', true, 1, 'seeds'], ['p2', 1, '5', true, 2, 'seeds'], ['p3', 1, '7', true, 2, 'seeds'], ['p4', 1, '10', true, 1, 'seeds'],
    ]);
    expect(own!.problems.filter((p) => p.verdict >= 1).length / problems.length).toBe(v.planned!.accuracy);
    expect(v.planned!.accuracy).toBe(1);
    expect(v.planned!.planShown).toBe(1);
    expect(v.planned!.perLevel['2']).toMatchObject({ correct: 2, total: 2 });
    expect(ownAccuracy(v)).toBe(1);
    // Greedy throughout, each role at its own token limit.
    expect(model.requests.every((r) => r.temperature === 0)).toBe(true);
    expect(model.requests.map((r) => r.maxNewTokens)).toEqual([16, 12, 4, 16]);
  });

  it('withholds a plan below the gate: the Solver then answers alone', async () => {
    const { result: v, outcomes } = await validate(new PlannedModel(), validators, problems, { ...base, planned: { rewards: { ...DEFAULT_REWARDS, beta: 0.95 } } });
    expect(outcomes[1]!.problems.every((p) => p.planShown === false)).toBe(true);
    expect(v.planned!.planShown).toBe(0);
    expect(v.planned!.accuracy).toBe(v.accuracy);
  });

  it('measures the Critic: AUC 1 for one that tells the pairs apart, 0.5 for one that scores all alike', async () => {
    const probe = criticProbe(stratified(problems, 4), () => 0.9);
    const { result: v } = await validate(new PlannedModel(), validators, problems, { ...base, criticProbe: probe });
    // With draws of 0.9 every corruption is noise and every wrong plan another problem's.
    expect(probe.problems.filter((x) => !x.real).every((x) => !x.statement.endsWith('=?'))).toBe(true);
    // Each math problem's answer right, and with a number changed.
    const own = (x: { problem: string }) => `<answer>${problems.find((p) => p.statement === x.problem)!.answer}</answer>`;
    expect(probe.answers.filter((x) => x.right)).toHaveLength(problems.length);
    expect(probe.answers.every((x) => (x.answer === own(x)) === x.right)).toBe(true);
    expect(v.critic).toEqual({ problemAuc: 1, planAuc: 1, answerAuc: 1, pairs: { problems: 4, plans: 4, answers: 4 } });
    const flat = new PlannedModel();
    flat.generate = async (r) => r.prompts.map(() => ({ text: r.stop.includes('</score>') ? '<score>9</score>' : '<answer>1</answer>', promptIds: [1], completionIds: [2], modelLogprobs: [-1] }));
    const { result: w } = await validate(flat, validators, problems, { ...base, criticProbe: probe });
    expect(w.critic).toMatchObject({ problemAuc: 0.5, planAuc: 0.5, answerAuc: 0.5 });
  });

  it('early stopping ranks by the method’s own mode', () => {
    const es = new EarlyStopping(3);
    const v = { step: 0, accuracy: 0.5, perSource: {}, perLevel: {} };
    expect(es.record({ ...v, planned: { ...v, accuracy: 0.3, planShown: 1 } })).toBe(true);
    expect(es.record({ ...v, accuracy: 0.2, planned: { ...v, accuracy: 0.4, planShown: 1 } })).toBe(true);
    expect(es.record({ ...v, accuracy: 0.9, planned: { ...v, accuracy: 0.35, planShown: 1 } })).toBe(false);
  });
});
