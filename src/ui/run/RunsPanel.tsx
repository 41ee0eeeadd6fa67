import { useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { compareKept, comparisons, keptSeries, runLabel, type RunRecord } from '../runHistory';
import type { MeanSe } from '../../research/compare';
import { compareChart } from '../../research/compareChart';
import { intervalText, levelColumns } from '../../research/compareTable';
import type { Interval } from '../../research/pairedStats';
import { COMPARED_METHODS, METHODS, type MethodName } from '../../sage/config';
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
const figure = (i: Interval | null | undefined) => (i ? intervalText(i) : '—');

/** The latest comparison's finished runs by method: start and final, the paired gain and difference from RLVR with their intervals, the chart. */
function Comparison({ runs }: { runs: RunRecord[] }) {
  // Grouped, bootstrapped and drawn again only when the kept runs change, not at every render.
  const latest = useMemo(() => comparisons(runs)[0], [runs]);
  const chart = useMemo(() => (latest ? compareChart(keptSeries(latest.runs)) : ''), [latest]);
  const rows = useMemo(() => (latest ? compareKept(latest.runs) : []), [latest]);
  if (!latest) return null;
  const first = latest.runs[0]!.config;
  const beyond = rows.find((r) => r.beyondSeeds)?.beyondSeeds;
  const levels = levelColumns(rows.flatMap((r) => Object.keys(r.paired?.perLevel ?? {})), beyond);
  const oneSeed = rows.some((r) => r.paired && [r.paired.own.gain, r.paired.own.vsBaseline, r.paired.solver.vsBaseline].some((i) => i && !i.seedsResampled));
  const unpaired = rows.filter((r) => !r.paired).map((r) => r.method);
  return (
    <div className="runs-table" data-testid="runs-comparison">
      <h3>Comparison</h3>
      <p className="muted small">
        From {first.model} on {first.seeds}, validated on {first.validation}: the first and last validation of each run in the
        method’s own mode, mean ± standard error over its seeds. The gain (last − first, the same runs) and the difference from
        RLVR are in points with a 95% interval from a paired bootstrap over problems and seeds; “inside the noise” where it
        covers 0. <code>npm run compare</code> runs the same headless.
      </p>
      <table className="settings-table">
        <thead>
          <tr><th>method</th><th>seeds</th><th>steps</th><th>start (%)</th><th>final (%)</th><th>gain</th><th>vs RLVR</th><th>vs RLVR, Solver alone</th><th>admitted</th></tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.method} data-testid={`comparison-${r.method}`}>
              <td>{r.method}</td>
              <td>{r.runs}</td>
              <td>{r.steps}</td>
              <td>{meanText(r.start)}</td>
              <td>{meanText(r.final)}</td>
              <td>{figure(r.paired?.own.gain)}</td>
              <td>{figure(r.paired?.own.vsBaseline)}</td>
              <td>{figure(r.paired?.solver.vsBaseline)}</td>
              <td>{meanText(r.admitted, 1, 1)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {levels.length > 0 && rows.some((r) => r.paired?.own.vsBaseline) && (
        <table className="settings-table" data-testid="comparison-levels">
          <thead>
            <tr><th>vs RLVR per level</th>{levels.map((l) => <th key={l}>{l === beyond ? `levels ${l} (beyond the seeds)` : `level ${l}`}</th>)}</tr>
          </thead>
          <tbody>
            {rows.filter((r) => r.paired?.own.vsBaseline).map((r) => (
              <tr key={r.method}>
                <td>{r.method}</td>
                {levels.map((l) => <td key={l}>{figure(r.paired!.perLevel[l]?.vsBaseline)}</td>)}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {oneSeed && <p className="muted small">† one seed a side: the interval covers the sampling of the problems only.</p>}
      {unpaired.length > 0 && <p className="muted small">{unpaired.join(', ')}: runs kept before per-problem results were, so no paired interval.</p>}
      {/* The chart is the one `npm run compare` writes, drawn from the kept curves (method names only: no user text in it). */}
      <div className="comparison-chart" data-testid="comparison-chart" dangerouslySetInnerHTML={{ __html: chart }} />
    </div>
  );
}

/** Starts (or goes on with) a comparison: methods × seeds with the settings above, each run from the same start. */
function CompareControls() {
  const { comparing, compareError, startComparison, stopComparison } = useLab(useShallow((s) => pick(s, ['comparing', 'compareError', 'startComparison', 'stopComparison'])));
  const active = useLab((s) => isActive(s.run.status));
  const ready = useLab((s) => s.seedReport !== null && s.validationReport !== null && s.device !== null);
  const [methods, setMethods] = useState<MethodName[]>([...COMPARED_METHODS]);
  const [seeds, setSeeds] = useState('3');
  const n = Number(seeds);
  const valid = Number.isInteger(n) && n >= 1 && n <= 20;
  const toggle = (m: MethodName) => setMethods(methods.includes(m) ? methods.filter((x) => x !== m) : [...methods, m]);
  const current = comparing?.plan[comparing.at];
  return (
    <div className="compare-controls" data-testid="compare-controls">
      <h3>Compare methods</h3>
      <p className="muted small">
        Each method at seeds 0 to {valid ? n - 1 : '…'} with the settings above, early stopping off, every run from the model held now
        (none held: the shipped one), one after another, seed by seed. Starting the same comparison again goes on with the runs it
        has not finished.
      </p>
      <div className="row-controls">
        {(Object.keys(METHODS) as MethodName[]).map((m) => (
          <label key={m} className="check">
            <input type="checkbox" checked={methods.includes(m)} disabled={comparing !== null} onChange={() => toggle(m)} data-testid={`compare-method-${m}`} /> {m}
          </label>
        ))}
        <label>
          seeds <input type="text" inputMode="numeric" value={seeds} size={3} disabled={comparing !== null} onChange={(e) => setSeeds(e.target.value)} data-testid="compare-seeds" />
        </label>
        {comparing ? (
          <button className="danger" onClick={stopComparison} disabled={comparing.stopping} data-testid="compare-stop">Stop comparison</button>
        ) : (
          <button onClick={() => void startComparison(methods, n)} disabled={!ready || active || !valid || !methods.length} data-testid="compare-start">
            Run comparison
          </button>
        )}
        {comparing && current && (
          <span className="muted" data-testid="compare-progress">
            run {comparing.at + 1} of {comparing.plan.length}: {current.method}, seed {current.seed}
            {comparing.stopping ? ' (stopping)' : ''}
          </span>
        )}
      </div>
      {!valid && <p className="error-text">seeds must be a whole number from 1 to 20</p>}
      {compareError && <p className="error-text" data-testid="compare-error">{compareError}</p>}
    </div>
  );
}

/** The runs kept in this browser: overlay any on the accuracy and bank charts, see a run's settings, delete one. */
export function RunsPanel() {
  const { runs, runsLoaded, overlay, currentRunId, runsError, loadRuns, toggleOverlay, removeRun } = useLab(
    useShallow((s) => pick(s, ['runs', 'runsLoaded', 'overlay', 'currentRunId', 'runsError', 'loadRuns', 'toggleOverlay', 'removeRun'])),
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
        <p className="muted" data-testid="runs-none">{runsLoaded ? 'No runs yet.' : 'reading the runs kept in this browser …'}</p>
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
      <CompareControls />
      <Comparison runs={runs} />
    </section>
  );
}
