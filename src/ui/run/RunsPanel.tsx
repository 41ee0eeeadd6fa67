import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { compareKept, runLabel, type RunRecord } from '../runHistory';
import type { MeanSe } from '../../sage/compare';
import { isActive } from '../runView';
import { pick, useLab } from '../store';
import { overlayColor, percent } from './theme';

const ended = (r: RunRecord) =>
  !r.finished ? 'interrupted' : r.endReason === 'early-stop' ? 'early stop' : r.endReason === 'stopped' ? 'stopped' : r.endReason === 'steps' ? 'all steps' : 'failed';

/** The settings a run was started with, in one line (the defaults left out). */
const settingsText = (r: RunRecord) => {
  const typed = Object.entries(r.config.settings).map(([k, v]) => `${k} ${v}`);
  return `${r.config.templates} prompts · model ${r.config.model} · validation ${r.config.validation}${typed.length ? ` · ${typed.join(', ')}` : ' · default settings'}`;
};

const meanText = (m: MeanSe, scale = 100, digits = 1) => `${(scale * m.mean).toFixed(digits)}${m.se === null ? '' : ` ± ${(scale * m.se).toFixed(digits)}`}`;

/** Kept runs grouped by method: mean ± standard error over runs (several seeds of each method). */
function Comparison({ runs }: { runs: RunRecord[] }) {
  const rows = compareKept(runs);
  if (!rows.some((r) => r.runs > 1)) return null;
  return (
    <div className="runs-table" data-testid="runs-comparison">
      <h3>By method</h3>
      <p className="muted small">
        The last validation of each run in the method’s own mode, mean ± standard error over its runs; against RLVR, the difference
        in points and in standard errors (within two, it is inside the noise). <code>npm run compare</code> runs such a comparison headless.
      </p>
      <table className="settings-table">
        <thead>
          <tr><th>method</th><th>runs</th><th>steps</th><th>final held-out (%)</th><th>vs RLVR</th><th>admitted</th></tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.method}>
              <td>{r.method}</td>
              <td>{r.runs}</td>
              <td>{r.steps}</td>
              <td>{meanText(r.final)}</td>
              <td>{r.vsRlvr ? `${r.vsRlvr.diff >= 0 ? '+' : ''}${(100 * r.vsRlvr.diff).toFixed(1)}${r.vsRlvr.z === null ? '' : ` (${r.vsRlvr.z.toFixed(1)} SE)`}` : '—'}</td>
              <td>{meanText(r.admitted, 1, 1)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The runs kept in this browser: overlay any on the accuracy and bank charts, see a run's settings, delete one. */
export function RunsPanel() {
  const { runs, overlay, currentRunId, runsError, loadRuns, toggleOverlay, removeRun } = useLab(
    useShallow((s) => pick(s, ['runs', 'overlay', 'currentRunId', 'runsError', 'loadRuns', 'toggleOverlay', 'removeRun'])),
  );
  const live = useLab((s) => isActive(s.run.status));
  const [confirm, setConfirm] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  useEffect(() => void loadRuns(), [loadRuns]);
  return (
    <section className="panel wide" data-testid="runs-panel">
      <h2>Runs</h2>
      <p className="muted">
        Every run is kept in this browser with its settings and curves; tick one to draw it, dashed, over the validation and bank
        charts (SAGE against RLVR or an ablation). Weights stay in a run’s export and autosave.
      </p>
      {runsError && <p className="error-text">{runsError}</p>}
      {runs.length === 0 ? (
        <p className="muted">No runs yet.</p>
      ) : (
        <div className="runs-table">
          <div className="table-head runs-grid">
            <span>overlay</span>
            <span>run</span>
            <span>steps</span>
            <span>best held-out</span>
            <span>admitted</span>
            <span>ended</span>
            <span />
          </div>
          {runs.map((r) => {
            const current = r.id === currentRunId;
            const at = overlay.indexOf(r.id);
            const last = r.bank[r.bank.length - 1];
            return (
              <div key={r.id} className="run-row" data-testid="run-row" data-run-id={r.id}>
                <div className="runs-grid">
                  <span>
                    {current ? (
                      <span className="muted" title="the run on the charts">live</span>
                    ) : (
                      <label className="swatch-check">
                        <input type="checkbox" checked={at >= 0} onChange={() => toggleOverlay(r.id)} data-testid="run-overlay" />
                        {at >= 0 && <span className="swatch" style={{ background: overlayColor(at) }} />}
                      </label>
                    )}
                  </span>
                  <button className="link run-name" onClick={() => setOpen(open === r.id ? null : r.id)}>{runLabel(r)}</button>
                  <span>{r.steps}</span>
                  <span>{r.best ? `${percent(r.best.accuracy)} @ ${r.best.step}` : '—'}</span>
                  <span>{last ? last.admitted : 0}</span>
                  <span>{current && live ? 'running' : ended(r)}</span>
                  <span>
                    {!current &&
                      (confirm === r.id ? (
                        <button className="danger" onClick={() => void removeRun(r.id).then(() => setConfirm(null))} data-testid="run-delete-confirm">confirm</button>
                      ) : (
                        <button className="secondary" onClick={() => setConfirm(r.id)} data-testid="run-delete">delete</button>
                      ))}
                  </span>
                </div>
                {open === r.id && <div className="muted run-config" data-testid="run-config">{settingsText(r)}</div>}
              </div>
            );
          })}
        </div>
      )}
      <Comparison runs={runs} />
    </section>
  );
}
