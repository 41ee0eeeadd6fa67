import { describe, expect, it } from 'vitest';
import { generateSet } from '../data/curriculum';
import { recordToProblem, type Problem } from '../data/problem';
import { freshSeed } from '../gpu/testUtils';
import { rng } from '../util/random';
import { passAtK } from '../util/stats';
import type { Completion, GenerationRequest } from './loopContract';
import { firstNumber, perLevel, tally, validateForm, type SampledOutcome } from './sampledValidation';
import { COMPACT_TEMPLATES } from './templates';
import { createValidators } from './validators';

/** Curriculum problems of levels 1, 3 and 5, one per expression: each form's prompts are then distinct. */
function problems(seed: number): Problem[] {
  const seen = new Set<string>();
  const records = generateSet({ 1: 7, 3: 5, 5: 6 }, seed).filter((r) => !seen.has(r.expression) && seen.add(r.expression));
  return records.map((record, i) => {
    const d = recordToProblem(record as unknown as Record<string, unknown>, 'validation', `v${i}`);
    if (!('problem' in d)) throw new Error(d.error);
    return d.problem;
  });
}

/**
 * A model whose every answer is a coin flip: right with its problem's own chance (read from the
 * prompt), from a stream of its own per request seed and row, greedy right when the chance is
 * above one half. It records each request and what it answered, so that the tallies can be
 * recounted from what was generated.
 */
class CoinModel {
  requests: GenerationRequest[] = [];
  answered: { prompt: string; right: boolean; temperature: number }[] = [];
  constructor(
    private readonly chance: Map<string, number>,
    private readonly answerOf: Map<string, string>,
    private readonly corpus: boolean,
  ) {}
  async generate(r: GenerationRequest): Promise<Completion[]> {
    this.requests.push(r);
    return r.prompts.map((prompt, row) => {
      const p = this.chance.get(prompt)!;
      const right = r.temperature === 0 ? p > 0.5 : rng(r.seed * 100_003 + row)() < p;
      this.answered.push({ prompt, right, temperature: r.temperature });
      const value = right ? this.answerOf.get(prompt)! : `${Number(this.answerOf.get(prompt)!) + 1}`;
      const text = this.corpus ? ` ${value}. 3+4 = 7.` : `worked\n<answer>${value}</answer>`;
      return { text, promptIds: [], completionIds: [], modelLogprobs: [] };
    });
  }
}

describe('validation by form and by sampling', () => {
  for (const form of ['task', 'corpus'] as const) {
    it(`${form}: counts each problem's right samples of n, batches whole problems with a seed each, and tallies pass@k per level and pooled`, async () => {
      const seed = freshSeed();
      const random = rng(seed);
      const ps = problems(seed);
      const prompt = (p: Problem) => (form === 'task' ? `Solve: ${p.statement}` : `${(p as Problem & { kind: 'math' }).expression} =`);
      const templates = { ...COMPACT_TEMPLATES, solver: 'Solve: {{problem}}' };
      const chance = new Map(ps.map((p) => [prompt(p), random()]));
      const model = new CoinModel(chance, new Map(ps.map((p) => [prompt(p), (p as Problem & { kind: 'math' }).answer!])), form === 'corpus');
      const samples = 1 + Math.floor(random() * 6);
      const batchRows = samples * (1 + Math.floor(random() * 4));
      const r = await validateForm(model, createValidators(), ps, form, { templates, solverTokens: 40, samples, temperature: 0.7, seed, batchRows });

      // The prompts of the form, every problem once greedily and `samples` times sampled.
      expect(new Set(model.answered.map((a) => a.prompt))).toEqual(new Set(ps.map(prompt)));
      expect(model.requests.every((q) => q.prompts.length <= batchRows)).toBe(true);
      expect(model.requests.every((q) => q.maxNewTokens === (form === 'task' ? 40 : 8))).toBe(true);
      const sampled = model.requests.filter((q) => q.temperature > 0);
      expect(sampled.every((q) => q.temperature === 0.7)).toBe(true);
      // Each batch its own seed, and a problem's samples in one batch.
      expect(new Set(sampled.map((q) => q.seed)).size).toBe(sampled.length);
      for (const p of ps) expect(sampled.filter((q) => q.prompts.includes(prompt(p)))).toHaveLength(1);

      // Recounted from the answers the model gave.
      const outcomes: SampledOutcome[] = ps.map((p) => {
        const mine = model.answered.filter((a) => a.prompt === prompt(p));
        const drawn = mine.filter((a) => a.temperature > 0);
        return { id: p.id, level: p.level!, greedy: mine.find((a) => a.temperature === 0)!.right ? 1 : 0, n: drawn.length, c: drawn.filter((a) => a.right).length };
      });
      expect(r.outcomes).toEqual(outcomes);
      expect(outcomes.every((o) => o.n === samples)).toBe(true);
      const mean = (os: SampledOutcome[], k: number) => os.reduce((s, o) => s + passAtK(o.n, o.c, k), 0) / os.length;
      expect(Object.keys(r.perLevel)).toEqual(['1', '3', '5']);
      for (const [level, t] of Object.entries(r.perLevel)) {
        const at = outcomes.filter((o) => String(o.level) === level);
        expect(t.problems).toBe(at.length);
        expect(t.greedy).toBe(at.filter((o) => o.greedy === 1).length / at.length);
        for (const [k, v] of Object.entries(t.passAt)) expect(v).toBeCloseTo(mean(at, Number(k)), 12);
        expect(Object.keys(t.passAt).map(Number).at(-1)).toBe(samples);
      }
      expect(r.all.passAt[1]).toBeCloseTo(outcomes.reduce((s, o) => s + o.c / o.n, 0) / outcomes.length, 12);
    });
  }

  it('reuses greedy verdicts given, generating only the samples', async () => {
    const seed = freshSeed();
    const ps = problems(seed);
    const prompt = (p: Problem) => `Solve: ${p.statement}`;
    const model = new CoinModel(new Map(ps.map((p) => [prompt(p), 0.5])), new Map(ps.map((p) => [prompt(p), (p as Problem & { kind: 'math' }).answer!])), false);
    const greedy = ps.map((_, i) => i % 2);
    const r = await validateForm(model, createValidators(), ps, 'task', { templates: { ...COMPACT_TEMPLATES, solver: 'Solve: {{problem}}' }, solverTokens: 40, samples: 3, temperature: 1, seed, batchRows: 64 }, greedy);
    expect(model.requests.every((q) => q.temperature === 1)).toBe(true);
    expect(r.outcomes.map((o) => o.greedy)).toEqual(greedy);
    await expect(validateForm(model, createValidators(), ps, 'task', { templates: COMPACT_TEMPLATES, solverTokens: 40, samples: 0, temperature: 1, seed, batchRows: 64 }, [1])).rejects.toThrow(`1 greedy verdicts for ${ps.length} problems`);
  });

  it('greedy only: no samples drawn, no pass@k', async () => {
    const out = tally([{ id: 'a', greedy: 1, n: 0, c: 0 }, { id: 'b', greedy: 0, n: 0, c: 0 }], 0);
    expect(out).toEqual({ problems: 2, greedy: 0.5, passAt: {} });
    expect(perLevel([{ id: 'a', greedy: 1, n: 0, c: 0 }], 0)).toEqual({});
  });

  it("reads the corpus's answer as the first number written", () => {
    expect(firstNumber(' 35. 11+2 = 13.')).toBe('35');
    expect(firstNumber(' 7*5-2 = 33.')).toBe('7');
    expect(firstNumber(' = 12')).toBe('12');
    expect(firstNumber(' nothing')).toBeNull();
  });
});
