import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testRuntime } from '../gpu/testUtils';
import { readConfigJson } from './configJson';
import { Transformer, initialParams } from './transformer';

/**
 * transformers' logits for a random model with SmolLM2-135M's exact configuration and Llama 3.x
 * RoPE scaling (scripts/fixtures/make_smollm2_fixture.py). The weights are regenerated here from
 * the fixture's seed by the same initialiser that wrote the checkpoint transformers loaded.
 */
interface Fixture {
  config_file: string;
  seed: number;
  std: number;
  B: number;
  T: number;
  tokens: number[];
  mask: number[];
  picked_ids: number[];
  rows: { b: number; t: number; logsumexp: number; argmax: number; max: number; picked: number[] }[];
}

describe('a real-size configuration against Hugging Face transformers', () => {
  it('SmolLM2-135M (30 layers, hidden 576, 9 heads, 3 KV heads, tied, llama3 RoPE): logits within 1e-4', async () => {
    const f = JSON.parse(readFileSync(new URL('./fixtures/hf-smollm2-135m.json', import.meta.url), 'utf8')) as Fixture;
    const config = readConfigJson(readFileSync(f.config_file, 'utf8'));
    expect(config).toMatchObject({ num_hidden_layers: 30, hidden_size: 576, num_attention_heads: 9, num_key_value_heads: 3, tie_word_embeddings: true });
    expect(config.rope_scaling?.rope_type).toBe('llama3');
    const rt = await testRuntime();
    const model = Transformer.fromFlat(rt, config, initialParams(config, f.seed, f.std));
    const logits = await rt.read(model.forward({ B: f.B, T: f.T, tokens: f.tokens, mask: f.mask }));
    model.destroy();
    const V = config.vocab_size;
    expect(f.rows.length).toBe(f.mask.filter(Boolean).length);
    for (const r of f.rows) {
      const row = logits.subarray((r.b * f.T + r.t) * V, (r.b * f.T + r.t + 1) * V);
      let max = -Infinity;
      let argmax = -1;
      for (let i = 0; i < V; i++) if (row[i]! > max) [max, argmax] = [row[i]!, i];
      let sum = 0;
      for (let i = 0; i < V; i++) sum += Math.exp(row[i]! - max);
      const where = `row ${r.b} position ${r.t}`;
      const scale = Math.max(1, Math.abs(r.max));
      expect(Math.abs(max - r.max) / scale, `${where}: max`).toBeLessThan(1e-4);
      expect(Math.abs(max + Math.log(sum) - r.logsumexp) / scale, `${where}: logsumexp`).toBeLessThan(1e-4);
      expect(argmax, `${where}: argmax`).toBe(r.argmax);
      f.picked_ids.forEach((id, k) => expect(Math.abs(row[id]! - r.picked[k]!) / scale, `${where}: logit ${id}`).toBeLessThan(1e-4));
    }
  });
});
