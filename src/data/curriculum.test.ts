import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluateExpression } from '../verify/arithmetic';
import { rng } from '../util/random';
import { answerStatement, generateProblem, generateSet, LEVELS, readStatement, shippedSplits, SHIPPED_SPLITS, type CurriculumRecord } from './curriculum';
import { findOverlap } from './content';
import { normaliseStatement, recordToProblem, type Problem } from './problem';

const asProblem = (r: CurriculumRecord): Problem => {
  const read = recordToProblem({ ...r }, 'curriculum', r.id);
  if ('error' in read) throw new Error(read.error);
  return read.problem;
};
const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('the demo curriculum', () => {
  it('ships exactly what the generator makes: 500 seeds of levels 1-2, a held-out split over all levels', () => {
    const { seeds, validation } = shippedSplits();
    expect(lines(SHIPPED_SPLITS.seeds.file)).toEqual(seeds);
    expect(lines(SHIPPED_SPLITS.validation.file)).toEqual(validation);
    expect(seeds).toHaveLength(500);
    expect(new Set(seeds.map((p) => p.level))).toEqual(new Set([1, 2]));
    for (const level of LEVELS) expect(validation.filter((p) => p.level === level)).toHaveLength(200);
    // Held out by content: no validation expression is a seed's, at any level, in any wording.
    const seedExpressions = new Set(seeds.map((p) => p.expression));
    expect(validation.filter((p) => seedExpressions.has(p.expression))).toEqual([]);
    expect(findOverlap(seeds.map(asProblem), validation.map(asProblem))).toEqual([]);
  });

  it('ships the ceiling\'s seeds: the 500 seeds, then as many of levels 3-5 in equal shares, none with a held-out problem\'s content', () => {
    const { seeds, validation, ceiling } = shippedSplits();
    expect(lines(SHIPPED_SPLITS.ceiling.file)).toEqual(ceiling);
    expect(ceiling.slice(0, seeds.length)).toEqual(seeds);
    const added = ceiling.slice(seeds.length);
    expect(added).toHaveLength(seeds.length);
    const count = (l: number) => added.filter((p) => p.level === l).length;
    expect([1, 2, 3, 4, 5].map(count)).toEqual([0, 0, 167, 167, 166]);
    expect(new Set(ceiling.map((p) => p.id)).size).toBe(ceiling.length);
    const held = new Set(validation.map((p) => p.expression));
    expect(ceiling.filter((p) => held.has(p.expression))).toEqual([]);
    expect(findOverlap(ceiling.map(asProblem), validation.map(asProblem))).toEqual([]);
    // Each added problem reads back to its level and expression, as a Challenger's would.
    for (const p of added) expect(readStatement(p.question)).toEqual({ expression: p.expression, level: p.level });
  });

  it('widens level 1 to operands 0-9, while the seeds show only 0-4', () => {
    const { seeds, validation } = shippedSplits();
    const operands = (ps: { level: number; expression: string }[]) => ps.filter((p) => p.level === 1).flatMap((p) => p.expression.split(/[+-]/).map(Number));
    expect(Math.max(...operands(seeds))).toBe(4);
    expect(Math.max(...operands(validation))).toBe(9);
    // Level 1 has 155 expressions (100 sums, 55 differences); the held-out ones are those no seed has.
    const all = new Set(generateSet({ 1: 2000 }, 3).map((p) => p.expression));
    expect(all.size).toBe(155);
  });

  it('draws a capped level from the same random stream: a cap at or above the range changes nothing', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 9 }), (seed, cap) => {
        const capped = generateSet({ 1: 30 }, seed, { operandCap: { 1: cap } });
        for (const p of capped) for (const n of p.expression.split(/[+-]/).map(Number)) expect(n).toBeLessThanOrEqual(cap);
        expect(generateSet({ 1: 30, 2: 10 }, seed, { operandCap: { 1: 9, 2: 20 } })).toEqual(generateSet({ 1: 30, 2: 10 }, seed));
      }),
      { numRuns: 20 },
    );
  });

  it('leaves out the excluded expressions, whatever their wording', () => {
    const exclude = new Set(['3+4', '9-2', '2*3']);
    const set = generateSet({ 1: 300, 2: 300 }, 8, { exclude });
    expect(set.filter((p) => exclude.has(p.expression))).toEqual([]);
    expect(generateSet({ 1: 300, 2: 300 }, 8).some((p) => exclude.has(p.expression))).toBe(true);
  });

  it('every problem: its answer is its expression’s value, and its statement reads back to that expression', () => {
    const random = rng(9);
    for (const level of LEVELS) {
      for (let i = 0; i < 300; i++) {
        const p = generateProblem(level, random);
        const v = evaluateExpression(p.expression);
        expect(v).toEqual({ value: Number(p.answer) });
        expect(Number(p.answer)).toBeGreaterThanOrEqual(0);
        const read = readStatement(p.question)!;
        expect(read.expression).toBe(p.expression);
        // "4-2=?" is in a style levels 1 and 2 share: it reads as the easier level.
        expect(read.level).toBeLessThanOrEqual(level);
      }
    }
  });

  it('is reproducible from its seed and keeps statements distinct', () => {
    expect(generateSet({ 1: 50, 3: 20 }, 5)).toEqual(generateSet({ 1: 50, 3: 20 }, 5));
    const set = generateSet({ 1: 300 }, 6);
    expect(new Set(set.map((p) => normaliseStatement(p.question))).size).toBe(300);
    expect(() => generateSet({ 1: 5000 }, 1)).toThrow(/fewer than 5000 distinct statements/);
  });

  it('checks a problem a model writes in a curriculum style by its expression, whatever answer it claims', () => {
    expect(answerStatement('Gus has 17 coins and gets 4 more. How many?')).toEqual({ answer: '21', expression: '17+4', level: 2 });
    // A style levels 1 and 2 share reads as the easier level whose ranges hold the numbers.
    expect(answerStatement('7+8=?')).toEqual({ answer: '15', expression: '7+8', level: 1 });
    expect(answerStatement('7+18=?')).toEqual({ answer: '25', expression: '7+18', level: 2 });
    expect(answerStatement('Jo takes 12 from 30: 30-12=?')).toEqual({ answer: '18', expression: '30-12', level: 1 });
    expect(answerStatement('12*(30-5)=?')).toEqual({ answer: '300', expression: '12*(30-5)', level: 4 });
    expect(answerStatement('Zed buys 3 boxes of 4 hats and sells 1 boxes of 2. How many hats are left?')).toMatchObject({ answer: '10' });
    // A repeated slot must repeat its word; other text is not in any style.
    expect(answerStatement('Ann has 3 red and 4 blue bags with 2 pens in each. How many cups?')).toEqual({ error: 'not in a curriculum style' });
    expect(answerStatement('What is the capital of France?')).toEqual({ error: 'not in a curriculum style' });
    expect(answerStatement('3-9=?')).toEqual({ error: '3-9 is negative' });
    expect(answerStatement('(7*3+1)/4=?')).toMatchObject({ error: expect.stringMatching(/not an integer/) });
  });

  it('reads hostile statements in bounded time and never throws', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), (s) => {
        const r = answerStatement(s);
        expect(typeof r).toBe('object');
      }),
      { numRuns: 300 },
    );
    expect(answerStatement('1'.repeat(100_000) + '+1=?')).toEqual({ error: 'not in a curriculum style' });
    expect(answerStatement('Ann has ' + ' '.repeat(300) + 'x')).toEqual({ error: 'not in a curriculum style' });
  });
});

describe('integer expressions', () => {
  it.each([
    ['3+4*2', 11],
    ['(3+4)*2', 14],
    ['2*(3+4)-5*2', 4],
    ['-(2-5)', 3],
    ['12/4/3', 1],
    ['7-2-1', 4],
    [' 6 × 7 ', 42],
    ['84÷2', 42],
    ['0-0', 0],
  ])('%s = %d', (expr, value) => expect(evaluateExpression(expr)).toEqual({ value }));

  it.each([
    ['7/2', /not an integer/],
    ['1/0', /division by zero/],
    ['2+', /unexpected end/],
    ['(1+2', /missing "\)"/],
    ['1+2)', /unexpected "\)"/],
    ['import os', /unexpected "i"/],
    ['9'.repeat(17), /unexpected "9"/],
    ['999999999*999999999', /safe integer/],
    ['('.repeat(40) + '1' + ')'.repeat(40), /nested deeper/],
    ['1+'.repeat(200) + '1', /longer than 200/],
    ['', /empty/],
  ])('%s is refused', (expr, reason) => {
    const r = evaluateExpression(expr);
    expect('error' in r && r.error).toMatch(reason);
  });
});
