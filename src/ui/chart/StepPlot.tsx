import { useEffect, useMemo, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { AXIS, GRID } from '../run/theme';
import { lastValue, plotColumns, type PlotColumns, type PlotRow, type PlotSeries } from './plotData';

/**
 * A chart over steps drawn on a canvas by uPlot. A new point costs a `setData` and one canvas
 * redraw (a millisecond or two): an SVG chart library re-rendered the whole chart through React
 * on every point, 50–190 ms a chart on a 2-core machine, which froze the page during a run.
 */

export interface PlotAxis {
  label: string;
  /** A fixed end of the scale; the other follows the data. */
  min?: number;
  max?: number;
  /** After each tick value. */
  unit?: string;
  /** Counts: ticks at whole numbers only. */
  integer?: boolean;
}

/** A marked point (a circle) or, without `y`, a marked step (a dashed vertical line). */
export interface PlotMark {
  x: number;
  y?: number;
  label: string;
  color: string;
}

export interface StepPlotProps {
  rows: readonly PlotRow[];
  series: readonly PlotSeries[];
  xLabel: string;
  left: PlotAxis;
  right?: PlotAxis | undefined;
  /** A value as the legend shows it. */
  format: (v: number) => string;
  marks?: readonly PlotMark[];
  height: number;
  /** Shown over the plot while it has no rows. */
  empty?: string | undefined;
}

const FONT = '12px system-ui, sans-serif';
/** The width of a y axis, ticks and label (the empty-state note starts after the left one). */
const AXIS_SIZE = 56;
const WHOLE_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000];

function scale(a: PlotAxis): uPlot.Scale {
  return {
    auto: true,
    range: (_u, min, max) => {
      if (min === null || max === null) return [a.min ?? 0, a.max ?? 1];
      const [lo, hi] = uPlot.rangeNum(a.min !== undefined ? Math.min(a.min, min) : min, a.max !== undefined ? Math.max(a.max, max) : max, 0.1, true);
      return [a.min ?? lo!, a.max ?? hi!];
    },
  };
}

/**
 * Steps from 0, so the charts line up, when the plot asks for all its data; any other range
 * asked for (a zoom) as asked.
 */
function stepRange(u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  const xs = u.data[0];
  const all = min === null || max === null || xs.length === 0 || (min === xs[0] && max === xs[xs.length - 1]);
  return all ? [0, Math.max(1, max ?? 1)] : [min, max];
}

function axis(a: PlotAxis, scaleKey: string, side: 1 | 3): uPlot.Axis {
  const unit = a.unit;
  return {
    scale: scaleKey,
    side,
    label: a.label,
    labelFont: FONT,
    labelSize: 20,
    font: FONT,
    stroke: AXIS,
    size: AXIS_SIZE,
    grid: side === 3 ? { stroke: GRID, dash: [3, 3], width: 1 } : { show: false },
    ticks: { stroke: GRID, width: 1 },
    ...(a.integer ? { incrs: WHOLE_INCREMENTS } : {}),
    ...(unit ? { values: (_u: uPlot, splits: number[]) => splits.map((v) => `${+v.toFixed(6)}${unit}`) } : {}),
  };
}

