import { lazy, Suspense, useEffect } from 'react';
import { DevicePanel } from './DevicePanel';
import { GeneratePanel } from './GeneratePanel';
import { ModelPanel } from './ModelPanel';
import { BankTable } from './run/BankTable';
import { EvaluatePanel } from './run/EvaluatePanel';
import { FirstVisit } from './run/FirstVisit';
import { ModelChoice } from './run/ModelChoice';
import { RunControls } from './run/RunControls';
import { RunsPanel } from './run/RunsPanel';
import { SeedsPanel } from './run/SeedsPanel';
import { SettingsPanel } from './run/SettingsPanel';
import { Transcripts } from './run/Transcripts';
import { isActive } from './runView';
import { SelfCheckPanel } from './SelfCheckPanel';
import { useLab } from './store';

// Charts load with the panels that draw them, not with the first paint.
const RunCharts = lazy(() => import('./run/RunCharts').then((m) => ({ default: m.RunCharts })));
const TrainCheckPanel = lazy(() => import('./TrainCheckPanel').then((m) => ({ default: m.TrainCheckPanel })));
const SftPanel = lazy(() => import('./SftPanel').then((m) => ({ default: m.SftPanel })));

export function App() {
  const connect = useLab((s) => s.connect);
  const runSelfCheck = useLab((s) => s.runSelfCheck);
  const deviceError = useLab((s) => s.deviceError);
  const loadShipped = useLab((s) => s.loadShippedProblems);
  // Once a run is under way or has steps to show, its charts follow its controls: the set-up, fixed for the run, moves below them.
  const runShown = useLab((s) => isActive(s.run.status) || s.run.steps.length > 0);
  useEffect(() => {
    void connect().then(() => {
      const s = useLab.getState();
      if (!s.device) return;
      void runSelfCheck();
      void s.checkAutosave();
      // The demo curriculum, unless the user already chose seeds.
      if (!s.seedReport && !s.problemsBusy.seeds) void loadShipped('curriculum-500.jsonl');
    });
  }, [connect, runSelfCheck, loadShipped]);
  const charts = (
    <Suspense fallback={<section className="panel wide muted">loading charts …</section>}>
      <RunCharts />
    </Suspense>
  );
  return (
    <div className="app">
      <header>
        <h1>SAGE Lab</h1>
        <p className="muted">
          One small model as four agents (Challenger · Planner · Solver · Critic) that pose, plan, solve and judge problems and train
          themselves with reinforcement learning, on this machine's GPU.
        </p>
      </header>
      {deviceError && <DevicePanel />}
      <main>
        <FirstVisit />
        <RunControls />
        {runShown && charts}
        {/* Before a run, the set-up before the charts: a first visitor meets what Start will use before charts that are empty until it runs. */}
        <SeedsPanel />
        <ModelChoice />
        <EvaluatePanel />
        <SettingsPanel />
        {!runShown && charts}
        <Transcripts />
        <BankTable />
        <RunsPanel />
      </main>
      <details className="engine" data-testid="engine-section">
        <summary>Engine: device, kernel self-check, training check, supervised fine-tuning, sampling</summary>
        <div className="engine-grid">
          {!deviceError && <DevicePanel />}
          <SelfCheckPanel />
          <ModelPanel />
          <Suspense fallback={null}>
            <TrainCheckPanel />
            <SftPanel />
          </Suspense>
          <GeneratePanel />
        </div>
      </details>
    </div>
  );
}
