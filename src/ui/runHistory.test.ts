import { describe, expect, it } from 'vitest';
import { compareKept, type RunRecord } from './runHistory';

const run = (id: string, method: RunRecord['config']['method'], final: number, admitted: number, steps = 20): RunRecord => ({
  id, startedAt: 0, steps, endReason: 'steps', finished: true, best: null,
  config: { method, templates: 'compact', settings: {}, seeds: 's', validation: 'v', model: 'm' },
  validations: [{ step: 0, accuracy: 0.05 }, { step: steps, accuracy: final }],
  bank: [{ step: steps, size: 500 + admitted, admitted }],
});

describe('kept runs compared by method', () => {
  it('final held-out accuracy and admitted problems as mean ± SE, the difference from RLVR in standard errors', () => {
    const rows = compareKept([
      run('a', 'sage', 0.3, 10), run('b', 'sage', 0.5, 20, 30), run('c', 'rlvr', 0.2, 0), run('d', 'rlvr', 0.4, 0),
      // A run that never validated after its start tells nothing.
      { ...run('e', 'mae', 0.9, 5), validations: [{ step: 0, accuracy: 0.9 }] },
    ]);
    expect(rows.map((r) => r.method)).toEqual(['sage', 'rlvr']);
    const [sage, rlvr] = rows;
    expect(sage).toMatchObject({ runs: 2, steps: 20, final: { mean: expect.closeTo(0.4, 12), se: expect.closeTo(0.1, 12) }, admitted: { mean: 15, se: 5 } });
    expect(sage!.vsRlvr!.diff).toBeCloseTo(0.1, 12);
    expect(sage!.vsRlvr!.z).toBeCloseTo(0.1 / Math.sqrt(0.02), 9);
    expect(rlvr!.vsRlvr).toBeNull();
  });
});
