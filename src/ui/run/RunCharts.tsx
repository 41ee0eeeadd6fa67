import { memo, useMemo, type ReactNode } from 'react';
import { REJECT_REASONS } from '../../sage/bank';
import { ROLES } from '../../sage/config';
import { useShallow } from 'zustand/react/shallow';
import { StepPlot, type PlotAxis, type PlotMark } from '../chart/StepPlot';
import { overlaySeries, withOverlays, type Overlay, type PlotRow, type PlotSeries } from '../chart/plotData';
import { runLabel } from '../runHistory';
import type { RunView, StepPoint, ValidationPoint } from '../runView';
import { useLab } from '../store';
import { overlayColor, REJECT_COLORS, ROLE_COLORS, SERIES_COLORS } from './theme';

const HEIGHT = 250;

/** One chart over loop steps: its title, what rising or falling means in plain words, and its plot (a note over it until it has points). */
function StepChart(p: { title: string; reading: string; testId: string; rows: PlotRow[]; empty?: string | undefined; left: PlotAxis; right?: PlotAxis; format: (v: number) => string; series: readonly PlotSeries[]; marks?: readonly PlotMark[] }): ReactNode {
  return (
    <div className="chart-card" data-testid={p.testId} data-points={p.rows.length}>
      <h4>{p.title}</h4>
      <p className="chart-reading">{p.reading}</p>
      <StepPlot rows={p.rows} series={p.series} xLabel="loop step" left={p.left} right={p.right} format={p.format} marks={p.marks ?? []} height={HEIGHT} empty={p.empty ?? 'no points yet'} />
    </div>
  );
}

/** Bank size: seeds and admitted problems stacked; rejections so far stacked by reason on the right axis (the top line their total). */
const BankChart = memo(function BankChart({ steps, overlays }: { steps: StepPoint[]; overlays: Overlay[] }) {
  const rows = steps.map((p) => ({ step: p.step, seeds: p.seeds, admitted: p.admitted, ...Object.fromEntries(REJECT_REASONS.map((r) => [`rejected: ${r}`, p.rejected[r]])) }));
  // Only the reasons that occurred, so the legend stays readable.
  const reasons = REJECT_REASONS.filter((r) => steps.some((p) => p.rejected[r] > 0));
  const series: PlotSeries[] = [
    { key: 'seeds', color: '#475569', area: { fill: '#334155' }, stack: 'bank' },
    { key: 'admitted', color: '#34d399', area: { fill: '#34d39955' }, stack: 'bank' },
    ...reasons.map((r): PlotSeries => ({ key: `rejected: ${r}`, axis: 'right', color: REJECT_COLORS[r], dashed: true, stack: 'rejected' })),
    ...overlaySeries(overlays),
  ];
  return <StepChart title="Problem bank" reading="Rising: the Challenger’s problems pass the checks and join the bank. Rising dashed lines (right axis): more of what it writes is refused, by reason." testId="chart-bank" rows={withOverlays(rows, overlays)} left={{ label: 'problems in bank', integer: true }} right={{ label: 'rejected (stacked by reason)', min: 0, integer: true }} format={(v) => v.toFixed(0)} series={series} />;
});

