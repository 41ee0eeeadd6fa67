import { describe, expect, it } from 'vitest';
import { rng } from '../util/random';
import { checkHeldOut, findOverlap, holdOut } from './content';
import { shippedSplits } from './curriculum';
import { recordToProblem, type Problem } from './problem';

const problems: Problem[] = Array.from({ length: 50 }, (_, i) => ({ id: `p${i}`, source: 's', format: 'qa', kind: 'math', statement: `What is ${i} + 1?`, answer: String(i + 1), raw: {} }));

describe('a held-out split from the seeds', () => {
  it('moves the asked fraction, reproducibly from the seed, and shares no problem', () => {
    const a = holdOut(problems, 0.2, rng(3));
    expect(a.validation).toHaveLength(10);
    expect(a.seeds).toHaveLength(40);
    expect(new Set([...a.seeds, ...a.validation].map((p) => p.id)).size).toBe(50);
    expect(() => checkHeldOut(a.seeds, a.validation)).not.toThrow();
    expect(holdOut(problems, 0.2, rng(3))).toEqual(a);
    expect(holdOut(problems, 0.2, rng(4)).validation.map((p) => p.id)).not.toEqual(a.validation.map((p) => p.id));
  });

  it('keeps problems that share content on one side: the curriculum seeds held out by expression', () => {
    const seeds = shippedSplits().seeds.map((r) => {
      const p = recordToProblem({ ...r }, 'seeds', r.id);
      if ('error' in p) throw new Error(p.error);
      return p.problem;
    });
    for (const seed of [0, 1, 2]) {
      const split = holdOut(seeds, 0.1, rng(seed));
      expect(findOverlap(split.seeds, split.validation)).toEqual([]);
      expect(split.seeds.length + split.validation.length).toBe(500);
      // Whole groups while they fit: at most the asked 50, and near it (level 2 has many problems of their own).
      expect(split.validation.length).toBeGreaterThan(40);
      expect(split.validation.length).toBeLessThanOrEqual(50);
    }
    // Problems that are all one content cannot be split.
    expect(() => holdOut(seeds.filter((p) => p.kind === 'math' && p.expression === '3+4'), 0.5, rng(1))).toThrow('share content stay together');
  });

  it('refuses a fraction that leaves either side empty', () => {
    expect(() => holdOut(problems, 0, rng(1))).toThrow('between 0 and 1');
    expect(() => holdOut(problems, 1, rng(1))).toThrow('between 0 and 1');
    expect(() => holdOut(problems.slice(0, 3), 0.1, rng(1))).toThrow('leaves no seeds or no validation');
  });
});
