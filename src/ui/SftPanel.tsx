import { useShallow } from 'zustand/react/shallow';
import { useEffect, useState, type DragEvent } from 'react';
import { describeCorpusFormat, type DocumentSplit } from '../data/corpus';
import { describeCounts } from '../data/import';
import { PRESETS, type PresetName } from '../model/config';
import { DEFAULT_SFT, type SftSettings } from '../train/sftSettings';
import { canSaveToFolder } from './checkpointFiles';
import { LossChart } from './LossChart';
import { pick, useLab } from './store';

/** The lab's default seeds (the demo curriculum), and the second built-in choice. */
const CURRICULUM_SEEDS = 'curriculum-500.jsonl';
const GSM8K_SEEDS = 'gsm8k-148.jsonl';
/** How many skipped lines are listed; the rest are counted. */
const LISTED_ERRORS = 12;

/** How a picked file is read: prompt → response pairs, or a corpus of documents (the loss on every token). */
const READ_AS: { value: 'pairs' | DocumentSplit; label: string }[] = [
  { value: 'pairs', label: 'prompt → response pairs' },
  { value: 'lines', label: 'documents, one a line (or JSONL "text")' },
  { value: 'paragraphs', label: 'documents, paragraphs' },
];

const NUMERIC_FIELDS: { key: keyof SftSettings; label: string; min: number; step: number | 'any' }[] = [
  { key: 'steps', label: 'steps', min: 1, step: 1 },
  { key: 'batchSize', label: 'batch', min: 1, step: 1 },
  { key: 'seqLen', label: 'sequence length', min: 2, step: 1 },
  { key: 'accumulation', label: 'accumulation', min: 1, step: 1 },
  { key: 'lr', label: 'learning rate', min: 0, step: 'any' },
  { key: 'warmupSteps', label: 'warm-up steps', min: 0, step: 1 },
  { key: 'seed', label: 'seed', min: 0, step: 1 },
];

