import { useDeferredValue, useMemo, useState, type UIEvent } from 'react';
import { UNREADABLE } from '../../sage/levels';
import type { AdmittedRow } from '../runView';
import { useLab } from '../store';

const ROW = 30;
const VISIBLE = 12;

/** The problems the loop admitted: searchable, windowed (only the rows in view are drawn), a problem's references one click away. */
export function BankTable() {
  const admitted = useDeferredValue(useLab((s) => s.run.admitted));
  const seeds = useLab((s) => s.seedReport?.problems ?? 0);
  const hasRun = useLab((s) => s.run.status !== 'idle' && s.run.status !== 'starting');
  const exportBank = useLab((s) => s.exportBank);
  const [query, setQuery] = useState('');
  const [top, setTop] = useState(0);
  const [open, setOpen] = useState<string | null>(null);
  const rows = useMemo(() => {
    const q = query.trim().toLowerCase();
    const list = q ? admitted.filter((r) => r.statement.toLowerCase().includes(q) || r.id.toLowerCase().includes(q)) : admitted;
    return [...list].reverse();
  }, [admitted, query]);
  const byId = useMemo(() => new Map(admitted.map((r) => [r.id, r])), [admitted]);
  const first = Math.floor(top / ROW);
  const view = rows.slice(first, first + VISIBLE + 2);
  const selected: AdmittedRow | undefined = open ? byId.get(open) : undefined;
  return (
    <section className="panel wide" data-testid="bank-table">
      <h2>Problem bank</h2>
      <div className="row-controls">
        <span className="muted">
          {seeds} seeds · {admitted.length} admitted by the loop
        </span>
        <input type="search" placeholder="search statements or ids" value={query} onChange={(e) => setQuery(e.target.value)} data-testid="bank-search" />
        <span className="spacer" />
        <button className="secondary" disabled={!hasRun} onClick={() => void exportBank('jsonl')} data-testid="export-bank-jsonl">Export JSONL</button>
        <button className="secondary" disabled={!hasRun} onClick={() => void exportBank('parquet')} data-testid="export-bank-parquet" title="verl RL dataset: prompt as chat messages, reward_model with the ground truth">
          Export verl Parquet
        </button>
      </div>
      <div className="table-head bank-grid">
        <span>id</span>
        <span>statement</span>
        <span>level</span>
        <span>step</span>
        <span>quality</span>
        <span>pass rate</span>
      </div>
      <div className="virtual" style={{ height: Math.min(rows.length, VISIBLE) * ROW + 2 }} onScroll={(e: UIEvent<HTMLDivElement>) => setTop(e.currentTarget.scrollTop)}>
        <div style={{ height: rows.length * ROW, position: 'relative' }}>
          {view.map((r, i) => (
            <div
              key={r.id}
              className={`bank-grid bank-row${open === r.id ? ' open' : ''}`}
              style={{ top: (first + i) * ROW, height: ROW }}
              onClick={() => setOpen(open === r.id ? null : r.id)}
              data-testid="bank-row"
            >
              <span className="mono">{r.id}</span>
              <span className="statement" title={r.statement}>{r.statement}</span>
              <span title={r.level === UNREADABLE ? 'no curriculum style reads this statement' : undefined}>{r.level === UNREADABLE ? '—' : r.level}</span>
              <span>{r.step}</span>
              <span>{r.quality === null ? '—' : r.quality.toFixed(2)}</span>
              <span>{r.passRate === null ? '—' : `${Math.round(100 * r.passRate)}%`}</span>
            </div>
          ))}
        </div>
      </div>
      {rows.length === 0 && <p className="muted">{admitted.length ? 'no problem matches' : 'Problems the loop admits appear here.'}</p>}
      {selected && (
        <div className="lineage" data-testid="bank-lineage">
          <div>
            <strong>{selected.id}</strong> (step {selected.step}, {selected.kind}){selected.answer && <> → answer <code>{selected.answer}</code></>}
          </div>
          <pre>{selected.statement}</pre>
          <div className="muted">written from the references:</div>
          <ul>
            {selected.parents.map((id) => (
              <li key={id}>
                {byId.has(id) ? (
                  <button className="link" onClick={() => setOpen(id)}>{id}</button>
                ) : (
                  <span className="mono">{id}</span>
                )}{' '}
                {byId.get(id)?.statement ?? <span className="muted">(a seed)</span>}
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}
