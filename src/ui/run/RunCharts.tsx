import { memo, useCallback, useEffect, useMemo, useState, type ReactNode, type Ref, type RefCallback } from 'react';
import { Area, CartesianGrid, ComposedChart, Line, ReferenceDot, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts';
import { REJECT_REASONS } from '../../sage/bank';
import { ROLES } from '../../sage/config';
import { useShallow } from 'zustand/react/shallow';
import { runLabel } from '../runHistory';
import type { RunView, StepPoint, ValidationPoint } from '../runView';
import { useLab } from '../store';
import { AXIS, GRID, overlayColor, REJECT_COLORS, ROLE_COLORS, SERIES_COLORS, TOOLTIP_STYLE } from './theme';

const HEIGHT = 250;
const MARGIN = { top: 8, right: 16, bottom: 22, left: 8 };

function Frame({ title, testId, points, empty = 'no points yet', children, ref }: { title: string; testId: string; points: number; empty?: string | undefined; children: ReactNode; ref?: Ref<HTMLDivElement> }) {
  return (
    <div className="chart-card" data-testid={testId} data-points={points} ref={ref}>
      <h4>{title}</h4>
      {points === 0 ? <div className="chart-empty muted">{empty}</div> : children}
    </div>
  );
}

const yLabel = (value: string, side: 'left' | 'right') => ({
  value,
  angle: side === 'left' ? -90 : 90,
  position: side === 'left' ? ('insideLeft' as const) : ('insideRight' as const),
  fill: AXIS,
  style: { textAnchor: 'middle' as const },
});

interface Axis {
  label: string;
  domain?: [number | 'auto' | 'dataMin', number | 'auto' | 'dataMax'];
  unit?: string;
}

/**
 * The width of the element the callback ref is put on, followed with a ResizeObserver: a chart
 * drawn at a known width does not measure its container (a forced layout) on every redraw.
 */
function useWidth(): [RefCallback<HTMLDivElement>, number] {
  const [width, setWidth] = useState(0);
  const ref = useCallback((el: HTMLDivElement | null) => {
    if (!el) return;
    const observer = new ResizeObserver(([entry]) => setWidth(Math.floor(entry!.contentRect.width)));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

/**
 * The value, handed on `slot` × 60 ms after it changes, in a task of its own: the charts then
 * redraw one after another, none holding the page for all of them.
 */
function useStaggered<T>(value: T, slot: number): T {
  const [shown, setShown] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setShown(value), slot * 60);
    return () => clearTimeout(t);
  }, [value, slot]);
  return shown;
}

/** A series of a step chart: drawn by the chart and listed in its legend. */
interface Series {
  key: string;
  /** In the legend and tooltip (the key when absent). */
  name?: string;
  axis?: 'left' | 'right';
  color: string;
  width?: number;
  dashed?: boolean;
  dots?: boolean;
  /** Stacked areas (the bank's seeds and admitted problems). */
  area?: { fill: string };
  /** Drawn across steps it has no point at (a kept run's points fall between this run's). */
  connectNulls?: boolean;
}

function drawSeries(x: Series) {
  const common = { yAxisId: x.axis ?? 'left', dataKey: x.key, name: x.name ?? x.key, stroke: x.color, isAnimationActive: false };
  if (x.area) return <Area key={x.key} {...common} type="stepAfter" stackId="stack" fill={x.area.fill} />;
  return (
    <Line
      key={x.key}
      {...common}
      type="linear"
      strokeWidth={x.width ?? 1.5}
      strokeDasharray={x.dashed ? '5 3' : undefined}
      dot={x.dots ? { r: 2.5 } : false}
      connectNulls={x.connectNulls ?? false}
    />
  );
}

/** The legend in HTML above the chart: it wraps instead of overlapping, and costs the chart no measuring. */
function ChartLegend({ series }: { series: readonly Series[] }) {
  return (
    <ul className="chart-legend">
      {series.map((x) => (
        <li key={x.key}>
          <span className={`key${x.dashed ? ' dashed' : ''}${x.area ? ' area' : ''}`} style={x.area ? { background: x.area.fill, borderColor: x.color } : { borderColor: x.color }} />
          {x.name ?? x.key}
          {x.axis === 'right' && <span className="muted"> (right)</span>}
        </li>
      ))}
    </ul>
  );
}

/** One chart over loop steps: a left axis, an optional right one, its series, and marks (reference dots and lines) as children. */
function StepChart(p: { title: string; testId: string; data: object[]; empty?: string; left: Axis; right?: Axis; format: (v: number) => string; series: readonly Series[]; children?: ReactNode }) {
  const [ref, width] = useWidth();
  return (
    <Frame title={p.title} testId={p.testId} points={p.data.length} empty={p.empty} ref={ref}>
      <ChartLegend series={p.series} />
      {width > 0 && (
        <ComposedChart width={width} height={HEIGHT} data={p.data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          <XAxis dataKey="step" type="number" domain={[0, 'dataMax']} allowDecimals={false} stroke={AXIS} label={{ value: 'loop step', position: 'insideBottom', offset: -12, fill: AXIS }} />
          <YAxis yAxisId="left" stroke={AXIS} domain={p.left.domain} unit={p.left.unit} label={yLabel(p.left.label, 'left')} />
          {p.right && <YAxis yAxisId="right" orientation="right" stroke={AXIS} domain={p.right.domain} unit={p.right.unit} label={yLabel(p.right.label, 'right')} />}
          <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => p.format(Number(v))} />
          {p.series.map(drawSeries)}
          {p.children}
        </ComposedChart>
      )}
    </Frame>
  );
}

/** A kept run drawn over a chart: its label, colour and points. */
interface Overlay {
  label: string;
  color: string;
  points: { step: number; value: number }[];
}

/**
 * The chart's rows with each overlay's points merged in by step (keys `overlay0`, … since a
 * run's label holds dots, which recharts would read as a path).
 */
function withOverlays(rows: ({ step: number } & Record<string, number | null>)[], overlays: readonly Overlay[]) {
  const byStep = new Map(rows.map((r) => [r.step, { ...r }]));
  overlays.forEach((o, i) => {
    for (const p of o.points) {
      const row = byStep.get(p.step) ?? { step: p.step };
      row[`overlay${i}`] = p.value;
      byStep.set(p.step, row);
    }
  });
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

const overlaySeries = (overlays: readonly Overlay[]): Series[] =>
  overlays.map((o, i) => ({ key: `overlay${i}`, name: o.label, color: o.color, width: 1.8, dashed: true, dots: true, connectNulls: true }));

/** Bank size: seeds and admitted problems stacked, rejections so far by reason on the right axis. */
const BankChart = memo(function BankChart(p: { steps: StepPoint[]; overlays: Overlay[] }) {
  const { steps, overlays } = useStaggered(p, 1);
  const rows = steps.map((p) => ({ step: p.step, seeds: p.seeds, admitted: p.admitted, ...Object.fromEntries(REJECT_REASONS.map((r) => [`rejected: ${r}`, p.rejected[r]])) }));
  // Only the reasons that occurred, so the legend stays readable.
  const reasons = REJECT_REASONS.filter((r) => steps.some((p) => p.rejected[r] > 0));
  const series: Series[] = [
    { key: 'seeds', color: '#475569', area: { fill: '#334155' } },
    { key: 'admitted', color: '#34d399', area: { fill: '#34d39955' } },
    ...reasons.map((r): Series => ({ key: `rejected: ${r}`, axis: 'right', color: REJECT_COLORS[r], dashed: true })),
    ...overlaySeries(overlays),
  ];
  return <StepChart title="Problem bank" testId="chart-bank" data={withOverlays(rows, overlays)} left={{ label: 'problems in bank' }} right={{ label: 'rejected (total)' }} format={(v) => v.toFixed(0)} series={series} />;
});

/** Held-out accuracy overall and per level (or source), the best point and an early stop marked. */
const ValidationChart = memo(function ValidationChart(p: { validations: ValidationPoint[]; best: ValidationPoint | null; earlyStopAt: number | null; overlays: Overlay[] }) {
  const { validations, best, earlyStopAt, overlays } = useStaggered(p, 0);
  const byLevel = validations.some((v) => Object.keys(v.perLevel).length > 1);
  const keys = [...new Set(validations.flatMap((v) => Object.keys(byLevel ? v.perLevel : v.perSource)))].sort();
  const parts = keys.length > 1 ? keys : [];
  const name = (k: string) => (byLevel ? `level ${k}` : k);
  const rows = validations.map((v) => ({
    step: v.step,
    overall: 100 * v.accuracy,
    ...Object.fromEntries(parts.map((k) => [name(k), 100 * ((byLevel ? v.perLevel : v.perSource)[k] ?? 0)])),
  }));
  const series: Series[] = [
    { key: 'overall', color: SERIES_COLORS[0]!, width: 2.5, dots: true },
    ...parts.map((k, i): Series => ({ key: name(k), color: SERIES_COLORS[1 + (i % (SERIES_COLORS.length - 1))]!, width: 1.2 })),
    ...overlaySeries(overlays),
  ];
  return (
    <StepChart title="Validation accuracy (greedy pass@1, held out)" testId="chart-validation" data={withOverlays(rows, overlays)} left={{ label: 'accuracy (%)', domain: [0, 'auto'], unit: '%' }} format={(v) => `${v.toFixed(1)}%`} series={series}>
      {best && <ReferenceDot yAxisId="left" x={best.step} y={100 * best.accuracy} r={6} fill="none" stroke="#facc15" strokeWidth={2} label={{ value: 'best', position: 'top', fill: '#facc15' }} />}
      {earlyStopAt !== null && <ReferenceLine yAxisId="left" x={earlyStopAt} stroke="#f87171" strokeDasharray="4 3" label={{ value: 'early stop', fill: '#f87171', position: 'insideTopRight' }} />}
    </StepChart>
  );
});

const RewardChart = memo(function RewardChart(p: { steps: StepPoint[] }) {
  const steps = useStaggered(p.steps, 2);
  const data = steps.map((p) => ({ step: p.step, ...p.rewards }));
  const series = ROLES.filter((r) => steps.some((p) => p.rewards[r] !== undefined)).map((r): Series => ({ key: r, color: ROLE_COLORS[r], width: 2 }));
  return <StepChart title="Mean reward per role" testId="chart-rewards" data={data} left={{ label: 'mean reward', domain: [0, 1] }} format={(v) => v.toFixed(3)} series={series} />;
});

const UPDATE_SERIES: Series[] = [
  { key: 'policy loss', color: '#e6edf3', width: 2 },
  { key: 'clip fraction', axis: 'right', color: '#f472b6' },
  { key: 'approx. KL', axis: 'right', color: '#22d3ee' },
];

const UpdateChart = memo(function UpdateChart(p: { steps: StepPoint[] }) {
  const steps = useStaggered(p.steps, 3);
  const data = steps.filter((p) => p.loss !== null).map((p) => ({ step: p.step, 'policy loss': p.loss, 'clip fraction': p.clipFraction, 'approx. KL': p.approxKl }));
  return (
    <StepChart
      title="Policy update"
      testId="chart-update"
      data={data}
      empty={steps.length ? 'no update yet: within every role’s group the rewards were equal, so every advantage was zero' : undefined}
      left={{ label: 'policy loss' }}
      right={{ label: 'clip fraction, KL (nats)' }}
      format={(v) => v.toFixed(4)}
      series={UPDATE_SERIES}
    />
  );
});

const THROUGHPUT_SERIES: Series[] = [
  { key: 'tokens/s', color: '#34d399', width: 2 },
  { key: 's/step', axis: 'right', color: '#f59e0b' },
];

const ThroughputChart = memo(function ThroughputChart(p: { steps: StepPoint[] }) {
  const steps = useStaggered(p.steps, 4);
  const data = steps.map((p) => ({ step: p.step, 'tokens/s': p.tokensPerS, 's/step': p.seconds }));
  return <StepChart title="Throughput" testId="chart-throughput" data={data} left={{ label: 'tokens/s' }} right={{ label: 'seconds per step' }} format={(v) => v.toFixed(1)} series={THROUGHPUT_SERIES} />;
});

/** The live charts of the run, a point per step (validation: per evaluation). */
export function RunCharts() {
  const run: RunView = useLab((s) => s.run);
  const earlyStopAt = run.endReason === 'early-stop' ? (run.steps[run.steps.length - 1]?.step ?? null) : null;
  const kept = useLab(useShallow((s) => s.overlay.map((id) => s.runs.find((r) => r.id === id)).filter((r) => r !== undefined)));
  const accuracyOverlays = useMemo(() => kept.map((r, i) => ({ label: runLabel(r), color: overlayColor(i), points: r.validations.map((v) => ({ step: v.step, value: 100 * v.accuracy })) })), [kept]);
  const bankOverlays = useMemo(() => kept.map((r, i) => ({ label: `bank: ${runLabel(r)}`, color: overlayColor(i), points: r.bank.map((b) => ({ step: b.step, value: b.size })) })), [kept]);
  return (
    <section className="panel wide charts" data-testid="run-charts">
      <ValidationChart validations={run.validations} best={run.best} earlyStopAt={earlyStopAt} overlays={accuracyOverlays} />
      <BankChart steps={run.steps} overlays={bankOverlays} />
      <RewardChart steps={run.steps} />
      <UpdateChart steps={run.steps} />
      <ThroughputChart steps={run.steps} />
    </section>
  );
}