/** Supervised fine-tuning in the engine worker: seeds in, live loss, checkpoint out. */
export function SftPanel() {
  // Only what this panel shows: a loop run's events must not re-render it.
  const lab = useLab(useShallow((s) => pick(s, ['corpus', 'device', 'exportModel', 'exported', 'importModel', 'loadCorpus', 'loadSeeds', 'loadShippedSeeds', 'model', 'modelBusy', 'modelError', 'newModel', 'readLoadedAs', 'remapSeeds', 'runSft', 'seeds', 'seedsError', 'sftError', 'sftResult', 'sftStatus', 'sftSteps', 'stopSft'])));
  const [settings, setSettings] = useState<SftSettings>({ ...DEFAULT_SFT, steps: 100 });
  const [preset, setPreset] = useState<PresetName>('tiny');
  const [dragging, setDragging] = useState(false);
  const [fields, setFields] = useState('');
  const [readAs, setReadAs] = useState<'pairs' | DocumentSplit>('pairs');
  const { device, seeds, loadShippedSeeds } = lab;
  useEffect(() => {
    if (device && !seeds) void loadShippedSeeds(CURRICULUM_SEEDS);
    // Once, when the device is first ready: a file the user picked is never replaced.
  }, [device]);
  if (!device) return null;
  const running = lab.sftStatus === 'running';
  const busy = running || lab.modelBusy !== null;
  const last = lab.sftSteps[lab.sftSteps.length - 1];

  const readSeedFile = async (file: File | undefined) => {
    if (!file) return;
    await (readAs === 'pairs' ? lab.loadSeeds(file.name, file) : lab.loadCorpus(file.name, file, readAs));
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    void readSeedFile(e.dataTransfer.files[0]);
  };

  const status = running ? 'running' : lab.sftStatus === 'error' ? 'error' : lab.sftResult ? (lab.sftResult.stopped ? 'stopped' : 'done') : 'idle';
  return (
    <section className="panel wide">
      <h2>Supervised fine-tuning</h2>
      <p className="muted">
        Trains the held model on prompt → response pairs (loss on response tokens only), or on a corpus of documents (loss on
        every token: pretraining, or continuing a model on domain text, as <code>npm run pretrain</code>), in the engine
        worker, then exports it as a Hugging Face folder that <code>transformers</code> loads unchanged.
      </p>

      <h3>Training data</h3>
      <div
        className={`dropzone${dragging ? ' over' : ''}`}
        data-testid="seed-drop"
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        <label>
          read as{' '}
          <select
            value={readAs}
            data-testid="seed-read-as"
            onChange={(e) => {
              const as = e.target.value as 'pairs' | DocumentSplit;
              setReadAs(as);
              void lab.readLoadedAs(as);
            }}
          >
            {READ_AS.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        <span>Drop a JSONL or text file here, or</span>
        <label className="file-button">
          choose one…
          <input type="file" accept=".jsonl,.json,.txt" data-testid="seed-file" onChange={(e) => void readSeedFile(e.target.files?.[0])} />
        </label>
        <button
          type="button"
          onClick={() => {
            setReadAs('pairs');
            void lab.loadShippedSeeds(CURRICULUM_SEEDS);
          }}
          data-testid="seed-curriculum"
        >
          Demo curriculum (500)
        </button>
        <button
          type="button"
          onClick={() => {
            setReadAs('pairs');
            void lab.loadShippedSeeds(GSM8K_SEEDS);
          }}
          data-testid="seed-demo"
        >
          GSM8K demo seeds (148)
        </button>
      </div>
      {lab.seedsError ? <p className="error-text">{lab.seedsError}</p> : null}
      {lab.corpus ? (
        <div data-testid="corpus-summary">
          <p>
            <strong>{lab.corpus.documents}</strong> documents from <code>{lab.corpus.name}</code> ({describeCorpusFormat(lab.corpus.format, lab.corpus.split)},{' '}
            {lab.corpus.characters} characters): trained with the loss on every token
            {lab.corpus.errorCount ? (
              <span className="error-text">
                {' '}
                · {lab.corpus.errorCount} line{lab.corpus.errorCount > 1 ? 's' : ''} skipped
              </span>
            ) : null}
          </p>
          {lab.corpus.errors.length ? (
            <ul className="line-errors">
              {lab.corpus.errors.slice(0, LISTED_ERRORS).map((e) => (
                <li key={e.line}>
                  line {e.line}: {e.reason}
                </li>
              ))}
              {lab.corpus.errorCount > LISTED_ERRORS ? <li>… and {lab.corpus.errorCount - LISTED_ERRORS} more</li> : null}
            </ul>
          ) : null}
        </div>
      ) : null}
      {lab.seeds ? (
        <div data-testid="seed-summary">
          <p>
            <strong>{lab.seeds.pairs}</strong> examples from <code>{lab.seeds.name}</code>
            {lab.seeds.errorCount ? (
              <span className="error-text">
                {' '}
                · {lab.seeds.errorCount} line{lab.seeds.errorCount > 1 ? 's' : ''} skipped
              </span>
            ) : null}
          </p>
          <p className="muted" data-testid="seed-formats">
            as problems: {describeCounts(lab.seeds.counts)}
            {lab.seeds.duplicates ? ` · ${lab.seeds.duplicates} duplicates loaded once` : ''}
            {lab.seeds.notProblems ? ` · ${lab.seeds.notProblems} lines not problems` : ''}
            {lab.seeds.fields ? ` · mapping ${lab.seeds.fields}` : ''}
          </p>
          <form
            className="row-controls"
            onSubmit={(e) => {
              e.preventDefault();
              void lab.remapSeeds(fields);
            }}
          >
            <label>
              field mapping{' '}
              <input value={fields} placeholder="question=q,answer=a" onChange={(e) => setFields(e.target.value)} data-testid="seed-fields" />
            </label>
            <button type="submit" data-testid="seed-remap">
              {fields.trim() ? 'Apply' : 'Detect formats'}
            </button>
          </form>
          {lab.seeds.errors.length ? (
            <ul className="line-errors" data-testid="seed-errors">
              {lab.seeds.errors.slice(0, LISTED_ERRORS).map((e) => (
                <li key={e.line}>
                  line {e.line}: {e.reason}
                </li>
              ))}
              {lab.seeds.errorCount > LISTED_ERRORS ? <li>… and {lab.seeds.errorCount - LISTED_ERRORS} more</li> : null}
            </ul>
          ) : null}
        </div>
      ) : null}

      <h3>Model</h3>
      <div className="row-controls">
        <label>
          preset{' '}
          <select value={preset} onChange={(e) => setPreset(e.target.value as PresetName)} data-testid="sft-preset">
            {(Object.keys(PRESETS) as PresetName[]).map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <button type="button" disabled={busy} onClick={() => void lab.newModel(preset, settings.seed)} data-testid="model-new">
          New model
        </button>
        <label className="file-button">
          Import checkpoint…
          <input
            type="file"
            multiple
            accept=".zip,.json,.safetensors"
            disabled={busy}
            data-testid="model-import"
            onChange={(e) => {
              const files = [...(e.target.files ?? [])];
              e.target.value = '';
              void lab.importModel(files);
            }}
          />
        </label>
        {lab.modelBusy ? <span className="status running">{lab.modelBusy}…</span> : null}
      </div>
      {lab.model ? (
        <p data-testid="model-summary">
          <strong>{lab.model.origin}</strong> · {(lab.model.parameters / 1e6).toFixed(2)} M parameters · {lab.model.layers} layers ×{' '}
          {lab.model.hidden} · {lab.model.heads} heads ({lab.model.kvHeads} kv) · vocab {lab.model.vocab} · context{' '}
          {lab.model.context} · {lab.model.tokenizer} tokenizer · trained {lab.model.optimizerStep} steps
          {lab.model.lora ? ` · LoRA r ${lab.model.lora.rank} (${(lab.model.lora.trainable / 1e6).toFixed(2)} M trainable, base frozen)` : ''}
        </p>
      ) : (
        <p className="muted">No model yet: Start begins from a fresh tiny preset.</p>
      )}
      {lab.modelError ? (
        <p className="error-text" data-testid="model-error">
          {lab.modelError}
        </p>
      ) : null}

      <h3>Run</h3>
      <div className="row-controls settings">
        {NUMERIC_FIELDS.map((f) => (
          <label key={f.key}>
            {f.label}{' '}
            <input
              type="number"
              value={settings[f.key] as number}
              step={f.step}
              min={f.min}
              data-testid={`sft-${f.key}`}
              onChange={(e) => setSettings({ ...settings, [f.key]: Number(e.target.value) })}
            />
          </label>
        ))}
        <label>
          <input type="checkbox" checked={settings.packing} onChange={(e) => setSettings({ ...settings, packing: e.target.checked })} />{' '}
          packing
        </label>
      </div>
      <div className="row-controls">
        <button type="button" disabled={busy || !(lab.seeds?.pairs || lab.corpus?.documents)} onClick={() => void lab.runSft(settings)} data-testid="sft-start">
          {running ? 'Training…' : lab.model?.optimizerStep ? 'Continue training' : 'Start'}
        </button>
        <button type="button" disabled={!running} onClick={lab.stopSft} data-testid="sft-stop">
          Stop
        </button>
        <span>
          Status: <strong className={`status ${status}`} data-testid="sft-status">{status}</strong>
        </span>
        {last ? (
          <span className="muted" data-testid="sft-progress">
            step {last.step} · loss {last.loss.toFixed(3)} · grad-norm {last.gradNorm.toFixed(2)} · lr {last.lr.toExponential(1)} ·{' '}
            {last.tokensPerS ? `${last.tokensPerS.toFixed(0)} tokens/s` : 'compiling…'}
          </span>
        ) : null}
      </div>
      {lab.sftError ? <p className="error-text">{lab.sftError}</p> : null}
      {lab.sftResult?.skipped ? (
        <p className="error-text">{lab.sftResult.skipped} updates skipped for a non-finite gradient (weights left unchanged)</p>
      ) : null}
      <LossChart data={lab.sftSteps} testId="sft-chart" />

      <h3>Checkpoint</h3>
      <div className="row-controls">
        <button type="button" disabled={busy || !lab.model} onClick={() => void lab.exportModel('zip')} data-testid="export-zip">
          Download .zip
        </button>
        {canSaveToFolder() ? (
          <button type="button" disabled={busy || !lab.model} onClick={() => void lab.exportModel('folder')} data-testid="export-folder">
            Save to folder…
          </button>
        ) : null}
        {lab.exported ? (
          <span className="muted" data-testid="exported">
            {lab.exported}
          </span>
        ) : null}
      </div>
    </section>
  );
}