function drawMarks(u: uPlot, marks: readonly PlotMark[]) {
  const ctx = u.ctx;
  const px = uPlot.pxRatio;
  const { top, height } = u.bbox;
  ctx.save();
  ctx.font = `${12 * px}px system-ui, sans-serif`;
  ctx.lineWidth = 2 * px;
  for (const m of marks) {
    const x = u.valToPos(m.x, 'x', true);
    ctx.strokeStyle = ctx.fillStyle = m.color;
    if (m.y !== undefined) {
      const y = u.valToPos(m.y, 'left', true);
      ctx.beginPath();
      ctx.arc(x, y, 6 * px, 0, 2 * Math.PI);
      ctx.stroke();
      ctx.textAlign = 'center';
      ctx.fillText(m.label, x, y - 10 * px);
    } else {
      ctx.setLineDash([4 * px, 3 * px]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.textAlign = 'right';
      ctx.fillText(m.label, x - 4 * px, top + 14 * px);
    }
  }
  ctx.restore();
}

interface Live {
  columns: PlotColumns;
  format: (v: number) => string;
  marks: readonly PlotMark[];
}

function seriesOptions(series: readonly PlotSeries[], live: { current: Live }): uPlot.Series[] {
  const legendValue = (_u: uPlot, _v: number | null, si: number, idx: number | null) => {
    const column = live.current.columns.raw[si]!;
    const shown = idx === null ? lastValue(column) : column[idx];
    return shown === null || shown === undefined ? '—' : live.current.format(shown);
  };
  return series.map((s) => ({
    label: s.axis === 'right' ? `${s.name ?? s.key} (right)` : (s.name ?? s.key),
    scale: s.axis ?? 'left',
    stroke: s.color,
    width: s.width ?? 1.5,
    spanGaps: s.connectNulls ?? false,
    value: legendValue,
    ...(s.dashed ? { dash: [5, 3] } : {}),
    ...(s.dots ? { points: { show: true, size: 6, fill: s.color } } : {}),
    ...(s.area ? { fill: s.area.fill, paths: uPlot.paths.stepped!({ align: 1 }) } : {}),
  }));
}

function options(p: StepPlotProps, width: number, live: { current: Live }): uPlot.Options {
  const areas = p.series.map((s, i) => (s.area ? i + 1 : 0)).filter((i) => i > 0);
  return {
    width,
    height: p.height,
    scales: { x: { time: false, range: stepRange }, left: scale(p.left), ...(p.right ? { right: scale(p.right) } : {}) },
    axes: [
      { scale: 'x', label: p.xLabel, labelFont: FONT, labelSize: 20, font: FONT, stroke: AXIS, incrs: WHOLE_INCREMENTS, grid: { stroke: GRID, dash: [3, 3], width: 1 }, ticks: { stroke: GRID, width: 1 } },
      axis(p.left, 'left', 3),
      ...(p.right ? [axis(p.right, 'right', 1)] : []),
    ],
    series: [
      { label: 'step', value: (_u, v) => String(v ?? lastValue(live.current.columns.raw[0]!) ?? '—') },
      ...seriesOptions(p.series, live),
    ],
    // Each area after the first is filled down to the one below it, not to the axis (areas come first, so series added later keep these places).
    bands: areas.slice(1).map((hi, i) => ({ series: [hi, areas[i]!] as [number, number] })),
    legend: { live: true },
    hooks: { draw: [(u) => drawMarks(u, live.current.marks)] },
  };
}

/**
 * What makes a new plot (its axes and labels). Series come and go on the same plot, and data and
 * marks are a redraw: a plot is made once, before its first point, so a run's steps never wait
 * for a canvas to be made.
 */
const shapeOf = (p: StepPlotProps) => JSON.stringify([p.xLabel, p.left, p.right ?? null, p.height]);

export function StepPlot(p: StepPlotProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const columns = useMemo(() => plotColumns(p.rows, p.series), [p.rows, p.series]);
  const live = useRef<Live>({ columns, format: p.format, marks: p.marks ?? [] });
  live.current = { columns, format: p.format, marks: p.marks ?? [] };
  const shape = shapeOf(p);
  const seriesKey = JSON.stringify(p.series);
  const madeWith = useRef('');
  const marks = JSON.stringify(p.marks ?? []);

  useEffect(() => {
    const el = host.current!;
    const u = new uPlot(options(p, Math.max(1, Math.floor(el.clientWidth)), live), live.current.columns.drawn as uPlot.AlignedData, el);
    plot.current = u;
    madeWith.current = seriesKey;
    const resize = new ResizeObserver(([entry]) => {
      const width = Math.floor(entry!.contentRect.width);
      if (width > 0 && width !== u.width) u.setSize({ width, height: u.height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // The plot is made again only when its shape changes; data and marks reach it below.
  }, [shape]);

  useEffect(() => {
    const u = plot.current;
    if (!u || madeWith.current === seriesKey) return;
    while (u.series.length > 1) u.delSeries(1);
    for (const s of seriesOptions(p.series, live)) u.addSeries(s);
    madeWith.current = seriesKey;
  }, [seriesKey]);
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    // A view zoomed into some steps (a drag) stays while new points arrive; a double-click shows all again.
    const xs = u.data[0];
    const shown = u.scales.x!;
    const zoomed = xs.length > 0 && ((shown.min ?? 0) > 0 || (shown.max ?? 0) < Math.max(1, xs[xs.length - 1]!));
    u.setData(columns.drawn as uPlot.AlignedData, !zoomed);
  }, [columns]);
  useEffect(() => plot.current?.redraw(false), [marks]);

  return (
    <div className="step-plot">
      <div ref={host} />
      {p.rows.length === 0 && p.empty && <div className="plot-empty muted" style={{ height: p.height, left: AXIS_SIZE }}>{p.empty}</div>}
    </div>
  );
}
