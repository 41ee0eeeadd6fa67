import { describe, expect, it } from 'vitest';
import { rng } from '../util/random';
import { checkHeldOut } from './content';
import { holdOut, type Problem } from './problem';

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

  it('refuses a fraction that leaves either side empty', () => {
    expect(() => holdOut(problems, 0, rng(1))).toThrow('between 0 and 1');
    expect(() => holdOut(problems, 1, rng(1))).toThrow('between 0 and 1');
    expect(() => holdOut(problems.slice(0, 3), 0.1, rng(1))).toThrow('leaves no seeds or no validation');
  });
});
