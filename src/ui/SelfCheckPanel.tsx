import { useShallow } from 'zustand/react/shallow';
import { pick, useLab } from './store';

export function SelfCheckPanel() {
  const { check, checkStatus, checkError, runSelfCheck, device } = useLab(useShallow((s) => pick(s, ['check', 'checkStatus', 'checkError', 'runSelfCheck', 'device'])));
  if (!device) return null;
  const status = checkStatus === 'running' ? 'running' : checkStatus === 'error' ? 'error' : check ? (check.passed ? 'passed' : 'failed') : 'idle';
  return (
    <section className="panel">
      <h2>Kernel self-check</h2>
      <p className="muted">A matmul on the GPU, in the engine worker, checked against a float64 reference on the CPU.</p>
      <p>
        Status: <strong className={`status ${status}`} data-testid="selfcheck-status">{status}</strong>
      </p>
      {checkError ? <p className="error-text">{checkError}</p> : null}
      {check ? (
        <dl className="facts" data-testid="selfcheck">
          <dt>Shape (M×K×N)</dt>
          <dd>
            {check.shape.M}×{check.shape.K}×{check.shape.N}
          </dd>
          <dt>Kernel variant</dt>
          <dd data-testid="selfcheck-variant">
            {check.variant}{' '}
            <span className="muted" data-testid="selfcheck-tuning">
              ({check.tuning === 'cached' ? 'autotuned earlier on this GPU' : 'autotuned now'})
            </span>
          </dd>
          <dt>Max relative error</dt>
          <dd data-testid="selfcheck-error">{check.maxRelError.toExponential(2)}</dd>
          <dt>Time (incl. readback)</dt>
          <dd>
            {check.gpuMs.toFixed(1)} ms · {check.gflops.toFixed(2)} GFLOP/s
          </dd>
        </dl>
      ) : null}
      <button type="button" disabled={checkStatus === 'running'} onClick={() => void runSelfCheck()}>
        Run again
      </button>
    </section>
  );
}
