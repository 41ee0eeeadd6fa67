import { describe, expect, it } from 'vitest';
import type { SampledTally } from '../sage/sampledValidation';
import type { ValidationResult } from '../sage/validation';
import { formsTable, validationTable } from './evaluation';

describe("an evaluation's tables", () => {
  it('tabulates a method without a Planner as the Solver alone, each level a column', () => {
    const result: ValidationResult = {
      step: 0,
      accuracy: 0.25,
      perSource: { curriculum: { correct: 1, total: 4, accuracy: 0.25 } },
      perLevel: { '1': { correct: 1, total: 2, accuracy: 0.5 }, '2': { correct: 0, total: 2, accuracy: 0 } },
    };
    const table = validationTable(result, 'rlvr').split('\n');
    expect(table).toHaveLength(2);
    expect(table[0]).toMatch(/^\s+all\s+L1\s+L2$/);
    expect(table[1]).toMatch(/^Solver alone\s+25\.0% ± 21\.7 \(1\/4\)\s+50\.0% 1\/2\s+0\.0% 0\/2$/);
  });

  it('tabulates greedy and each pass@k per form, all problems and each level', () => {
    const t = (greedy: number, problems: number, p1: number, p2: number): SampledTally => ({ problems, greedy, passAt: { '1': p1, '2': p2 } });
    const results = [
      { form: 'task' as const, all: t(0.25, 4, 0.25, 0.5), perLevel: { '1': t(0.5, 2, 0.5, 1), '3': t(0, 2, 0, 0) }, outcomes: [] },
      { form: 'corpus' as const, all: t(0.75, 4, 0.625, 0.75), perLevel: { '1': t(1, 2, 1, 1), '3': t(0.5, 2, 0.25, 0.5) }, outcomes: [] },
    ];
    expect(formsTable(results).split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
      ['', 'all', 'L1', 'L3'],
      ['task', 'greedy', '25.0% 1/4', '50.0% 1/2', '0.0% 0/2'],
      ['task', 'pass@1', '25.0%', '50.0%', '0.0%'],
      ['task', 'pass@2', '50.0%', '100.0%', '0.0%'],
      ['corpus', 'greedy', '75.0% 3/4', '100.0% 2/2', '50.0% 1/2'],
      ['corpus', 'pass@1', '62.5%', '100.0%', '25.0%'],
      ['corpus', 'pass@2', '75.0%', '100.0%', '50.0%'],
    ]);
  });
});
