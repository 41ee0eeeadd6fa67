import { memo, useDeferredValue, useMemo, type ReactNode } from 'react';
import { Area, CartesianGrid, ComposedChart, Legend, Line, ReferenceDot, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { REJECT_REASONS } from '../../sage/bank';
import { ROLES } from '../../sage/config';
import { useShallow } from 'zustand/react/shallow';
import { runLabel } from '../runHistory';
import type { RunView, StepPoint, ValidationPoint } from '../runView';
import { useLab } from '../store';
import { AXIS, GRID, overlayColor, REJECT_COLORS, ROLE_COLORS, SERIES_COLORS, TOOLTIP_STYLE } from './theme';

const HEIGHT = 250;
const LEGEND_STYLE = { fontSize: 12 };
const MARGIN = { top: 8, right: 16, bottom: 22, left: 8 };

function Frame({ title, testId, points, empty = 'no points yet', children }: { title: string; testId: string; points: number; empty?: string | undefined; children: ReactNode }) {
  return (
    <div className="chart-card" data-testid={testId} data-points={points}>
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

/** One chart over loop steps: a left axis, an optional right one, the series as children (yAxisId 'left' or 'right'). */
function StepChart(p: { title: string; testId: string; data: object[]; empty?: string; left: Axis; right?: Axis; format: (v: number) => string; children: ReactNode }) {
  return (
    <Frame title={p.title} testId={p.testId} points={p.data.length} empty={p.empty}>
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <ComposedChart data={p.data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          <XAxis dataKey="step" type="number" domain={[0, 'dataMax']} allowDecimals={false} stroke={AXIS} label={{ value: 'loop step', position: 'insideBottom', offset: -12, fill: AXIS }} />
          <YAxis yAxisId="left" stroke={AXIS} domain={p.left.domain} unit={p.left.unit} label={yLabel(p.left.label, 'left')} />
          {p.right && <YAxis yAxisId="right" orientation="right" stroke={AXIS} domain={p.right.domain} unit={p.right.unit} label={yLabel(p.right.label, 'right')} />}
          <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => p.format(Number(v))} />
          <Legend verticalAlign="top" height={24} wrapperStyle={LEGEND_STYLE} />
          {p.children}
        </ComposedChart>
      </ResponsiveContainer>
    </Frame>
  );
}

const line = (key: string, axis: 'left' | 'right', color: string, width = 1.5, dashed = false) => (
  <Line key={key} yAxisId={axis} type="linear" dataKey={key} stroke={color} strokeWidth={width} strokeDasharray={dashed ? '4 3' : undefined} dot={false} isAnimationActive={false} />
);

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

const overlayLines = (overlays: readonly Overlay[]) =>
  overlays.map((o, i) => (
    <Line key={`overlay${i}`} yAxisId="left" type="linear" dataKey={`overlay${i}`} name={o.label} stroke={o.color} strokeWidth={1.8} strokeDasharray="6 3" dot={{ r: 2 }} connectNulls isAnimationActive={false} />
  ));

/** Bank size: seeds and admitted problems stacked, rejections so far by reason on the right axis. */
const BankChart = memo(function BankChart({ steps, overlays }: { steps: StepPoint[]; overlays: Overlay[] }) {
  const rows = steps.map((p) => ({ step: p.step, seeds: p.seeds, admitted: p.admitted, ...Object.fromEntries(REJECT_REASONS.map((r) => [`rejected: ${r}`, p.rejected[r]])) }));
  // Only the reasons that occurred, so the legend stays readable.
  const reasons = REJECT_REASONS.filter((r) => steps.some((p) => p.rejected[r] > 0));
  const data = withOverlays(rows, overlays);
  return (
    <StepChart title="Problem bank" testId="chart-bank" data={data} left={{ label: 'problems in bank' }} right={{ label: 'rejected (total)' }} format={(v) => v.toFixed(0)}>
      <Area yAxisId="left" type="stepAfter" dataKey="seeds" stackId="bank" stroke="#475569" fill="#334155" isAnimationActive={false} />
      <Area yAxisId="left" type="stepAfter" dataKey="admitted" stackId="bank" stroke="#34d399" fill="#34d39955" isAnimationActive={false} />
      {reasons.map((r) => line(`rejected: ${r}`, 'right', REJECT_COLORS[r], 1.5, true))}
      {overlayLines(overlays)}
    </StepChart>
  );
});

/** Held-out accuracy overall and per level (or source), the best point and an early stop marked. */
const ValidationChart = memo(function ValidationChart(p: { validations: ValidationPoint[]; best: ValidationPoint | null; earlyStopAt: number | null; overlays: Overlay[] }) {
  const { validations, best, earlyStopAt, overlays } = p;
  const byLevel = validations.some((v) => Object.keys(v.perLevel).length > 1);
  const keys = [...new Set(validations.flatMap((v) => Object.keys(byLevel ? v.perLevel : v.perSource)))].sort();
  const series = keys.length > 1 ? keys : [];
  const name = (k: string) => (byLevel ? `level ${k}` : k);
  const rows = validations.map((v) => ({
    step: v.step,
    overall: 100 * v.accuracy,
    ...Object.fromEntries(series.map((k) => [name(k), 100 * ((byLevel ? v.perLevel : v.perSource)[k] ?? 0)])),
  }));
  const data = withOverlays(rows, overlays);
  return (
    <StepChart title="Validation accuracy (greedy pass@1, held out)" testId="chart-validation" data={data} left={{ label: 'accuracy (%)', domain: [0, 'auto'], unit: '%' }} format={(v) => `${v.toFixed(1)}%`}>
      <Line yAxisId="left" type="linear" dataKey="overall" stroke={SERIES_COLORS[0]} strokeWidth={2.5} dot isAnimationActive={false} />
      {series.map((k, i) => line(name(k), 'left', SERIES_COLORS[1 + (i % (SERIES_COLORS.length - 1))]!, 1.2))}
      {best && <ReferenceDot yAxisId="left" x={best.step} y={100 * best.accuracy} r={6} fill="none" stroke="#facc15" strokeWidth={2} label={{ value: 'best', position: 'top', fill: '#facc15' }} />}
      {overlayLines(overlays)}
      {earlyStopAt !== null && <ReferenceLine yAxisId="left" x={earlyStopAt} stroke="#f87171" strokeDasharray="4 3" label={{ value: 'early stop', fill: '#f87171', position: 'insideTopRight' }} />}
    </StepChart>
  );
});

const RewardChart = memo(function RewardChart({ steps }: { steps: StepPoint[] }) {
  const data = steps.map((p) => ({ step: p.step, ...p.rewards }));
  const roles = ROLES.filter((r) => steps.some((p) => p.rewards[r] !== undefined));
  return (
    <StepChart title="Mean reward per role" testId="chart-rewards" data={data} left={{ label: 'mean reward', domain: [0, 1] }} format={(v) => v.toFixed(3)}>
      {roles.map((r) => line(r, 'left', ROLE_COLORS[r], 2))}
    </StepChart>
  );
});

const UpdateChart = memo(function UpdateChart({ steps }: { steps: StepPoint[] }) {
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
    >
      {line('policy loss', 'left', '#e6edf3', 2)}
      {line('clip fraction', 'right', '#f472b6')}
      {line('approx. KL', 'right', '#22d3ee')}
    </StepChart>
  );
});

const ThroughputChart = memo(function ThroughputChart({ steps }: { steps: StepPoint[] }) {
  const data = steps.map((p) => ({ step: p.step, 'tokens/s': p.tokensPerS, 's/step': p.seconds }));
  return (
    <StepChart title="Throughput" testId="chart-throughput" data={data} left={{ label: 'tokens/s' }} right={{ label: 'seconds per step' }} format={(v) => v.toFixed(1)}>
      {line('tokens/s', 'left', '#34d399', 2)}
      {line('s/step', 'right', '#f59e0b')}
    </StepChart>
  );
});

/** The live charts of the run, a point per step (validation: per evaluation). */
export function RunCharts() {
  // Drawn in an interruptible background render: a new point never blocks the page for a whole redraw.
  const run: RunView = useDeferredValue(useLab((s) => s.run));
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
