import { describe, expect, it } from 'vitest';
import { byLabel, unionLength, type ProfileEntry } from './profiler';
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

describe('unionLength', () => {
  it('is the measure of the union of random intervals, counted point by point on a grid', () => {
    const r = rng(11);
    for (let trial = 0; trial < 200; trial++) {
      const spans: [number, number][] = Array.from({ length: Math.floor(r() * 12) }, () => {
        const b = Math.floor(r() * 100);
        // Some empty or reversed: they cover nothing.
        return [b, b + Math.floor(r() * 30) - 3];
      });
      let covered = 0;
      for (let x = 0; x < 140; x++) if (spans.some(([b, e]) => e > b && x >= b && x < e)) covered++;
      expect(unionLength(spans)).toBe(covered);
    }
  });
});
