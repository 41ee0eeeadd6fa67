import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Problem } from '../data/problem';
import { rng } from '../util/random';
import { planVerdict } from './validators';
import { alterNumber, auc, consistentVariant, corruptProblem, criticProbe, planOf, wrongPlan } from './criticData';

const math = (id: string, statement: string, expression: string, answer: string): Problem => ({ id, source: 't', format: 'curriculum', kind: 'math', statement, answer, expression, level: 1, raw: {} });

describe('the Critic’s pairs', () => {
  it('alters a repeated number so the statement contradicts itself, and nothing without numbers', () => {
    const random = rng(3);
    for (let i = 0; i < 50; i++) {
      const out = alterNumber('Di adds 4 to 3: 3+4=?', random, true)!;
      const nums = out.match(/\d+/g)!;
      expect(nums).toHaveLength(4);
      // One of the two 4s or the two 3s changed: the words and the expression disagree.
      expect(nums[0] === nums[3] && nums[1] === nums[2]).toBe(false);
    }
    expect(alterNumber('Compute 9-2.', random, true)).toBeNull();
    expect(alterNumber('no numbers', random)).toBeNull();
    expect(alterNumber('Compute 9-2.', random)).not.toBe('Compute 9-2.');
  });

  it('changes a number the problem and its plan share alike, everywhere: the plan still matches the new problem', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 60 }), fc.constantFrom('+', '-', '*'), fc.integer(), (a, b, op, seed) => {
        const expression = `${a}${op}${b}`;
        const statement = `Ann has ${a} and ${op === '+' ? 'gets' : 'uses'} ${b}: ${expression}=?`;
        const plan = `Compute ${expression}.`;
        const v = consistentVariant(statement, plan, rng(seed))!;
        expect(v.plan).not.toBe(plan);
        expect(v.statement).not.toBe(statement);
        // The new plan's expression is the new statement's, and the words agree with it.
        const changed = v.plan.slice('Compute '.length, -1);
        expect(v.statement.endsWith(`: ${changed}=?`)).toBe(true);
        const [x, y] = changed.split(/[+*-]/).map(Number);
        expect(v.statement.startsWith(`Ann has ${x} and`)).toBe(true);
        expect(v.statement.includes(` ${y}: `)).toBe(true);
        // One number changed, everywhere: the other operand kept unless it was the same number.
        if (a === b) expect(x).toBe(y);
        else expect((x === a) !== (y === b)).toBe(true);
      }),
    );
    expect(consistentVariant('What is two plus two?', 'Compute 2+2.', rng(1))).toBeNull();
    // 12 is not 1 or 2: whole numbers only.
    expect(consistentVariant('Take 1 from 12: 12-1=?', 'Compute 12-1.', () => 0)).toEqual({ statement: 'Take 1 from 0: 0-1=?', plan: 'Compute 0-1.' });
  });

  it('corrupts every statement into something else, of every kind over many draws', () => {
    const random = rng(5);
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) {
      const s = 'Ann adds 12 to 7: 7+12=?';
      const c = corruptProblem(s, random);
      expect(c.text).not.toBe(s);
      seen.add(c.variant);
    }
    expect([...seen].sort()).toEqual(['altered', 'noise', 'shuffled', 'truncated']);
  });

  it('a wrong plan is never the problem’s own, nor one that computes its answer', () => {
    // a and c share their answer (7): c's plan is no wrong plan for a, nor `0*5` altered to `0*9` for d.
    const ps = [
      math('a', 'Jo adds 2 to 5: 5+2=?', '5+2', '7'),
      math('b', 'Kai takes 1 from 9: 9-1=?', '9-1', '8'),
      math('c', 'Di adds 4 to 3: 3+4=?', '3+4', '7'),
      math('d', 'Bo has 0 bags of 5: 0*5=?', '0*5', '0'),
    ];
    const random = rng(9);
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) {
      const p = ps[i % 4]!;
      const w = wrongPlan(p, ps, random);
      if (!w) continue;
      seen.add(w.variant);
      expect(w.plan).not.toBe(planOf(p));
      expect(planVerdict(p, w.plan)).toBe(false);
    }
    expect([...seen].sort()).toEqual(['altered', 'other']);
    const probe = criticProbe(ps, rng(1));
    expect(probe.problems.filter((x) => x.real).map((x) => x.statement)).toEqual(ps.map((p) => p.statement));
    expect(probe.plans.filter((x) => x.matching)).toHaveLength(4);
    expect(probe.plans.filter((x) => !x.matching)).toHaveLength(4);
  });

  it('AUC is the Mann-Whitney probability, ties half, and 1 − itself with the sides swapped', () => {
    expect(auc([3, 4], [1, 2])).toBe(1);
    expect(auc([1], [2])).toBe(0);
    expect(auc([5, 5], [5, 5])).toBe(0.5);
    expect(auc([2, 9], [2, 1])).toBe((0.5 + 1 + 1 + 1) / 4);
    expect(auc([], [1])).toBeNull();
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 1, maxLength: 20 }), fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 1, maxLength: 20 }), (a, b) => {
        expect(auc(a, b)! + auc(b, a)!).toBeCloseTo(1, 12);
      }),
    );
  });
});
