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
  /** Drawn as a filled stepped area (the bank's seeds and admitted problems). */
  area?: { fill: string };
  /** Summed onto the series before it with the same stack (a total shown by its parts). */
  stack?: string;
  /** Drawn across steps it has no point at (a kept run's points fall between this run's). */
  connectNulls?: boolean;
}

/** One point per step: a value per series key, null or absent where the series has none. */
export type PlotRow = { step: number } & Record<string, number | null | undefined>;

export interface PlotColumns {
  /** Steps ascending, then each series' values as drawn (summed onto the ones before in its stack; none where it has no value). */
  drawn: (number | null)[][];
  /** Each series' own values, for the legend (not its stack's). */
  raw: (number | null)[][];
}

const value = (x: number | null | undefined): number | null => (x === undefined || x === null || !Number.isFinite(x) ? null : x);

export function plotColumns(rows: readonly PlotRow[], series: readonly PlotSeries[]): PlotColumns {
  const sorted = [...rows].sort((a, b) => a.step - b.step);
  const steps = sorted.map((r) => r.step);
  const raw = series.map((s) => sorted.map((r) => value(r[s.key])));
  const stacks = new Map<string, number[]>();
  const drawn = series.map((s, i) => {
    if (s.stack === undefined) return raw[i]!;
    const sums = stacks.get(s.stack) ?? sorted.map(() => 0);
    stacks.set(s.stack, sums);
    return raw[i]!.map((v, j) => (v === null ? null : (sums[j]! += v)));
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
