import { describe, expect, it } from 'vitest';
import { maxOf } from './stats';

describe('maxOf', () => {
  it('equals Math.max over random arrays, 0 for none', () => {
    for (let trial = 0; trial < 50; trial++) {
      const xs = Array.from({ length: 1 + Math.floor(Math.random() * 40) }, () => Math.floor(Math.random() * 1000));
      expect(maxOf(xs, (x) => x)).toBe(Math.max(...xs));
    }
    expect(maxOf([], (x: number) => x)).toBe(0);
  });

  it('takes more elements than a spread argument list holds', () => {
    const rows = new Array<number[]>(500_000).fill([1, 2]);
    rows[321_987] = [1, 2, 3, 4, 5];
    expect(maxOf(rows, (r) => r.length)).toBe(5);
  });
});
