import { useEffect, useState } from 'react';
import { overlapSummary } from '../../data/content';
import { describeCounts } from '../../data/import';
import type { ProblemSetReport } from '../../worker/api';
import { SHIPPED_SEEDS } from '../shippedData';
import { isActive } from '../runView';
import { useLab } from '../store';

/** Skipped lines listed by number; the rest are counted. */
const LISTED_ERRORS = 8;

function Report({ report, testId }: { report: ProblemSetReport; testId: string }) {
  return (
    <div className="report" data-testid={testId}>
      <div>
        <strong>{report.name}</strong>: {report.problems} problems ({describeCounts(report.counts)})
        {report.duplicates ? <span className="muted"> · {report.duplicates} repeats loaded once</span> : null}
      </div>
      {report.errorCount > 0 && (
        <details open={report.errorCount <= LISTED_ERRORS}>
          <summary className="error-text">{report.errorCount} lines skipped</summary>
          <ul className="line-errors" data-testid={`${testId}-errors`}>
            {report.errors.slice(0, LISTED_ERRORS).map((e) => (
              <li key={e.line}>
                line {e.line}: {e.reason}
              </li>
            ))}
            {report.errorCount > LISTED_ERRORS && <li>… and {report.errorCount - LISTED_ERRORS} more</li>}
          </ul>
        </details>
      )}
    </div>
  );
}

function FilePick({ label, onFile, disabled }: { label: string; onFile: (f: File) => void; disabled?: boolean }) {
  return (
    <label className={`file-button${disabled ? ' disabled' : ''}`}>
      {label}
      <input type="file" accept=".jsonl,.json,.txt" disabled={disabled} onChange={(e) => e.target.files?.[0] && onFile(e.target.files[0])} />
    </label>
  );
}

/**
 * Seed and validation problems, read in the engine: a JSONL dropped anywhere on the page
 * becomes the seeds; a shipped set brings its held-out split.
 */
export function SeedsPanel() {
  const seeds = useLab((s) => s.seedReport);
  const validation = useLab((s) => s.validationReport);
  const busy = useLab((s) => s.problemsBusy);
  const errors = useLab((s) => s.problemsError);
  const load = useLab((s) => s.loadProblemFile);
  const loadShipped = useLab((s) => s.loadShippedProblems);
  const running = useLab((s) => isActive(s.run.status));
  const holdOutSeeds = useLab((s) => s.holdOutSeeds);
  const overlap = useLab((s) => s.problemOverlap);
  const dropOverlap = useLab((s) => s.dropOverlap);
  const [over, setOver] = useState(false);
  const [percent, setPercent] = useState('10');

  useEffect(() => {
    // The whole page is a drop target for seed files.
    const onOver = (e: DragEvent) => {
      if (!e.dataTransfer?.types.includes('Files')) return;
      e.preventDefault();
      setOver(true);
    };
    const onLeave = (e: DragEvent) => {
      if (e.relatedTarget === null) setOver(false);
    };
    const onDrop = (e: DragEvent) => {
      e.preventDefault();
      setOver(false);
      const f = e.dataTransfer?.files[0];
      if (f && !running) void load('seeds', f.name, f);
    };
    window.addEventListener('dragover', onOver);
    window.addEventListener('dragleave', onLeave);
    window.addEventListener('drop', onDrop);
    return () => {
      window.removeEventListener('dragover', onOver);
      window.removeEventListener('dragleave', onLeave);
      window.removeEventListener('drop', onDrop);
    };
  }, [load, running]);

  return (
    <section className="panel" data-testid="seeds-panel">
      {over && <div className="drop-overlay">Drop a JSONL file to use it as seeds</div>}
      <h2>Problems</h2>
      <h3>Seeds</h3>
      <div className="row-controls">
        {Object.keys(SHIPPED_SEEDS).map((name) => (
          <button key={name} className="secondary" disabled={running} onClick={() => void loadShipped(name)} data-testid={`shipped-${name}`}>
            {name.replace('.jsonl', '')}
          </button>
        ))}
      </div>
      <p className="muted small">
        Drop a JSONL anywhere on the page, or <FilePick label="choose a file" disabled={running} onFile={(f) => void load('seeds', f.name, f)} />: GSM8K, MATH,
        HumanEval, MBPP(+), curriculum or question/answer records, detected per line.
      </p>
      {busy.seeds && <p className="status running">reading {busy.seeds} …</p>}
      {errors.seeds && <p className="error-text" data-testid="seeds-error">{errors.seeds}</p>}
      {seeds && <Report report={seeds} testId="seed-report" />}
      {seeds && seeds.preview.length > 0 && (
        <details>
          <summary className="muted">preview</summary>
          <ol className="preview">
            {seeds.preview.map((p) => (
              <li key={p.id}>
                <span className="statement">{p.statement.length > 240 ? `${p.statement.slice(0, 240)}…` : p.statement}</span>
                {p.kind === 'math' && <span className="muted"> → {p.answer}</span>}
              </li>
            ))}
          </ol>
        </details>
      )}
      <h3>Validation (held out)</h3>
      <p className="muted small">
        A shipped seed set brings its held-out split; or <FilePick label="choose a held-out file" disabled={running} onFile={(f) => void load('validation', f.name, f)} />.
        Held out by content: a validation problem with a seed's expression, statement (names, case and
        wording aside) or function is listed here, and a run does not start while one remains.
      </p>
      <div className="row-controls small">
        <span>or hold out</span>
        <input type="number" min={1} max={90} value={percent} onChange={(e) => setPercent(e.target.value)} disabled={running || !seeds} style={{ width: 60 }} data-testid="holdout-percent" />
        <span>% of the seeds (drawn with the run's seed)</span>
        <button className="secondary" disabled={running || !seeds} onClick={() => void holdOutSeeds(Number(percent) / 100)} data-testid="holdout-seeds">
          hold out
        </button>
      </div>
      {busy.validation && <p className="status running">reading {busy.validation} …</p>}
      {errors.validation && <p className="error-text" data-testid="validation-error">{errors.validation}</p>}
      {validation && <Report report={validation} testId="validation-report" />}
      {overlap && overlap.count > 0 && (
        <div className="report" data-testid="overlap-report">
          <div className="error-text">{overlapSummary(overlap.count, overlap.validation)}:</div>
          <ul className="line-errors">
            {overlap.examples.map((e) => (
              <li key={e}>{e}</li>
            ))}
            {overlap.count > overlap.examples.length && <li>… and {overlap.count - overlap.examples.length} more</li>}
          </ul>
          <button className="secondary" disabled={running} onClick={() => void dropOverlap()} data-testid="drop-overlap">
            drop them
          </button>
        </div>
      )}
      {overlap && overlap.count === 0 && <p className="muted small" data-testid="overlap-none">No validation problem shares its content with a seed.</p>}
    </section>
  );
}
