import { memo, useDeferredValue, type ReactNode } from 'react';
import { Area, CartesianGrid, ComposedChart, Legend, Line, ReferenceDot, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { REJECT_REASONS } from '../../sage/bank';
import { ROLES } from '../../sage/config';
import type { RunView, StepPoint, ValidationPoint } from '../runView';
import { useLab } from '../store';
import { AXIS, GRID, REJECT_COLORS, ROLE_COLORS, SERIES_COLORS, TOOLTIP_STYLE } from './theme';

const HEIGHT = 250;
const LEGEND_STYLE = { fontSize: 12 };
const MARGIN = { top: 8, right: 16, bottom: 22, left: 8 };

function Frame({ title, testId, points, empty = 'no points yet', children }: { title: string; testId: string; points: number; empty?: string; children: ReactNode }) {
  return (
    <div className="chart-card" data-testid={testId} data-points={points}>
      <h4>{title}</h4>
      {points === 0 ? <div className="chart-empty muted">{empty}</div> : children}
    </div>
  );
}

const stepAxis = (
  <XAxis dataKey="step" type="number" domain={[0, 'dataMax']} allowDecimals={false} stroke={AXIS} label={{ value: 'loop step', position: 'insideBottom', offset: -12, fill: AXIS }} />
);
const yLabel = (value: string) => ({ value, angle: -90, position: 'insideLeft' as const, fill: AXIS, dy: 40, style: { textAnchor: 'middle' as const } });

/** Bank size: seeds and admitted problems stacked, rejections so far by reason on the right axis. */
const BankChart = memo(function BankChart({ steps }: { steps: StepPoint[] }) {
  const data = steps.map((p) => ({ step: p.step, seeds: p.seeds, admitted: p.admitted, ...p.rejected }));
  // Only the reasons that occurred, so the legend stays readable.
  const reasons = REJECT_REASONS.filter((r) => steps.some((p) => p.rejected[r] > 0));
  return (
    <Frame title="Problem bank" testId="chart-bank" points={data.length}>
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <ComposedChart data={data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          {stepAxis}
          <YAxis yAxisId="bank" stroke={AXIS} label={yLabel('problems in bank')} />
          <YAxis yAxisId="rejected" orientation="right" stroke={AXIS} allowDecimals={false} label={{ ...yLabel('rejected (total)'), angle: 90, position: 'insideRight' }} />
          <Tooltip contentStyle={TOOLTIP_STYLE} />
          <Legend verticalAlign="top" height={24} wrapperStyle={LEGEND_STYLE} />
          <Area yAxisId="bank" type="stepAfter" dataKey="seeds" stackId="bank" stroke="#475569" fill="#334155" isAnimationActive={false} />
          <Area yAxisId="bank" type="stepAfter" dataKey="admitted" stackId="bank" stroke="#34d399" fill="#34d39955" isAnimationActive={false} />
          {reasons.map((r) => (
            <Line key={r} yAxisId="rejected" type="linear" dataKey={r} name={`rejected: ${r}`} stroke={REJECT_COLORS[r]} strokeWidth={1.5} strokeDasharray="4 3" dot={false} isAnimationActive={false} />
          ))}
        </ComposedChart>
      </ResponsiveContainer>
    </Frame>
  );
});

/** Held-out accuracy overall and per level (or source), the best point and an early stop marked. */
const ValidationChart = memo(function ValidationChart({ validations, best, earlyStopAt }: { validations: ValidationPoint[]; best: ValidationPoint | null; earlyStopAt: number | null }) {
  const byLevel = validations.some((v) => Object.keys(v.perLevel).length > 1);
  const keys = [...new Set(validations.flatMap((v) => Object.keys(byLevel ? v.perLevel : v.perSource)))].sort();
  const series = keys.length > 1 ? keys : [];
  const data = validations.map((v) => ({
    step: v.step,
    overall: 100 * v.accuracy,
    ...Object.fromEntries(series.map((k) => [byLevel ? `level ${k}` : k, 100 * ((byLevel ? v.perLevel : v.perSource)[k] ?? 0)])),
  }));
  return (
    <Frame title="Validation accuracy (greedy pass@1, held out)" testId="chart-validation" points={data.length}>
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <ComposedChart data={data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          {stepAxis}
          <YAxis stroke={AXIS} domain={[0, 'auto']} unit="%" label={yLabel('accuracy (%)')} />
          <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => `${Number(v).toFixed(1)}%`} />
          <Legend verticalAlign="top" height={24} wrapperStyle={LEGEND_STYLE} />
          <Line type="linear" dataKey="overall" stroke={SERIES_COLORS[0]} strokeWidth={2.5} dot isAnimationActive={false} />
          {series.map((k, i) => (
            <Line key={k} type="linear" dataKey={byLevel ? `level ${k}` : k} stroke={SERIES_COLORS[1 + (i % (SERIES_COLORS.length - 1))]} strokeWidth={1.2} dot={false} isAnimationActive={false} />
          ))}
          {best && <ReferenceDot x={best.step} y={100 * best.accuracy} r={6} fill="none" stroke="#facc15" strokeWidth={2} label={{ value: 'best', position: 'top', fill: '#facc15' }} />}
          {earlyStopAt !== null && <ReferenceLine x={earlyStopAt} stroke="#f87171" strokeDasharray="4 3" label={{ value: 'early stop', fill: '#f87171', position: 'insideTopRight' }} />}
        </ComposedChart>
      </ResponsiveContainer>
    </Frame>
  );
});

const RewardChart = memo(function RewardChart({ steps }: { steps: StepPoint[] }) {
  const data = steps.map((p) => ({ step: p.step, ...p.rewards }));
  const roles = ROLES.filter((r) => steps.some((p) => p.rewards[r] !== undefined));
  return (
    <Frame title="Mean reward per role" testId="chart-rewards" points={data.length}>
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <ComposedChart data={data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          {stepAxis}
          <YAxis stroke={AXIS} domain={[0, 1]} label={yLabel('mean reward')} />
          <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => Number(v).toFixed(3)} />
          <Legend verticalAlign="top" height={24} wrapperStyle={LEGEND_STYLE} />
          {roles.map((r) => (
            <Line key={r} type="linear" dataKey={r} stroke={ROLE_COLORS[r]} strokeWidth={2} dot={false} isAnimationActive={false} />
          ))}
        </ComposedChart>
      </ResponsiveContainer>
    </Frame>
  );
});

const UpdateChart = memo(function UpdateChart({ steps }: { steps: StepPoint[] }) {
  const data = steps.filter((p) => p.loss !== null).map((p) => ({ step: p.step, 'policy loss': p.loss, 'clip fraction': p.clipFraction, 'approx. KL': p.approxKl }));
  return (
    <Frame
      title="Policy update"
      testId="chart-update"
      points={data.length}
      empty={steps.length ? 'no update yet: within every role’s group the rewards were equal, so every advantage was zero' : 'no points yet'}
    >
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <ComposedChart data={data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          {stepAxis}
          <YAxis yAxisId="loss" stroke={AXIS} label={yLabel('policy loss')} />
          <YAxis yAxisId="frac" orientation="right" stroke={AXIS} label={{ ...yLabel('clip fraction, KL (nats)'), angle: 90, position: 'insideRight' }} />
          <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => Number(v).toFixed(4)} />
          <Legend verticalAlign="top" height={24} wrapperStyle={LEGEND_STYLE} />
          <Line yAxisId="loss" type="linear" dataKey="policy loss" stroke="#e6edf3" strokeWidth={2} dot={false} isAnimationActive={false} />
          <Line yAxisId="frac" type="linear" dataKey="clip fraction" stroke="#f472b6" strokeWidth={1.5} dot={false} isAnimationActive={false} />
          <Line yAxisId="frac" type="linear" dataKey="approx. KL" stroke="#22d3ee" strokeWidth={1.5} dot={false} isAnimationActive={false} />
        </ComposedChart>
      </ResponsiveContainer>
    </Frame>
  );
});

const ThroughputChart = memo(function ThroughputChart({ steps }: { steps: StepPoint[] }) {
  const data = steps.map((p) => ({ step: p.step, 'tokens/s': p.tokensPerS, 's/step': p.seconds, 'generation %': 100 * p.generationShare }));
  return (
    <Frame title="Throughput" testId="chart-throughput" points={data.length}>
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <ComposedChart data={data} margin={MARGIN}>
          <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
          {stepAxis}
          <YAxis yAxisId="tok" stroke={AXIS} label={yLabel('tokens/s')} />
          <YAxis yAxisId="s" orientation="right" stroke={AXIS} label={{ ...yLabel('seconds per step'), angle: 90, position: 'insideRight' }} />
          <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => Number(v).toFixed(1)} />
          <Legend verticalAlign="top" height={24} wrapperStyle={LEGEND_STYLE} />
          <Line yAxisId="tok" type="linear" dataKey="tokens/s" stroke="#34d399" strokeWidth={2} dot={false} isAnimationActive={false} />
          <Line yAxisId="s" type="linear" dataKey="s/step" stroke="#f59e0b" strokeWidth={1.5} dot={false} isAnimationActive={false} />
        </ComposedChart>
      </ResponsiveContainer>
    </Frame>
  );
});

/** The live charts of the run, a point per step (validation: per evaluation). */
export function RunCharts() {
  // Drawn in an interruptible background render: a new point never blocks the page for a whole redraw.
  const run: RunView = useDeferredValue(useLab((s) => s.run));
  const earlyStopAt = run.endReason === 'early-stop' ? (run.steps[run.steps.length - 1]?.step ?? null) : null;
  return (
    <section className="panel wide charts" data-testid="run-charts">
      <ValidationChart validations={run.validations} best={run.best} earlyStopAt={earlyStopAt} />
      <BankChart steps={run.steps} />
      <RewardChart steps={run.steps} />
      <UpdateChart steps={run.steps} />
      <ThroughputChart steps={run.steps} />
    </section>
  );
}
