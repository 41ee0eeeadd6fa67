import { gguf } from '@huggingface/gguf';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { paramSpecs, type LlamaConfig } from '../../src/model/config';
import { randomParams } from '../../src/model/reference';
import { f16ToF32 } from '../../src/util/half';
import { rng } from '../../src/util/random';
import { ggufTensors, permuteRotary, writeGguf } from './gguf';
import { ggufTokens } from './llamaCpp';

const dir = mkdtempSync(join(tmpdir(), 'gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const QWEN: LlamaConfig = {
  vocab_size: 300, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  max_position_embeddings: 128, rms_norm_eps: 1e-6, rope_theta: 1e6, tie_word_embeddings: true, attention_bias: true,
};
const LLAMA: LlamaConfig = { ...QWEN, attention_bias: false, tie_word_embeddings: false, rms_norm_eps: 1e-5, rope_theta: 1e4 };

/** Writes `config` with seeded float64-reference weights and reads it back with Hugging Face's GGUF reader. */
async function roundTrip(config: LlamaConfig, dtype: 'f32' | 'f16', seed: number) {
  const params = randomParams(config, rng(seed));
  const file = join(dir, `m${seed}.gguf`);
  const bytes = writeGguf(file, config, (n) => Float32Array.from(params.get(n)!), { dtype, vocab: ggufTokens(config.vocab_size) });
  const parsed = await gguf(file, { allowLocalFile: true });
  return { params, file, bytes, parsed, raw: readFileSync(file) };
}

/** A tensor's values as stored: f32 or widened f16. */
function stored(raw: Buffer, at: number, n: number, dtype: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = dtype === 0 ? raw.readFloatLE(at + 4 * i) : f16ToF32(raw.readUInt16LE(at + 2 * i));
  return out;
}

describe('writeGguf', () => {
  for (const [name, config, arch] of [['Qwen2', QWEN, 'qwen2'], ['Llama', LLAMA, 'llama']] as const) {
    for (const dtype of ['f32', 'f16'] as const) {
      it(`${name} in ${dtype}: every tensor named, shaped and valued as llama.cpp reads it`, async () => {
        const seed = 7 + (dtype === 'f16' ? 1 : 0) + (arch === 'llama' ? 2 : 0);
        const { params, bytes, parsed, raw } = await roundTrip(config, dtype, seed);
        expect(bytes).toBe(raw.length);
        const md = parsed.metadata as Record<string, unknown>;
        expect(md['general.architecture']).toBe(arch);
        expect(md[`${arch}.block_count`]).toBe(2);
        expect(md[`${arch}.embedding_length`]).toBe(32);
        expect(md[`${arch}.attention.head_count_kv`]).toBe(2);
        expect(md[`${arch}.rope.freq_base`]).toBeCloseTo(config.rope_theta, 0);
        expect((md['tokenizer.ggml.tokens'] as string[]).length).toBe(300);
        const specs = paramSpecs(config);
        expect(parsed.tensorInfos.map((t) => t.name)).toEqual(ggufTensors(config, dtype).map((t) => t.name));
        expect(parsed.tensorInfos.some((t) => t.name === 'output.weight')).toBe(!config.tie_word_embeddings);
        const hd = config.hidden_size / config.num_attention_heads;
        for (const [i, info] of parsed.tensorInfos.entries()) {
          const spec = specs[i]!;
          // Innermost first: a Hugging Face [out, in] matrix is GGUF [in, out].
          expect(info.shape.map(Number)).toEqual([...spec.shape].reverse());
          const matrix = spec.shape.length === 2;
          expect(Number(info.dtype)).toBe(matrix && dtype === 'f16' ? 1 : 0);
          const at = Number(parsed.tensorDataOffset + info.offset);
          expect(at % 32).toBe(0);
          const got = stored(raw, at, spec.size, Number(info.dtype));
          let want = params.get(spec.name)!;
          // Llama's q and k rows are permuted to llama.cpp's pairwise rotary layout; the rest are as given.
          if (arch === 'llama' && /\.(q|k)_proj\./.test(spec.name)) {
            const heads = spec.name.includes('q_proj') ? config.num_attention_heads : config.num_key_value_heads;
            want = Float64Array.from(permuteRotary(Float32Array.from(want), heads, spec.size / (heads * hd)));
          }
          // Half rounding: relative 2⁻¹¹, and half its subnormal step near zero.
          const tol = matrix && dtype === 'f16' ? 2 ** -11 : 2 ** -24;
          for (let j = 0; j < spec.size; j++) expect(Math.abs(got[j]! - want[j]!)).toBeLessThanOrEqual(tol * Math.abs(want[j]!) + (dtype === 'f16' ? 2 ** -25 : 0));
        }
      });
    }
  }

  it("permuteRotary pairs each head's halves: row j and row d/2 + j become rows 2j and 2j + 1", () => {
    const heads = 3;
    const hd = 8;
    const cols = 5;
    const r = rng(3);
    const w = Float32Array.from({ length: heads * hd * cols }, () => r() - 0.5);
    const p = permuteRotary(w, heads, cols);
    for (let h = 0; h < heads; h++)
      for (let j = 0; j < hd / 2; j++)
        for (let c = 0; c < cols; c++) {
          expect(p[(h * hd + 2 * j) * cols + c]).toBe(w[(h * hd + j) * cols + c]);
          expect(p[(h * hd + 2 * j + 1) * cols + c]).toBe(w[(h * hd + hd / 2 + j) * cols + c]);
        }
  });

  it('refuses a vocabulary the tokens do not cover, and RoPE scaling it does not write', () => {
    const read = () => new Float32Array(0);
    expect(() => writeGguf(join(dir, 'x.gguf'), QWEN, read, { dtype: 'f32', vocab: ggufTokens(299) })).toThrow(/299 tokens for a vocabulary of 300/);
    const scaled = { ...QWEN, rope_scaling: { rope_type: 'linear', factor: 2 } } as LlamaConfig;
    expect(() => writeGguf(join(dir, 'x.gguf'), scaled, read, { dtype: 'f32', vocab: ggufTokens(300) })).toThrow(/RoPE scaling/);
  });
});
