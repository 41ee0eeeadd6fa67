import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { useLab } from './store';

/** Trains the tiny preset in the engine worker and plots its loss live. */
export function TrainCheckPanel() {
  const { device, trainStatus, trainSteps, train, trainError, runTrainCheck } = useLab();
  if (!device) return null;
  const last = trainSteps[trainSteps.length - 1];
  const status =
    trainStatus === 'running' ? 'running' : trainStatus === 'error' ? 'error' : train ? (train.passed ? 'passed' : 'failed') : 'idle';
  return (
    <section className="panel wide">
      <h2>Training check</h2>
      <p className="muted">
        The tiny preset (1.02 M parameters) learns four short answers from scratch: forward, backward and AdamW in WGSL,
        in the engine worker. It passes when the loss per answer token falls below {train?.threshold ?? 0.2}.
      </p>
      <div className="row-controls">
        <button type="button" disabled={trainStatus === 'running'} onClick={() => void runTrainCheck()} data-testid="train-start">
          {trainStatus === 'running' ? 'Training…' : train ? 'Run again' : 'Start'}
        </button>
        <span>
          Status: <strong className={`status ${status}`} data-testid="train-status">{status}</strong>
        </span>
        {last ? (
          <span className="muted" data-testid="train-progress">
            step {last.step} · loss {last.loss.toFixed(3)} · grad-norm {last.gradNorm.toFixed(2)} ·{' '}
            {last.tokensPerS ? `${last.tokensPerS.toFixed(0)} tokens/s` : 'compiling…'}
          </span>
        ) : null}
      </div>
      {trainError ? <p className="error-text">{trainError}</p> : null}
      <div className="chart" data-testid="train-chart">
        <ResponsiveContainer width="100%" height={240}>
          <LineChart data={trainSteps} margin={{ top: 8, right: 24, bottom: 20, left: 8 }}>
            <CartesianGrid stroke="#2a3642" strokeDasharray="3 3" />
            <XAxis
              dataKey="step"
              type="number"
              domain={[1, 'dataMax']}
              allowDecimals={false}
              stroke="#8b98a5"
              label={{ value: 'optimizer step', position: 'insideBottom', offset: -10, fill: '#8b98a5' }}
            />
            <YAxis
              stroke="#8b98a5"
              domain={[0, 'auto']}
              label={{ value: 'loss (nats/token)', angle: -90, position: 'insideLeft', fill: '#8b98a5', dy: 50 }}
            />
            <Tooltip contentStyle={{ background: '#182028', border: '1px solid #2a3642' }} formatter={(v) => Number(v).toFixed(4)} />
            <Line type="linear" dataKey="loss" stroke="#34d399" strokeWidth={2} dot={false} isAnimationActive={false} />
          </LineChart>
        </ResponsiveContainer>
      </div>
    </section>
  );
}
