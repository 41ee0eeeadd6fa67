import { describe, expect, it } from 'vitest';
import type { ProfileEntry } from '../src/gpu/profiler';
import { PHASE_KERNELS, phaseKernels } from './loopCore';

describe("a phase's kernel table", () => {
  it('sums each (kernel, workgroups) over the steps into means a step, slowest first, and keeps the slowest few', () => {
    // Two steps' profiles: one kernel at two workgroup counts, kept apart; random times, so the order is the data's.
    const rand = (i: number) => ((i * 7919) % 101) / 10 + 0.05;
    const labels = Array.from({ length: PHASE_KERNELS + 3 }, (_, i) => `k${i}`);
    const steps = [0, 1].map((s) => labels.map((label, i): ProfileEntry => ({ label, workgroups: 4 + (i % 2), count: 2 + s, totalMs: rand(i + 13 * s) })));
    const extra: ProfileEntry = { label: 'k0', workgroups: 99, count: 1, totalMs: 1000 };
    const table = phaseKernels([...steps.flat(), extra], 2);
    expect(table).toHaveLength(PHASE_KERNELS);
    expect(table[0]).toEqual({ label: 'k0', workgroups: 99, perStep: 0.5, usPerStep: 500_000 });
    const expected = labels
      .map((label, i) => ({ label, workgroups: 4 + (i % 2), usPerStep: (1000 * (rand(i) + rand(i + 13))) / 2 }))
      .sort((a, b) => b.usPerStep - a.usPerStep)
      .slice(0, PHASE_KERNELS - 1);
    table.slice(1).forEach((k, i) => {
      expect(k.label).toBe(expected[i]!.label);
      expect(k.workgroups).toBe(expected[i]!.workgroups);
      expect(k.perStep).toBe(2.5);
      expect(k.usPerStep).toBeCloseTo(expected[i]!.usPerStep, 9);
    });
    for (let i = 1; i < table.length; i++) expect(table[i]!.usPerStep).toBeLessThanOrEqual(table[i - 1]!.usPerStep);
  });

  it('is empty for a phase with no dispatches', () => {
    expect(phaseKernels([], 3)).toEqual([]);
  });
});
