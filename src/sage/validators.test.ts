import { describe, expect, it } from 'vitest';
import type { Problem } from '../data/problem';
import { createValidators } from './validators';

const v = createValidators();

describe('loop validators', () => {
  it('judge math answers by equivalence, only from a marked answer', async () => {
    const p: Problem = { id: 'p', source: 's', format: 'qa', kind: 'math', statement: 'Half of 1?', answer: '0.5', raw: {} };
    expect(await v.judge(p, 'so <answer>\\frac{1}{2}</answer>')).toBe(1);
    expect(await v.judge(p, '<answer>0.6</answer>')).toBe(0);
    expect(await v.judge(p, 'I think 0.5')).toBe(0);
  });

  it('a curriculum-style problem is usable only when its expression gives the claimed answer', async () => {
    const ok = await v.propose({ question: '7+8=?', answer: '15' }, 'math', 'g1');
    expect(ok).toMatchObject({ problem: { id: 'g1', format: 'curriculum', answer: '15', expression: '7+8', source: 'challenger' } });
    expect(await v.propose({ question: '7+8=?', answer: '16' }, 'math', 'g2')).toEqual({ unusable: 'claims 16, but 7+8 = 15' });
    expect(await v.propose({ question: '3-9=?', answer: '-6' }, 'math', 'g3')).toMatchObject({ unusable: expect.stringContaining('negative') });
  });

  it('outside the curriculum an answer must parse; empty or junk output is unusable', async () => {
    expect(await v.propose({ question: 'How many legs do 3 cats have?', answer: '12' }, 'math', 'g4')).toMatchObject({ problem: { format: 'qa', answer: '12' } });
    expect(await v.propose({ question: 'x', answer: '' }, 'math', 'g5')).toEqual({ unusable: 'empty answer' });
    expect(await v.propose({ question: '  ', answer: '1' }, 'math', 'g6')).toEqual({ unusable: 'empty question' });
    expect(await v.propose({ question: 'q', answer: '1' }, 'code', 'g7')).toMatchObject({ unusable: expect.any(String) });
  });

  it('refuses to judge code without a sandbox rather than guessing', async () => {
    const code: Problem = { id: 'c', source: 's', format: 'mbpp', kind: 'code', statement: 'add', tests: { style: 'asserts', entryPoint: 'add', asserts: ['assert add(1,2)==3'] }, raw: {} };
    await expect(v.judge(code, 'def add(a,b): return a+b')).rejects.toThrow(/no code sandbox/);
    const withRunner = createValidators(async () => 0.5);
    expect(await withRunner.judge(code, 'x')).toBe(0.5);
  });
});
