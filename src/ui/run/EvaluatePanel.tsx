import { criticLine } from '../../research/evaluation';
import type { Accuracy, Tally } from '../../sage/validation';
import type { EvaluateResult } from '../../worker/api';
import { isActive } from '../runView';
import { useLab } from '../store';

const percent = (x: number) => `${(100 * x).toFixed(1)}%`;
const cell = (t: Tally[string] | undefined) => (t ? `${percent(t.accuracy)} (${t.correct}/${t.total})` : '—');

/** A row per mode, a column for all problems, each level and each source (when there are several). */
function ResultTable({ r }: { r: EvaluateResult }) {
  const rows: [string, Accuracy][] = [['Solver alone', r.result]];
  if (r.result.planned) rows.push([`${r.method}'s own mode`, r.result.planned]);
  const keys = (pick: (a: Accuracy) => Tally) => [...new Set(rows.flatMap(([, a]) => Object.keys(pick(a))))].sort();
  const levels = keys((a) => a.perLevel);
  const sources = keys((a) => a.perSource);
  const all = (a: Accuracy): Tally[string] => {
    const ts = Object.values(a.perSource);
    return { correct: ts.reduce((n, t) => n + t.correct, 0), total: ts.reduce((n, t) => n + t.total, 0), accuracy: a.accuracy };
  };
  return (
    <table className="grid evaluation-table" data-testid="evaluation-table">
      <thead>
        <tr>
          <th>greedy pass@1</th>
          <th>all</th>
          {levels.map((l) => (
            <th key={l}>L{l}</th>
          ))}
          {sources.length > 1 && sources.map((s) => <th key={s}>{s}</th>)}
        </tr>
      </thead>
      <tbody>
        {rows.map(([label, a]) => (
          <tr key={label}>
            <td>{label}</td>
            <td>{cell(all(a))}</td>
            {levels.map((l) => (
              <td key={l}>{cell(a.perLevel[l])}</td>
            ))}
            {sources.length > 1 && sources.map((s) => <td key={s}>{cell(a.perSource[s])}</td>)}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The held model validated outside a run, as a run validates: both modes per level and source, the Critic's AUC, the outcomes to download. */
export function EvaluatePanel() {
  const r = useLab((s) => s.evaluation);
  const evaluating = useLab((s) => s.evaluating);
  const error = useLab((s) => s.evaluateError);
  const method = useLab((s) => s.method);
  const templates = useLab((s) => s.templates);
  const disabled = useLab((s) => !s.device || isActive(s.run.status) || s.modelBusy !== null || s.evaluating);
  const { evaluate, downloadOutcomes } = useLab.getState();
  return (
    <section className="panel" data-testid="evaluate-panel">
      <h2>Evaluate the model</h2>
      <p className="muted small">
        The held model on the validation problems as a run validates it (the same problems for the validation limit set, greedy): the Solver
        alone and in the method’s own mode, and the Critic’s AUC, with every problem’s outcome.
      </p>
      <div className="row-controls">
        <button disabled={disabled} onClick={() => void evaluate()} data-testid="evaluate">
          Evaluate ({method}, {templates} prompts)
        </button>
        {r && (
          <button className="secondary" onClick={downloadOutcomes} data-testid="evaluation-download">
            download the outcomes (JSONL)
          </button>
        )}
      </div>
      {evaluating && <p className="status running">evaluating …</p>}
      {error && <p className="error-text">{error}</p>}
      {r && (
        <div className="evaluation" data-testid="evaluation">
          <p className="small">
            {r.model} · {r.templates} prompts · {r.problems} of {r.of} validation problems · token limits Planner {r.maxNewTokens.planner}, Solver{' '}
            {r.maxNewTokens.solver}, Critic {r.maxNewTokens.critic}
          </p>
          <ResultTable r={r} />
          {r.result.planned && <p className="small">plans shown to the Solver (passed the Critic’s gate): {percent(r.result.planned.planShown)}</p>}
          {r.result.critic && (
            <p className="small" data-testid="evaluation-critic">
              {criticLine(r.result.critic)}
            </p>
          )}
        </div>
      )}
    </section>
  );
}
