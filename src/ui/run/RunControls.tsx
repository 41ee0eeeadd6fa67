import { useEffect, useState } from 'react';
import { METHODS } from '../../sage/config';
import { canSaveToFolder } from '../checkpointFiles';
import { DEFAULT_MODEL } from '../../sage/shippedModels';
import { isActive, stepPhases } from '../runView';
import { useLab } from '../store';
import { duration, percent } from './theme';


/** Re-renders every second while a run lasts, for the clock. */
function useTick(active: boolean): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [active]);
}

/** Start, pause, step once, resume, stop; the phase in flight, progress, elapsed time and ETA; export and resume. */
export function RunControls() {
  const run = useLab((s) => s.run);
  const clock = useLab((s) => s.runClock);
  const runSettings = useLab((s) => s.runSettings);
  const runError = useLab((s) => s.runError);
  const exported = useLab((s) => s.runExported);
  const method = useLab((s) => s.method);
  const ready = useLab((s) => Boolean(s.device && s.seedReport && s.validationReport));
  const invalid = useLab((s) => Object.values(s.settingErrors).some(Boolean));
  const comparing = useLab((s) => s.comparing !== null);
  const model = useLab((s) => s.model);
  const savedRun = useLab((s) => s.savedRun);
  const storage = useLab((s) => s.storage);
  const { startRun, pauseRun, resumeRun, stepRun, stopRun, exportRun, resumeFromFiles, resumeAutosaved, discardAutosaved } = useLab.getState();
  const active = isActive(run.status);
  useTick(active);

  const now = Date.now();
  const elapsed = clock ? (now - clock.started - clock.heldMs - (clock.pausedAt ? now - clock.pausedAt : 0)) / 1000 : 0;
  const done = run.steps.length;
  const total = runSettings?.steps ?? 0;
  const meanStep = done ? run.steps.reduce((a, p) => a + p.seconds, 0) / done : 0;
  const eta = done && total > done ? (total - done) * meanStep : null;
  const last = run.steps[run.steps.length - 1];
  const phases = stepPhases(METHODS[runSettings?.method ?? method]);
  const phaseIndex = run.phase && run.phase !== 'validate' ? phases.indexOf(run.phase) : -1;
  const within = run.tuning
    ? run.tuning.done / run.tuning.total
    : run.status === 'warmup' && run.warmup
      ? run.warmup.step / run.warmup.of
      : phaseIndex >= 0
        ? phaseIndex / phases.length
        : 0;
  const canExport = run.status === 'paused' || run.status === 'done' || (run.status === 'error' && done > 0);

  let phaseText = '';
  if (run.status === 'starting') phaseText = 'preparing the model and kernels …';
  if (run.tuning) phaseText = `tuning kernels for this run: ${run.tuning.done}/${run.tuning.total} shapes (kept for later runs)`;
  else if (run.status === 'warmup' && run.warmup) phaseText = `warm-up SFT ${run.warmup.step}/${run.warmup.of} · loss ${run.warmup.loss.toFixed(3)}`;
  else if (run.phase === 'validate') phaseText = `validating on the held-out problems (after step ${run.phaseStep})`;
  else if (run.phase) phaseText = `step ${run.phaseStep + 1}: ${run.phase} (${phaseIndex + 1}/${phases.length})`;
  if (run.status === 'paused') phaseText = `paused${run.phase ? ` before ${run.phase}` : ''}`;
  if (run.endReason) phaseText = `ended: ${run.endReason === 'early-stop' ? 'early stop (no new best)' : run.endReason === 'stopped' ? 'stopped' : 'all steps done'}${run.status === 'done' ? '' : ' · saving the run in this browser …'}`;

  return (
    <section className="panel wide run-controls" data-testid="run-controls">
      {savedRun && !active && (
        <div className="banner" data-testid="autosave-offer">
          <span>
            A {savedRun.method} run was autosaved in this browser after step {savedRun.step} ({new Date(savedRun.savedAt).toLocaleString()}, {(savedRun.bytes / 2 ** 20).toFixed(1)} MiB).
          </span>
          <button onClick={() => void resumeAutosaved()} data-testid="resume-autosave">Resume it</button>
          <button className="secondary" onClick={() => void discardAutosaved()}>Discard</button>
        </div>
      )}
      <div className="row-controls">
        {!active ? (
          <button onClick={() => void startRun()} disabled={!ready || invalid || comparing} data-testid="start-run" title={comparing ? 'a comparison is running (Runs panel)' : ready ? '' : 'load seeds and validation problems first'}>
            Start {method} run
          </button>
        ) : (
          <>
            {run.status === 'paused' ? (
              <>
                <button onClick={resumeRun} data-testid="resume-run">Resume</button>
                <button className="secondary" onClick={stepRun} data-testid="step-run">Step once</button>
              </>
            ) : (
              <button onClick={pauseRun} disabled={run.status === 'starting'} data-testid="pause-run">Pause</button>
            )}
            <button className="danger" onClick={stopRun} data-testid="stop-run">Stop</button>
          </>
        )}
        <span className={`status ${run.status}`} data-testid="run-status">{run.status}</span>
        <span className="muted" data-testid="run-phase">{phaseText}</span>
        <span className="spacer" />
        <span className="muted">model: {model ? `${model.origin} (${(model.parameters / 1e6).toFixed(2)} M)` : `${DEFAULT_MODEL} (shipped; loaded on start)`}</span>
      </div>
      <div className="progress" title="progress within the step (or the warm-up)">
        <div className="bar" style={{ width: `${Math.round(100 * within)}%` }} />
      </div>
      <dl className="stats">
        <div><dt>step</dt><dd data-testid="run-step">{done}{total ? ` / ${total}` : ''}</dd></div>
        <div><dt>elapsed</dt><dd>{clock ? duration(elapsed) : '—'}</dd></div>
        <div><dt>ETA</dt><dd>{eta === null ? '—' : duration(eta)}</dd></div>
        <div><dt>s / step</dt><dd>{last ? last.seconds.toFixed(1) : '—'}</dd></div>
        <div><dt>tokens / s</dt><dd>{last ? last.tokensPerS.toFixed(0) : '—'}</dd></div>
        <div><dt>bank</dt><dd>{last ? `${last.seeds + last.admitted} (+${last.admitted})` : '—'}</dd></div>
        <div><dt>best validation</dt><dd>{run.best ? `${percent(run.best.planned ?? run.best.accuracy)} @ ${run.best.step}` : '—'}</dd></div>
      </dl>
      <div className="row-controls">
        <button className="secondary" disabled={!canExport} onClick={() => void exportRun('folder')} data-testid="export-run-folder" title="weights (Hugging Face format), AdamW state, bank, metrics, transcripts, config">
          {canSaveToFolder() ? 'Export run to a folder' : 'Export run (.zip)'}
        </button>
        {canSaveToFolder() && (
          <button className="secondary" disabled={!canExport} onClick={() => void exportRun('zip')} data-testid="export-run-zip">
            Download .zip
          </button>
        )}
        <label className={`file-button${active ? ' disabled' : ''}`}>
          resume an exported run (.zip)
          <input type="file" accept=".zip" disabled={active} onChange={(e) => e.target.files?.length && void resumeFromFiles([...e.target.files])} data-testid="resume-zip" />
        </label>
        {exported && <span className="status passed" data-testid="run-exported">{exported}</span>}
        <span className="spacer" />
        <span className="muted small" data-testid="autosave-status">
          {run.autosave?.error ? (
            <span className="error-text">autosave failed: {run.autosave.error}</span>
          ) : run.autosave?.info ? (
            `autosaved after step ${run.autosave.info.step} (${(run.autosave.info.bytes / 2 ** 20).toFixed(1)} MiB)`
          ) : (
            'autosaves at every validation and pause'
          )}
          {storage && ` · browser storage ${(storage.usage / 2 ** 20).toFixed(0)} MiB of ${(storage.quota / 2 ** 30).toFixed(1)} GiB`}
        </span>
      </div>
      {runError && <p className="error-text" data-testid="run-error">{runError}</p>}
    </section>
  );
}
