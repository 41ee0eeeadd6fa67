/** The rows of a step chart turned into the columns the plot draws: pure, so it is tested apart from the canvas. */

/** A series of a step chart: drawn by the plot and listed in its legend. */
export interface PlotSeries {
  key: string;
  /** In the legend (the key when absent). */
  name?: string;
  axis?: 'left' | 'right';
  color: string;
  width?: number;
  dashed?: boolean;
  dots?: boolean;
  /** A stepped area stacked on the areas before it (the bank's seeds, then admitted problems). */
  area?: { fill: string };
  /** Drawn across steps it has no point at (a kept run's points fall between this run's). */
  connectNulls?: boolean;
}

/** One point per step: a value per series key, null or absent where the series has none. */
export type PlotRow = { step: number } & Record<string, number | null | undefined>;

export interface PlotColumns {
  /** Steps ascending, then each series' values as drawn (areas summed onto the ones before; none where an area has no value). */
  drawn: (number | null)[][];
  /** Each series' own values, for the legend (an area's, not the stack's). */
  raw: (number | null)[][];
}

const value = (x: number | null | undefined): number | null => (x === undefined || x === null || !Number.isFinite(x) ? null : x);

export function plotColumns(rows: readonly PlotRow[], series: readonly PlotSeries[]): PlotColumns {
  const sorted = [...rows].sort((a, b) => a.step - b.step);
  const steps = sorted.map((r) => r.step);
  const raw = series.map((s) => sorted.map((r) => value(r[s.key])));
  const stack = sorted.map(() => 0);
  const drawn = series.map((s, i) => {
    if (!s.area) return raw[i]!;
    return raw[i]!.map((v, j) => (v === null ? null : (stack[j]! += v)));
  });
  return { drawn: [steps, ...drawn], raw: [steps, ...raw] };
}

/** A kept run drawn over a chart: its label, colour and points. */
export interface Overlay {
  label: string;
  color: string;
  points: { step: number; value: number }[];
}

/** The rows with each overlay's points merged in by step, under keys `overlay0`, `overlay1`, …. */
export function withOverlays(rows: readonly PlotRow[], overlays: readonly Overlay[]): PlotRow[] {
  const byStep = new Map<number, PlotRow>(rows.map((r) => [r.step, { ...r }]));
  overlays.forEach((o, i) => {
    for (const p of o.points) {
      const row: PlotRow = byStep.get(p.step) ?? { step: p.step };
      row[`overlay${i}`] = p.value;
      byStep.set(p.step, row);
    }
  });
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

export const overlaySeries = (overlays: readonly Overlay[]): PlotSeries[] =>
  overlays.map((o, i) => ({ key: `overlay${i}`, name: o.label, color: o.color, width: 1.8, dashed: true, dots: true, connectNulls: true }));

/** The latest value a series has, for the legend while the pointer is off the chart. */
export function lastValue(column: readonly (number | null)[]): number | null {
  for (let i = column.length - 1; i >= 0; i--) if (column[i] !== null) return column[i]!;
  return null;
}