/** Held-out accuracy overall and per level (or source), the best point and an early stop marked. */
const ValidationChart = memo(function ValidationChart({ validations, best, earlyStopAt, overlays }: { validations: ValidationPoint[]; best: ValidationPoint | null; earlyStopAt: number | null; overlays: Overlay[] }) {
  const byLevel = validations.some((v) => Object.keys(v.perLevel).length > 1);
  const keys = [...new Set(validations.flatMap((v) => Object.keys(byLevel ? v.perLevel : v.perSource)))].sort();
  const parts = keys.length > 1 ? keys : [];
  const name = (k: string) => (byLevel ? `level ${k}` : k);
  const planned = validations.some((v) => v.planned !== null);
  const rows = validations.map((v) => ({
    step: v.step,
    overall: 100 * v.accuracy,
    ...(planned && v.planned !== null ? { 'with plans': 100 * v.planned } : {}),
    ...Object.fromEntries(parts.map((k) => [name(k), 100 * ((byLevel ? v.perLevel : v.perSource)[k] ?? 0)])),
  }));
  const series: PlotSeries[] = [
    { key: 'overall', color: SERIES_COLORS[0]!, width: 2.5, dots: true },
    // The method's own inference mode: the Planner's plan shown when the Critic passes it.
    ...(planned ? [{ key: 'with plans', color: '#facc15', width: 2.5, dots: true, dashed: true } satisfies PlotSeries] : []),
    ...parts.map((k, i): PlotSeries => ({ key: name(k), color: SERIES_COLORS[1 + (i % (SERIES_COLORS.length - 1))]!, width: 1.2 })),
    ...overlaySeries(overlays),
  ];
  const marks: PlotMark[] = [
    ...(best ? [{ x: best.step, y: 100 * (best.planned ?? best.accuracy), label: 'best', color: '#facc15' }] : []),
    ...(earlyStopAt !== null ? [{ x: earlyStopAt, label: 'early stop', color: '#f87171' }] : []),
  ];
  return (
    <StepChart
      title="Validation accuracy (greedy pass@1 on held-out problems)"
      reading="Rising: the model solves more problems it never trained on. Overall and per level: the Solver alone; “with plans”: with the Planner’s plan the Critic passed."
      testId="chart-validation"
      rows={withOverlays(rows, overlays)}
      left={{ label: 'accuracy (%)', min: 0, unit: '%' }}
      format={(v) => `${v.toFixed(1)}%`}
      series={series}
      marks={marks}
    />
  );
});

const AUC_SERIES: PlotSeries[] = [
  { key: 'problems: real vs corrupted', color: '#a78bfa', width: 2, dots: true },
  { key: 'plans: own vs wrong', color: '#f472b6', width: 2, dots: true },
  { key: 'answers: right vs wrong', color: '#38bdf8', width: 2, dots: true },
];

/** The Critic's discrimination at each validation: 0.5 is a Critic that scores everything alike. */
const CriticChart = memo(function CriticChart({ validations }: { validations: ValidationPoint[] }) {
  const rows = validations
    .filter((v) => v.problemAuc !== null || v.planAuc !== null || v.answerAuc !== null)
    .map((v) => ({
      step: v.step,
      ...(v.problemAuc !== null ? { 'problems: real vs corrupted': v.problemAuc } : {}),
      ...(v.planAuc !== null ? { 'plans: own vs wrong': v.planAuc } : {}),
      ...(v.answerAuc !== null ? { 'answers: right vs wrong': v.answerAuc } : {}),
    }));
  return (
    <StepChart
      title="Critic discrimination (AUC on held-out pairs)"
      reading="Rising towards 1: the Critic tells real problems from corrupted ones, a problem’s own plan from a wrong one, and (as MAE’s Judge) a right answer from a wrong one. At 0.5 it is guessing."
      testId="chart-critic"
      rows={rows}
      empty={validations.length ? 'this method has no Critic' : undefined}
      left={{ label: 'AUC', min: 0, max: 1 }}
      format={(v) => v.toFixed(2)}
      series={AUC_SERIES}
    />
  );
});

