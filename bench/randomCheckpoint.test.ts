import { describe, expect, it } from 'vitest';
import { flatParamSize, paramSpecs, PRESETS } from '../src/model/config';
import { HFTokenizer } from '../src/model/tokenizer';

import { paddedByteTokenizer, randomCheckpoint } from './randomCheckpoint';

describe('a random checkpoint of a real shape', () => {
  it('pads the byte vocabulary so that every id the head can sample decodes, and encodes as bytes', () => {
    const vocab = 70_001; // past the 2-byte fillers, into the 3-byte ones
    const { tokenizerJson, tokenizerConfigJson } = paddedByteTokenizer(vocab);
    const tok = HFTokenizer.fromJson(tokenizerJson, tokenizerConfigJson);
    expect(tok.vocabSize).toBe(vocab);
    const text = 'Solve 12+7 = <answer>19</answer> é';
    expect(tok.encode(text)).toEqual([...new TextEncoder().encode(text)]);
    expect(tok.decode(tok.encode(text))).toBe(text);
    const seen = new Set<string>();
    for (const id of [264, 265, 300, 65_799, 65_800, vocab - 1]) {
      const s = tok.decode([id]);
      expect(s.length).toBeGreaterThan(0);
      seen.add(s);
    }
    expect(seen.size).toBe(6);
    // The chat template wraps a prompt as Qwen's does.
    expect(tok.decode(tok.encodePrompt('hi'))).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('makes each tensor of the shape from its own seeded stream, norms ones', () => {
    const config = { ...PRESETS.tiny!, vocab_size: 1024 };
    const a = randomCheckpoint(config, 3);
    const b = randomCheckpoint(config, 3);
    const specs = paramSpecs(config);
    const flat = a.weights.flat();
    expect(flat.length).toBe(flatParamSize(config));
    for (const s of specs) {
      const w = b.weights.read(s.name);
      expect(w.length).toBe(s.size);
      expect(flat.subarray(s.offset, s.offset + s.size)).toEqual(w);
      if (s.name.endsWith('norm.weight')) expect(w.every((x) => x === 1)).toBe(true);
      else expect(w.reduce((m, x) => Math.max(m, Math.abs(x)), 0)).toBeLessThanOrEqual(0.02);
    }
    const matrix = specs.find((s) => s.name.endsWith('q_proj.weight'))!.name;
    expect(randomCheckpoint(config, 4).weights.read(matrix)).not.toEqual(a.weights.read(matrix));
    expect(a.config).toBe(config);
  });
});
