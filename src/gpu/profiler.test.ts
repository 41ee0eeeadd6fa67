import { describe, expect, it } from 'vitest';
import { byLabel, type ProfileEntry } from './profiler';
import { rng } from '../util/random';

describe('byLabel', () => {
  it('merges the shapes of one kernel: counts and times add up per label, slowest first', () => {
    const r = rng(7);
    const labels = ['matmul_gemv', 'rms_norm', 'sample_row', 'attention'];
    const entries: ProfileEntry[] = Array.from({ length: 40 }, () => ({
      label: labels[Math.floor(r() * labels.length)]!,
      workgroups: 1 + Math.floor(r() * 500),
      count: 1 + Math.floor(r() * 9),
      totalMs: r() * 3,
    }));
    const merged = byLabel(entries);
    expect(merged.map((e) => e.label).sort()).toEqual([...new Set(entries.map((e) => e.label))].sort());
    for (const m of merged) {
      const mine = entries.filter((e) => e.label === m.label);
      expect(m.count).toBe(mine.reduce((n, e) => n + e.count, 0));
      expect(m.totalMs).toBeCloseTo(mine.reduce((n, e) => n + e.totalMs, 0), 12);
      expect(m.workgroups).toBe(0);
    }
    for (let i = 1; i < merged.length; i++) expect(merged[i - 1]!.totalMs).toBeGreaterThanOrEqual(merged[i]!.totalMs);
    // The input is left as it was.
    expect(entries.every((e) => e.workgroups > 0)).toBe(true);
  });
});
