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
    expect(table[0]).toEqual({ label: 'k0', workgroups: 99, dispatches: 0.5, gpuMs: 500 });
    const expected = labels
      .map((label, i) => ({ label, workgroups: 4 + (i % 2), dispatches: 2.5, gpuMs: (rand(i) + rand(i + 13)) / 2 }))
      .sort((a, b) => b.gpuMs - a.gpuMs)
      .slice(0, PHASE_KERNELS - 1);
    table.slice(1).forEach((k, i) => {
      expect(k.label).toBe(expected[i]!.label);
      expect(k.workgroups).toBe(expected[i]!.workgroups);
      expect(k.dispatches).toBe(2.5);
      expect(k.gpuMs).toBeCloseTo(expected[i]!.gpuMs, 12);
    });
    for (let i = 1; i < table.length; i++) expect(table[i]!.gpuMs).toBeLessThanOrEqual(table[i - 1]!.gpuMs);
  });

  it('is empty for a phase with no dispatches', () => {
    expect(phaseKernels([], 3)).toEqual([]);
  });
});
