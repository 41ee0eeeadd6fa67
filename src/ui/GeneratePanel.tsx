import { useShallow } from 'zustand/react/shallow';
import { useState } from 'react';
import { DEFAULT_GENERATE, type GenerateOptions } from '../model/generateSettings';
import { pick, useLab } from './store';

type NumericKey = 'maxNewTokens' | 'temperature' | 'topK' | 'topP' | 'seed';

const NUMERIC_FIELDS: { key: NumericKey; label: string; min: number; max?: number; step: number | 'any' }[] = [
  { key: 'maxNewTokens', label: 'new tokens', min: 1, step: 1 },
  { key: 'temperature', label: 'temperature', min: 0, step: 'any' },
  { key: 'topK', label: 'top-k', min: 0, step: 1 },
  { key: 'topP', label: 'top-p', min: 0, max: 1, step: 'any' },
  { key: 'seed', label: 'seed', min: 0, step: 1 },
];

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** Completions of one prompt by the held model, streamed as the engine writes them. */
export function GeneratePanel() {
  const lab = useLab(useShallow((s) => pick(s, ['device', 'genError', 'genResult', 'genStatus', 'genTexts', 'model', 'modelBusy', 'runGenerate', 'sftStatus'])));
  const [prompt, setPrompt] = useState('Q: What is 2+3?');
  const [samples, setSamples] = useState(2);
  const [settings, setSettings] = useState<Pick<GenerateOptions, NumericKey>>({ ...DEFAULT_GENERATE, temperature: 0.7 });
  const [stop, setStop] = useState('');
  if (!lab.device) return null;
  const running = lab.genStatus === 'running';
  const busy = running || lab.sftStatus === 'running' || lab.modelBusy !== null;
  const start = () =>
    void lab.runGenerate(prompt, samples, {
      ...settings,
      stop: stop.split(',').filter(Boolean),
    });
  const stats = lab.genResult?.stats;
  return (
    <section className="panel wide">
      <h2>Generate</h2>
      <p className="muted">
        The held model completes the prompt (framed as in fine-tuning), several samples in one batch on the GPU: KV cache,
        sampling on the GPU, only the chosen tokens read back.
      </p>
      {lab.model ? null : <p className="muted">No model yet: start one from a preset or import a checkpoint above.</p>}
      <textarea className="prompt" rows={3} value={prompt} onChange={(e) => setPrompt(e.target.value)} data-testid="gen-prompt" />
      <div className="row-controls settings">
        <label>
          samples{' '}
          <input type="number" value={samples} min={1} step={1} onChange={(e) => setSamples(Number(e.target.value))} data-testid="gen-samples" />
        </label>
        {NUMERIC_FIELDS.map((f) => (
          <label key={f.key}>
            {f.label}{' '}
            <input
              type="number"
              value={settings[f.key]}
              step={f.step}
              min={f.min}
              max={f.max}
              data-testid={`gen-${f.key}`}
              onChange={(e) => setSettings({ ...settings, [f.key]: Number(e.target.value) })}
            />
          </label>
        ))}
        <label>
          stop at{' '}
          <input type="text" value={stop} placeholder="e.g. </answer>" onChange={(e) => setStop(e.target.value)} data-testid="gen-stop" />
        </label>
      </div>
      <div className="row-controls">
        <button type="button" disabled={busy || !lab.model || !prompt} onClick={start} data-testid="gen-start">
          Generate
        </button>
        <span>
          Status: <strong className={`status ${lab.genStatus}`} data-testid="gen-status">{lab.genStatus}</strong>
        </span>
        {stats ? (
          <span className="muted" data-testid="gen-stats">
            {stats.newTokens} tokens in {(stats.ms / 1000).toFixed(1)} s · {((stats.newTokens * 1000) / stats.ms).toFixed(1)} tokens/s
          </span>
        ) : null}
      </div>
      {lab.genError ? <p className="error-text">{lab.genError}</p> : null}
      {lab.genTexts.map((text, i) => {
        const row = lab.genResult?.rows[i];
        return (
          <div className="sample" key={i}>
            <pre data-testid={`gen-output-${i}`}>{text || (running ? '…' : '')}</pre>
            {row ? (
              <span className="muted" data-testid={`gen-finish-${i}`}>
                {row.finishReason} · {row.completionIds.length} tokens · mean log p {mean(row.modelLogprobs).toFixed(2)}
              </span>
            ) : null}
          </div>
        );
      })}
    </section>
  );
}
