import { describe, expect, it } from 'vitest';
import { lastValue, overlaySeries, plotColumns, withOverlays, type PlotRow, type PlotSeries } from './plotData';

describe('plotColumns', () => {
  const series: PlotSeries[] = [
    { key: 'seeds', color: '#000', area: { fill: '#111' }, stack: 'bank' },
    { key: 'admitted', color: '#222', area: { fill: '#333' }, stack: 'bank' },
    { key: 'rejected', color: '#444', axis: 'right' },
  ];

  it('sorts by step, stacks a series onto the ones before in its stack, keeps the others and nulls as they are', () => {
    const rows: PlotRow[] = [
      { step: 3, seeds: 10, admitted: 4, rejected: null },
      { step: 1, seeds: 10, admitted: 1, rejected: 2 },
      { step: 2, seeds: 10, rejected: 5 },
    ];
    const { drawn, raw } = plotColumns(rows, series);
    expect(drawn[0]).toEqual([1, 2, 3]);
    expect(drawn[1]).toEqual([10, 10, 10]);
    // A step an area has no value at is a gap in it (a kept run's step this run lacks), not a zero.
    expect(drawn[2]).toEqual([11, null, 14]);
    expect(drawn[3]).toEqual([2, 5, null]);
    expect(raw[2]).toEqual([1, null, 4]);
    expect(raw[3]).toBe(drawn[3]);
  });

  it('reads a non-finite value as no point', () => {
    const { drawn } = plotColumns([{ step: 0, seeds: NaN, admitted: Infinity, rejected: 1 }], series);
    expect(drawn.slice(1)).toEqual([[null], [null], [1]]);
    const lines = plotColumns([{ step: 0, loss: NaN }], [{ key: 'loss', color: '#fff' }]);
    expect(lines.drawn[1]).toEqual([null]);
  });

  it('sums each stack apart', () => {
    const lines: PlotSeries[] = [
      { key: 'a', color: '#000', stack: 'x' },
      { key: 'p', color: '#000', stack: 'y' },
      { key: 'b', color: '#000', stack: 'x' },
      { key: 'q', color: '#000', stack: 'y' },
    ];
    const { drawn, raw } = plotColumns([{ step: 0, a: 1, p: 10, b: 2, q: 20 }, { step: 1, a: 3, p: 30, b: null, q: 40 }], lines);
    expect(drawn.slice(1)).toEqual([[1, 3], [10, 30], [3, null], [30, 70]]);
    expect(raw.slice(1)).toEqual([[1, 3], [10, 30], [2, null], [20, 40]]);
  });

  it('gives empty columns for no rows', () => {
    expect(plotColumns([], series).drawn).toEqual([[], [], [], []]);
  });
});

describe('withOverlays', () => {
  it('merges each kept run by step under its own key, adding the steps this run lacks', () => {
    const rows: PlotRow[] = [
      { step: 0, overall: 10 },
      { step: 4, overall: 30 },
    ];
    const merged = withOverlays(rows, [
      { label: 'sage · a.jsonl', color: '#f00', points: [{ step: 2, value: 20 }, { step: 4, value: 25 }] },
      { label: 'rlvr · a.jsonl', color: '#0f0', points: [{ step: 0, value: 5 }] },
    ]);
    expect(merged).toEqual([
      { step: 0, overall: 10, overlay1: 5 },
      { step: 2, overlay0: 20 },
      { step: 4, overall: 30, overlay0: 25 },
    ]);
    // The rows given are not changed.
    expect(rows[0]).toEqual({ step: 0, overall: 10 });
  });

  it('draws kept runs dashed with dots, across the steps they have no point at', () => {
    const [s] = overlaySeries([{ label: 'run', color: '#abc', points: [] }]);
    expect(s).toMatchObject({ key: 'overlay0', name: 'run', color: '#abc', dashed: true, dots: true, connectNulls: true });
  });
});

describe('lastValue', () => {
  it('skips trailing gaps', () => {
    expect(lastValue([1, 2, null])).toBe(2);
    expect(lastValue([null, null])).toBeNull();
    expect(lastValue([])).toBeNull();
  });
});