/** Whether the update has anything to learn from: groups with no reward spread per role, and how much of the Solver's batch was generated. */
const SignalChart = memo(function SignalChart({ steps }: { steps: StepPoint[] }) {
  const roles = ROLES.filter((r) => steps.some((p) => p.zeroSpread[r] !== undefined));
  const rows = steps.map((p) => ({
    step: p.step,
    ...Object.fromEntries(roles.filter((r) => p.zeroSpread[r] !== undefined).map((r) => [`${r}: no spread`, 100 * p.zeroSpread[r]!])),
    ...(p.generatedShare !== null ? { 'Solver on generated problems': 100 * p.generatedShare } : {}),
    ...(p.plansRight !== null ? { 'plans computing the answer': 100 * p.plansRight } : {}),
  }));
  const series: PlotSeries[] = [
    ...roles.map((r): PlotSeries => ({ key: `${r}: no spread`, color: ROLE_COLORS[r], width: 1.5 })),
    { key: 'Solver on generated problems', color: '#34d399', width: 2.5, dashed: true },
    ...(steps.some((p) => p.plansRight !== null) ? [{ key: 'plans computing the answer', color: '#a78bfa', width: 2.5, dashed: true }] : []),
  ];
  return <StepChart title="Learning signal" reading="Falling “no spread” lines: more groups of samples differ in reward, so the update has something to learn from (equal rewards teach nothing). Rising dashed lines: the Solver trains more on generated problems; more plans compute the answer." testId="chart-signal" rows={rows} left={{ label: '%', min: 0, max: 100, unit: '%' }} format={(v) => `${v.toFixed(0)}%`} series={series} />;
});

const RewardChart = memo(function RewardChart({ steps }: { steps: StepPoint[] }) {
  const rows = steps.map((p) => ({ step: p.step, ...p.rewards }));
  const series = ROLES.filter((r) => steps.some((p) => p.rewards[r] !== undefined)).map((r): PlotSeries => ({ key: r, color: ROLE_COLORS[r], width: 2 }));
  return <StepChart title="Mean reward per role" reading="Rising: a role earns more of its reward. For the Solver, more right answers; for the Challenger, valid problems the Solver finds hard, so its line can fall as the Solver improves." testId="chart-rewards" rows={rows} left={{ label: 'mean reward', min: 0, max: 1 }} format={(v) => v.toFixed(3)} series={series} />;
});

const UPDATE_SERIES: PlotSeries[] = [
  { key: 'policy loss', color: '#e6edf3', width: 2 },
  { key: 'clip fraction', axis: 'right', color: '#f472b6' },
  { key: 'approx. KL', axis: 'right', color: '#22d3ee' },
];

const UpdateChart = memo(function UpdateChart({ steps }: { steps: StepPoint[] }) {
  const rows = steps.filter((p) => p.loss !== null).map((p) => ({ step: p.step, 'policy loss': p.loss, 'clip fraction': p.clipFraction, 'approx. KL': p.approxKl }));
  return (
    <StepChart
      title="Policy update"
      reading="Rising clip fraction or KL: each update moves the model further from the one that sampled (high values: unstable steps); near 0: it barely moves."
      testId="chart-update"
      rows={rows}
      empty={steps.length ? 'no update yet: within every role’s group the rewards were equal, so every advantage was zero' : undefined}
      left={{ label: 'policy loss' }}
      right={{ label: 'clip fraction, KL (nats)' }}
      format={(v) => v.toFixed(4)}
      series={UPDATE_SERIES}
    />
  );
});

const THROUGHPUT_SERIES: PlotSeries[] = [
  { key: 'tokens/s', color: '#34d399', width: 2 },
  { key: 's/step', axis: 'right', color: '#f59e0b' },
];

const ThroughputChart = memo(function ThroughputChart(p: { steps: StepPoint[] }) {
  const rows = p.steps.map((p) => ({ step: p.step, 'tokens/s': p.tokensPerS, 's/step': p.seconds }));
  return <StepChart title="Throughput" reading="Rising tokens/s, falling seconds a step: faster. Seconds a step also rise when the roles write longer outputs." testId="chart-throughput" rows={rows} left={{ label: 'tokens/s' }} right={{ label: 'seconds per step' }} format={(v) => v.toFixed(1)} series={THROUGHPUT_SERIES} />;
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
      <CriticChart validations={run.validations} />
      <SignalChart steps={run.steps} />
      <RewardChart steps={run.steps} />
      <UpdateChart steps={run.steps} />
      <ThroughputChart steps={run.steps} />
    </section>
  );
}
