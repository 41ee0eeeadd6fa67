// llama.cpp's decode peer, built by scripts/llamaCpp.mjs (LLAMA_DECODE names it): run alone by
// scripts/test.mjs (SAGE_TESTS=llama), on llama.cpp's CPU backend here. The logits check is what
// makes the peer's figures comparable: llama.cpp runs the engine's model, not one like it.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { LlamaConfig } from '../../src/model/config';
import { randomParams, refForward, type RefParams } from '../../src/model/reference';
import { halvesToF32, f32ToHalves } from '../../src/util/half';
import { rng } from '../../src/util/random';
import { writeGguf } from './gguf';
import { ggufTokens, llamaDecode, llamaLogits } from './llamaCpp';

const binary = process.env.LLAMA_DECODE;
if (!binary) throw new Error('LLAMA_DECODE names the peer (scripts/test.mjs builds it with scripts/llamaCpp.mjs)');
const env = { ...process.env, LLAMA_DECODE_LIBS: dirname(binary) };
const dir = mkdtempSync(join(tmpdir(), 'llama-peer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BASE: LlamaConfig = {
  vocab_size: 300, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  max_position_embeddings: 256, rms_norm_eps: 1e-6, rope_theta: 1e4, tie_word_embeddings: true, attention_bias: true,
};
const SHAPES: [string, LlamaConfig][] = [
  ['Qwen2 (biases, tied head)', BASE],
  ['Llama (rotary rows permuted, own head)', { ...BASE, attention_bias: false, tie_word_embeddings: false, num_attention_heads: 2, num_key_value_heads: 1, rms_norm_eps: 1e-5 }],
];

function model(config: LlamaConfig, seed: number, dtype: 'f32' | 'f16'): { file: string; params: RefParams } {
  const params = randomParams(config, rng(seed));
  const file = join(dir, `m${seed}-${dtype}.gguf`);
  writeGguf(file, config, (n) => Float32Array.from(params.get(n)!), { dtype, vocab: ggufTokens(config.vocab_size) });
  return { file, params };
}

/** The float64 reference's logits [T·V] of one prompt. */
function reference(config: LlamaConfig, params: RefParams, tokens: number[]): Float64Array {
  const T = tokens.length;
  return refForward(config, params, { B: 1, T, tokens: Int32Array.from(tokens), targets: new Int32Array(T).fill(-1), weights: new Float64Array(T) }).logits;
}

/** Largest |llama.cpp − reference| over every position's logits, against the largest |reference|. */
function worst(got: number[][], want: Float64Array, V: number): number {
  let err = 0;
  let big = 0;
  got.forEach((row, t) => {
    expect(row.length).toBe(V);
    row.forEach((x, v) => {
      err = Math.max(err, Number.isNaN(x) ? Infinity : Math.abs(x - want[t * V + v]!));
      big = Math.max(big, Math.abs(want[t * V + v]!));
    });
  });
  return err / big;
}

describe("llama.cpp's peer runs the engine's model", () => {
  for (const [name, config] of SHAPES) {
    it(`${name}: every position's logits match the float64 reference (f32 file)`, async () => {
      for (const seed of [11, 12]) {
        const { file, params } = model(config, seed, 'f32');
        const r = rng(seed + 100);
        const tokens = Array.from({ length: 9 }, () => Math.floor(r() * config.vocab_size));
        const got = await llamaLogits(binary, env, file, tokens);
        expect(got.length).toBe(tokens.length);
        // f32 throughout (weights, cache, no flash attention): float rounding alone. A wrong
        // layout (say, unpermuted rotary rows) is off by a third of the largest logit.
        expect(worst(got, reference(config, params, tokens), config.vocab_size)).toBeLessThan(1e-5);
      }
    });
  }

  it('an f16 file, as the peer runs: the logits of its rounded weights, within f16 products', async () => {
    const config = SHAPES[0]![1];
    const { file, params } = model(config, 21, 'f16');
    // The reference over the weights as the file holds them: matrices rounded to half.
    const rounded: RefParams = new Map([...params].map(([n, v]) => [n, n.endsWith('.weight') && !n.endsWith('norm.weight') ? Float64Array.from(halvesToF32(f32ToHalves(Float32Array.from(v)))) : v]));
    const tokens = [5, 250, 17, 3, 99, 140];
    const got = await llamaLogits(binary, env, file, tokens);
    const err = worst(got, reference(config, rounded, tokens), config.vocab_size);
    // llama.cpp's CPU backend rounds the activations to half for f16 matrices too.
    expect(err).toBeLessThan(1e-2);
    expect(err).toBeGreaterThan(0);
  });
});

describe('llama_decode measures', () => {
  it('rows sampled together, host and device sampling, three timed pairs each, from one process', async () => {
    const { file } = model(SHAPES[0]![1], 31, 'f16');
    const figures = await llamaDecode(binary, env, { model: file, rows: [3, 1], prompt: 5, newTokens: 4, sampling: ['host', 'backend'] });
    expect(figures.map((d) => d.rows)).toEqual([3, 3, 1, 1]);
    figures.forEach((d, i) => {
      const rows = d.rows;
      expect(d).toMatchObject({ prompt: 5, newTokens: 4 });
      expect(d.runs).toHaveLength(3);
      for (const run of d.runs) {
        expect(run.longS).toBeGreaterThan(0);
        expect(run.shortS).toBeGreaterThan(0);
        // rows · (new − 1) tokens over the difference of the pair (times printed to the nanosecond);
        // no rate where both took the same time.
        if (run.tokensPerS === null) expect(run.longS).toBe(run.shortS);
        else expect(run.tokensPerS / ((rows * 3) / (run.longS - run.shortS))).toBeCloseTo(1, 4);
      }
      // The median of the three (a missing rate, an infinite one, sorts last, as the program sorts it).
      const sorted = d.runs.map((r) => r.tokensPerS ?? Infinity).sort((a, b) => a - b);
      expect(d.tokensPerS ?? Infinity).toBe(sorted[1]);
      // Host sampling is always on the host; a device sampler is reported as run or fallen back.
      expect(i % 2 === 0 ? ['host'] : ['host', 'backend']).toContain(d.sampling);
    });
  });

  it('a bad option is one line and exit code 2', async () => {
    const err = await promisify(execFile)(binary, ['--model', join(dir, 'none.gguf'), '--rows', 'two']).catch((e: { code: number; stderr: string }) => e);
    expect(err).toMatchObject({ code: 2 });
    expect((err as { stderr: string }).stderr.trim()).toBe('llama_decode: not a count: --rows');
    const bad = await promisify(execFile)(binary, ['--model', join(dir, 'none.gguf'), '--sampling', 'host,gpu']).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 2, stderr: 'llama_decode: --sampling takes host or backend, not gpu\n' });
  });
});
