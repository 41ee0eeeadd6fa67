import { describe, expect, it } from 'vitest';
import { latestEvery } from './throttle';

describe('latestEvery', () => {
  it('sends the first value at once, then at most one per interval, and the held-back last on flush', () => {
    let t = 0;
    const sent: number[] = [];
    const s = latestEvery((v: number) => sent.push(v), 100, () => t);
    for (let i = 0; i < 10; i++) {
      s.push(i);
      t += 30;
    }
    expect(sent).toEqual([0, 4, 8]);
    s.flush();
    expect(sent).toEqual([0, 4, 8, 9]);
    s.flush();
    expect(sent).toEqual([0, 4, 8, 9]);
  });
});
