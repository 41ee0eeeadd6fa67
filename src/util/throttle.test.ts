import { describe, expect, it } from 'vitest';
import { batchEvery, latestEvery } from './throttle';

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

describe('batchEvery', () => {
  it('sends values together after the interval, in order, and at once on flush', async () => {
    const sent: number[][] = [];
    const b = batchEvery((vs: number[]) => sent.push(vs), 20);
    b.push(1);
    b.push(2);
    b.push(3);
    expect(sent).toEqual([]);
    await new Promise((r) => setTimeout(r, 60));
    expect(sent).toEqual([[1, 2, 3]]);
    b.push(4);
    b.flush();
    expect(sent).toEqual([[1, 2, 3], [4]]);
    b.flush();
    await new Promise((r) => setTimeout(r, 60));
    expect(sent).toEqual([[1, 2, 3], [4]]);
  });
});
