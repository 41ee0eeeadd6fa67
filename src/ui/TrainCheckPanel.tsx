import { useShallow } from 'zustand/react/shallow';
import { LossChart } from './LossChart';
import { pick, useLab } from './store';

/** Trains the tiny preset in the engine worker and plots its loss live. */
export function TrainCheckPanel() {
  const { device, trainStatus, trainSteps, train, trainError, runTrainCheck } = useLab(useShallow((s) => pick(s, ['device', 'trainStatus', 'trainSteps', 'train', 'trainError', 'runTrainCheck'])));
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
      <LossChart data={trainSteps} testId="train-chart" />
    </section>
  );
}
