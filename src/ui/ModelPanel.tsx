import { PRESETS, type PresetName } from '../model/config';
import { memoryEstimate } from '../model/memory';
import { useLab } from './store';

const MiB = (n: number) => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`);

/** Presets with their size and the GPU memory a training run of them holds. */
export function ModelPanel() {
  const device = useLab((s) => s.device);
  const maxBinding = device?.limits.maxStorageBufferBindingSize;
  const batch = 8;
  return (
    <section className="panel wide">
      <h2>Model presets</h2>
      <p className="muted">
        Llama-family decoders with a byte-level tokenizer, trained from scratch. Memory for training at batch {batch} and
        full context: weights, gradients and AdamW moments in f32, plus activations.
      </p>
      <table className="grid" data-testid="presets">
        <thead>
          <tr>
            <th>preset</th>
            <th>layers × hidden</th>
            <th>heads (kv)</th>
            <th>context</th>
            <th>parameters</th>
            <th>weights</th>
            <th>activations</th>
            <th>total</th>
            <th>fits this GPU</th>
          </tr>
        </thead>
        <tbody>
          {(Object.keys(PRESETS) as PresetName[]).map((name) => {
            const c = PRESETS[name];
            const est = memoryEstimate(c, batch, c.max_position_embeddings);
            const fits = maxBinding === undefined ? null : est.largestBuffer <= maxBinding;
            return (
              <tr key={name} data-testid={`preset-${name}`}>
                <td>{name}</td>
                <td>
                  {c.num_hidden_layers} × {c.hidden_size}
                </td>
                <td>
                  {c.num_attention_heads} ({c.num_key_value_heads})
                </td>
                <td>{c.max_position_embeddings}</td>
                <td>{(est.parameters / 1e6).toFixed(2)} M</td>
                <td>{MiB(est.weights)}</td>
                <td>{MiB(est.activations)}</td>
                <td>{MiB(est.total)}</td>
                <td className={fits === false ? 'error-text' : ''}>
                  {fits === null ? '—' : fits ? 'yes' : `no: largest buffer ${MiB(est.largestBuffer)} > ${MiB(maxBinding!)}`}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
