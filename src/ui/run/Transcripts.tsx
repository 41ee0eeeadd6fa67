import { useDeferredValue, useState } from 'react';
import { ROLES, type RoleName } from '../../sage/config';
import type { Transcript } from '../../sage/loop';
import { useLab } from '../store';
import { ROLE_COLORS } from './theme';

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

function Rollout({ t }: { t: Transcript }) {
  const fields = Object.entries(t.fields);
  return (
    <div className="rollout" style={{ borderLeftColor: ROLE_COLORS[t.role] }} data-testid={`transcript-${t.role}`}>
      <div className="rollout-head">
        <span className="role" style={{ color: ROLE_COLORS[t.role] }}>{t.role}</span>
        <span className="muted">{t.template}</span>
        {t.score !== undefined && <span>score {t.score === null ? 'unparsable' : t.score.toFixed(2)}</span>}
        {t.verdict && <span className={t.verdict.startsWith('rejected') || t.verdict === 'wrong' ? 'error-text' : 'status passed'}>{t.verdict}</span>}
        <span>format {t.format.toFixed(2)}</span>
        <span>reward <strong>{t.reward.toFixed(3)}</strong></span>
      </div>
      <details>
        <summary className="muted">prompt</summary>
        <pre>{clip(t.prompt, 4000)}</pre>
      </details>
      <pre className="output">{clip(t.output, 4000) || <span className="muted">(empty)</span>}</pre>
      {fields.length > 0 && (
        <dl className="fields">
          {fields.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{clip(v, 600)}</dd>
            </div>
          ))}
        </dl>
      )}
    </div>
  );
}

/** The rollouts of a step, by role: the Challenger's problems with score and verdict, plans with their gate, answers with the validator's verdict. */
export function Transcripts() {
  const transcripts = useDeferredValue(useLab((s) => s.run.transcripts));
  const [picked, setPicked] = useState<number | null>(null);
  const [role, setRole] = useState<RoleName | 'all'>('all');
  if (!transcripts.length) {
    return (
      <section className="panel wide" data-testid="transcripts">
        <h2>Transcripts</h2>
        <p className="muted">Each step's rollouts appear here as the step ends.</p>
      </section>
    );
  }
  const step = picked ?? transcripts[transcripts.length - 1]!.step;
  const entry = transcripts.find((t) => t.step === step) ?? transcripts[transcripts.length - 1]!;
  const shown = entry.items.filter((t) => role === 'all' || t.role === role);
  return (
    <section className="panel wide" data-testid="transcripts">
      <h2>Transcripts</h2>
      <div className="row-controls">
        <label>
          step{' '}
          <select value={entry.step} onChange={(e) => setPicked(Number(e.target.value))} data-testid="transcript-step">
            {transcripts.map((t) => (
              <option key={t.step} value={t.step}>
                {t.step}
              </option>
            ))}
          </select>
        </label>
        {picked !== null && <button className="secondary" onClick={() => setPicked(null)}>follow the latest</button>}
        <div className="chips">
          {(['all', ...ROLES] as const).map((r) => (
            <button key={r} className={`chip ${role === r ? 'on' : 'off'}`} style={r !== 'all' ? { borderColor: ROLE_COLORS[r] } : undefined} onClick={() => setRole(r)}>
              {r} {r === 'all' ? entry.items.length : entry.items.filter((t) => t.role === r).length}
            </button>
          ))}
        </div>
      </div>
      <div className="rollouts">
        {shown.map((t, i) => (
          <Rollout key={i} t={t} />
        ))}
      </div>
    </section>
  );
}
