import { useState } from 'react';
import { checkLora, DEFAULT_LORA, LORA_TARGETS, type LoraConfig, type LoraTarget } from '../../model/lora';
import { canSaveToFolder } from '../checkpointFiles';
import { isActive } from '../runView';
import { useLab } from '../store';
import { errorText } from '../../util/errorText';
import { HalfCheck } from './HalfCheck';

/** The adapter a form's text fields describe, or the reason they do not describe one. */
function parseForm(rank: string, alpha: string, targets: LoraTarget[]): LoraConfig | string {
  const lora: LoraConfig = { rank: Number(rank), alpha: Number(alpha), targets };
  try {
    checkLora(lora);
  } catch (e) {
    return errorText(e);
  }
  return lora;
}

/**
 * What fine-tuning trains: the whole model, or a LoRA adapter on the frozen model (rank,
 * alpha, target projections), fresh or a PEFT adapter folder; the adapter exports alone.
 */
export function LoraControls() {
  const model = useLab((s) => s.model);
  const busy = useLab((s) => s.modelBusy);
  const locked = useLab((s) => isActive(s.run.status));
  const { setLora, addAdapter, exportAdapter, setBaseDtype } = useLab.getState();
  const [rank, setRank] = useState(String(DEFAULT_LORA.rank));
  const [alpha, setAlpha] = useState(String(DEFAULT_LORA.alpha));
  const [targets, setTargets] = useState<LoraTarget[]>([...DEFAULT_LORA.targets]);
  if (!model) return null;
  const disabled = locked || busy !== null;
  const parsed = parseForm(rank, alpha, targets);
  const lora = model.lora;
  const toggle = (t: LoraTarget) => setTargets(targets.includes(t) ? targets.filter((x) => x !== t) : [...targets, t]);
  return (
    <div className="lora" data-testid="lora-controls">
      <p data-testid="lora-summary">
        <strong>trains</strong>{' '}
        {lora
          ? `a LoRA adapter: r ${lora.rank}, alpha ${lora.alpha}, on ${lora.targets.join(', ')} — ${(lora.trainable / 1e6).toFixed(2)} M parameters, the base frozen in ${model.baseDtype}`
          : `the whole model (${(model.parameters / 1e6).toFixed(2)} M parameters)`}
      </p>
      <div className="row-controls">
        <label>
          rank <input type="number" min={1} max={1024} value={rank} onChange={(e) => setRank(e.target.value)} disabled={disabled} data-testid="lora-rank" />
        </label>
        <label title="the update is scaled by alpha / rank">
          alpha <input type="number" min={0} step="any" value={alpha} onChange={(e) => setAlpha(e.target.value)} disabled={disabled} data-testid="lora-alpha" />
        </label>
        {LORA_TARGETS.map((t) => (
          <label key={t} className="check">
            <input type="checkbox" checked={targets.includes(t)} onChange={() => toggle(t)} disabled={disabled} /> {t.replace('_proj', '')}
          </label>
        ))}
      </div>
      {typeof parsed === 'string' && <p className="error-text" data-testid="lora-error">{parsed}</p>}
      <div className="row-controls">
        <button className="secondary" disabled={disabled || typeof parsed === 'string'} onClick={() => typeof parsed !== 'string' && void setLora(parsed)} data-testid="lora-apply">
          {lora ? 'replace with a fresh adapter' : 'train a LoRA adapter'}
        </button>
        {lora && (
          <button className="secondary" disabled={disabled} onClick={() => void setLora(null)} data-testid="lora-off">
            train the whole model
          </button>
        )}
        <label className={`file-button${disabled ? ' disabled' : ''}`} title="adapter_config.json and adapter_model.safetensors, as PEFT saves them">
          add a PEFT adapter folder
          {/* @ts-expect-error webkitdirectory is not in React's input attributes */}
          <input type="file" webkitdirectory="" multiple disabled={disabled} onChange={(e) => e.target.files?.length && void addAdapter([...e.target.files])} />
        </label>
        {(lora || model.baseDtype === 'f16') && (
          <HalfCheck
            label="base in f16"
            title="the frozen base in half precision: half its GPU memory; every product and sum stays f32"
            half={model.baseDtype === 'f16'}
            disabled={disabled}
            onChange={(d) => void setBaseDtype(d)}
            testId="lora-f16"
          />
        )}
        {lora && canSaveToFolder() && (
          <button className="secondary" disabled={disabled} onClick={() => void exportAdapter('folder')} data-testid="lora-export-folder">
            save the adapter (PEFT) to a folder
          </button>
        )}
        {lora && (
          <button className="secondary" disabled={disabled} onClick={() => void exportAdapter('zip')} data-testid="lora-export">
            {canSaveToFolder() ? 'or as a .zip' : 'download the adapter (PEFT) as a .zip'}
          </button>
        )}
      </div>
      <p className="muted small">
        A fresh adapter starts at the model (B = 0) and restarts the optimizer. A LoRA checkpoint holds the merged model, which loads anywhere,
        and the adapter alone in adapter/.
      </p>
    </div>
  );
}
