import { useState } from 'react';
import { PRESETS, type PresetName } from '../../model/config';
import { DEFAULT_MODEL, SHIPPED_MODEL_CATALOGUE, shippedModelAbout } from '../../sage/shippedModels';
import { SHIPPED_MODELS, SHIPPED_ROLES_TAUGHT } from '../shippedData';
import { isActive } from '../runView';
import { HalfCheck } from './HalfCheck';
import { LoraControls } from './LoraControls';
import { useLab } from '../store';

const size = (n: number) => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(0)} MiB`);

/** The model the run trains: the shipped checkpoint unless another is held, a preset from scratch (with the warm-up) or a checkpoint folder. */
export function ModelChoice() {
  const model = useLab((s) => s.model);
  const busy = useLab((s) => s.modelBusy);
  const error = useLab((s) => s.modelError);
  const device = useLab((s) => s.device);
  const locked = useLab((s) => isActive(s.run.status));
  const { newModel, importModel, loadShippedModel, setTemplates, setKvCache } = useLab.getState();
  const [halfBase, setHalfBase] = useState(false);
  const disabled = !device || locked || busy !== null;
  const importPicked = (list: FileList | null) => list?.length && void importModel([...list], undefined, halfBase ? 'f16' : 'f32');
  return (
    <section className="panel" data-testid="model-choice">
      <h2>Model</h2>
      {model ? (
        <dl className="facts" data-testid="run-model-summary">
          <div className="row"><dt>model</dt><dd>{model.origin}</dd></div>
          <div className="row"><dt>parameters</dt><dd>{(model.parameters / 1e6).toFixed(2)} M ({model.layers} layers × {model.hidden}, {model.heads} heads, {model.kvHeads} kv)</dd></div>
          <div className="row"><dt>tokenizer</dt><dd>{model.tokenizer}, vocabulary {model.vocab}, context {model.context}</dd></div>
          <div className="row"><dt>prompts</dt><dd>{model.chatTemplate ? 'through the checkpoint’s chat template' : 'BOS, then the text'} · RoPE {model.rope}</dd></div>
          <div className="row"><dt>role prompts</dt><dd data-testid="model-templates">{model.templates ? `${model.templates} (trained with them)` : 'none recorded'}</dd></div>
          <div className="row"><dt>trained</dt><dd>{model.optimizerStep} optimizer steps</dd></div>
          <div className="row"><dt>base weights</dt><dd data-testid="model-base-dtype">{model.baseDtype === 'f16' ? 'f16 on the GPU (frozen; read as f32)' : 'f32'}</dd></div>
          <div className="row" title="estimates: weights, gradients, AdamW moments and activations in f32; the KV cache of the loop's widest generation">
            <dt>GPU memory</dt>
            <dd data-testid="model-memory">
              training at {model.memory.batch}×{model.memory.seqLen}: {size(model.memory.full)} in full, {size(model.memory.lora)} with LoRA,{' '}
              {size(model.memory.loraF16)} with LoRA on an f16 base · KV cache{' '}
              {size(model.memory.kvCache)} ({model.memory.kvRows} rows × {model.memory.kvPositions} positions{model.kvCache === 'f16' ? ', f16' : ''})
            </dd>
          </div>
        </dl>
      ) : (
        <p className="muted" data-testid="run-model-default">
          None held yet: Start loads {DEFAULT_MODEL}, {SHIPPED_MODEL_CATALOGUE[DEFAULT_MODEL]} (shipped with the lab), and runs
          the loop on it at once; “tiny from scratch” warms a fresh one up first instead.
        </p>
      )}
      <div className="row-controls">
        {(Object.keys(PRESETS) as PresetName[]).map((p) => (
          <button key={p} className="secondary" disabled={disabled} onClick={() => void newModel(p, 0).then(() => setTemplates('compact'))} data-testid={`model-preset-${p}`}>
            {p} from scratch
          </button>
        ))}
        {Object.keys(SHIPPED_MODELS).map((name) => {
          // A checkpoint whose record says its roles were taught was warmed up; else it is a pretrained base.
          const warmed = SHIPPED_ROLES_TAUGHT[name] === true;
          return (
            <button
              key={name}
              className="secondary"
              disabled={disabled}
              title={`shipped with the lab: ${shippedModelAbout(name) ?? name} (data/models/README.md)`}
              onClick={() => void loadShippedModel(name)}
              data-testid={`model-shipped-${name}`}
            >
              {name} ({warmed ? 'warmed up' : 'pretrained base'})
            </button>
          );
        })}
        <label className={`file-button${disabled ? ' disabled' : ''}`}>
          import a checkpoint folder
          {/* @ts-expect-error webkitdirectory is not in React's input attributes */}
          <input type="file" webkitdirectory="" multiple disabled={disabled} onChange={(e) => importPicked(e.target.files)} />
        </label>
        <label className={`file-button${disabled ? ' disabled' : ''}`}>
          or a .zip
          <input type="file" accept=".zip" disabled={disabled} onChange={(e) => importPicked(e.target.files)} />
        </label>
        <label className="check" title="half the GPU memory for the weights; the base is frozen and trains through a LoRA adapter">
          <input type="checkbox" checked={halfBase} onChange={(e) => setHalfBase(e.target.checked)} disabled={disabled} data-testid="import-f16" /> load its base in f16
        </label>
      </div>
      {model && (
        <div className="row-controls">
          <HalfCheck
            label="KV cache in f16"
            title="generation keeps each k and v as a half: half the KV cache's memory and of the bytes each decoded token's attention reads; scores and sums stay f32"
            half={model.kvCache === 'f16'}
            disabled={disabled}
            onChange={(d) => void setKvCache(d)}
            testId="kv-f16"
          />
        </div>
      )}
      <LoraControls />
      {busy && <p className="status running">{busy} …</p>}
      <LoadBar />
      {error && <p className="error-text">{error}</p>}
      <p className="muted small">A checkpoint (Hugging Face folder) needs no warm-up: with one held, warm-up steps default to 0; a preset from scratch warms up first.</p>
    </section>
  );
}

/** The weights of an import reaching the GPU: one bar for the shard being read. */
function LoadBar() {
  const load = useLab((s) => s.modelLoad);
  if (!load) return null;
  const share = load.total > 0 ? load.bytes / load.total : 1;
  return (
    <div className="load-bar" data-testid="model-load">
      <span className="small">
        {load.file} ({load.shard} of {load.shards}) · {(load.bytes / 2 ** 20).toFixed(0)} of {(load.total / 2 ** 20).toFixed(0)} MiB
      </span>
      <progress max={1} value={share} />
    </div>
  );
}
