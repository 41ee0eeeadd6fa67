import { describe, expect, it } from 'vitest';
import type { MathProblem } from '../data/problem';
import { testRuntime } from '../gpu/testUtils';
import { Generator } from '../model/generate';
import { accuracyByLevel, firstPerLevel } from './evaluate';
import { MEMORISE_PAIRS, memorisationRun } from './memorise';

const problem = (i: number, statement: string, answer: string, level: number): MathProblem => ({
  id: String(i), source: 'test', format: 'qa', kind: 'math', statement, answer, level, raw: {},
});

describe('greedy evaluation per level', () => {
  it('answers what the model memorised, exactly, and counts per level', async () => {
    const rt = await testRuntime();
    // One layer memorises the pairs in 40 steps (the generate CLI test's checkpoint): what is
    // tested here is the evaluation of a model that knows them, not the training (sft.test's).
    const { model, trainer } = memorisationRun(rt, 40, false, 1);
    for (let i = 0; i < 40; i++) await trainer.step();
    const problems = [
      ...MEMORISE_PAIRS.map((p, i) => problem(i, p.prompt, p.response, i < 2 ? 1 : 2)),
      problem(9, MEMORISE_PAIRS[0]!.prompt, 'not the answer', 3),
    ];
    const levels = await accuracyByLevel(new Generator(model, trainer.tokenizer), problems, 8);
    expect(levels).toEqual([
      { level: 1, correct: 2, total: 2 },
      { level: 2, correct: 2, total: 2 },
      { level: 3, correct: 0, total: 1 },
    ]);
    trainer.destroy();
    model.destroy();
  });

  it('takes the same first problems of each level at every evaluation', () => {
    const ps = [1, 2, 1, 1, 2, 3].map((level, i) => problem(i, `q${i}`, 'a', level));
    expect(firstPerLevel(ps, 2).map((p) => p.id)).toEqual(['0', '1', '2', '4', '5']);
  });
});
