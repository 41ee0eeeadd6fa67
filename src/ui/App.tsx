import { lazy, Suspense, useEffect } from 'react';
import { DevicePanel } from './DevicePanel';
import { GeneratePanel } from './GeneratePanel';
import { ModelPanel } from './ModelPanel';
import { SelfCheckPanel } from './SelfCheckPanel';
import { useLab } from './store';

// Charts (recharts) load with the panel that draws them, not with the first paint.
const TrainCheckPanel = lazy(() => import('./TrainCheckPanel').then((m) => ({ default: m.TrainCheckPanel })));
const SftPanel = lazy(() => import('./SftPanel').then((m) => ({ default: m.SftPanel })));

export function App() {
  const connect = useLab((s) => s.connect);
  const runSelfCheck = useLab((s) => s.runSelfCheck);
  useEffect(() => {
    void connect().then(() => {
      if (useLab.getState().device) void runSelfCheck();
    });
  }, [connect, runSelfCheck]);
  return (
    <div className="app">
      <header>
        <h1>SAGE Lab</h1>
        <p className="muted">
          Self-evolving multi-agent reasoning (Challenger · Planner · Solver · Critic), trained in your browser on WebGPU.
        </p>
      </header>
      <main>
        <DevicePanel />
        <SelfCheckPanel />
        <ModelPanel />
        <Suspense fallback={null}>
          <TrainCheckPanel />
          <SftPanel />
        </Suspense>
        <GeneratePanel />
      </main>
    </div>
  );
}
