import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime } from '../gpu/testUtils';
import type { Runtime, RuntimeCounters } from '../gpu/runtime';
import { headDim, type LlamaConfig } from './config';
import { Decoder } from './decoder';
import { Generator, type GeneratedRow } from './generate';
import { ByteTokenizer } from './tokenizer';
import { HEAD_NORM_ONCE_COLUMNS } from './transformer';
import { DECODE_CONFIG, decodeModel } from './testUtils';

const base = DECODE_CONFIG;

const CONFIGS: [string, LlamaConfig][] = [
  ['GQA, tied', base],
  ['MHA, untied, head_dim 6', { ...base, num_key_value_heads: 4, tie_word_embeddings: false, head_dim: 6 }],
  ['GQA, Qwen2 biases', { ...base, attention_bias: true, num_attention_heads: 6, head_dim: 8 }],
];

const model = decodeModel;

/** Prompts of the given lengths of random byte tokens. */
function prompts(lengths: number[], seed: number): number[][] {
  const r = rng(seed);
  return lengths.map((n) => Array.from({ length: n }, () => Math.floor(r() * 256)));
}

const LENGTHS = [1, 5, 17, 40, 9];
/** Logits from an f16 KV cache against the f32 forward: the worst of 22 seeds × 6 steps was 1.5e-3. */
const KV_F16_TOL = 1e-2;
/** Every buffer starts as NaN, so reading a cache slot or row that no kernel wrote shows. */
const POISON = { poison: true };

/** A left-padded batch of whole sequences, as the training forward takes it. */
function paddedBatch(seqs: number[][]) {
  const T = Math.max(...seqs.map((s) => s.length));
  const tokens: number[] = [];
  const mask: number[] = [];
  const positions: number[] = [];
  for (const s of seqs) {
    const pad = T - s.length;
    for (let t = 0; t < T; t++) {
      tokens.push(t < pad ? 0 : s[t - pad]!);
      mask.push(t < pad ? 0 : 1);
      positions.push(t < pad ? 0 : t - pad);
    }
  }
  return { B: seqs.length, T, tokens, mask, positions };
}

const sequences = (rows: GeneratedRow[]) => rows.map((r) => [...r.promptIds, ...r.completionIds]);

describe.each(CONFIGS)('generation (%s)', (_, config) => {
  it('greedy decoding with the KV cache gives exactly the tokens of recomputing every step', async () => {
    const rt = await testRuntime(POISON);
    const seed = freshSeed();
    const m = model(rt, config, seed);
    const g = new Generator(m, new ByteTokenizer());
    const input = prompts(LENGTHS, seed);
    const opts = { temperature: 0, maxNewTokens: 12, eosTokenIds: [] };
    const cached = await g.generate(input, opts);
    const recomputed = await g.generate(input, { ...opts, useCache: false });
    expect(cached.rows.map((r) => r.completionIds), `seed ${seed}`).toEqual(recomputed.rows.map((r) => r.completionIds));
    expect(cached.rows.every((r) => r.finishReason === 'length' && r.completionIds.length === 12)).toBe(true);
    for (const [a, b] of cached.rows.map((r, i) => [r, recomputed.rows[i]!] as const)) {
      for (let k = 0; k < a.modelLogprobs.length; k++) expect(Math.abs(a.modelLogprobs[k]! - b.modelLogprobs[k]!)).toBeLessThan(1e-4);
    }
    g.release();
    m.destroy();
  });

  it('rows sharing a prompt share one prefill: the same samples and log-probs as computing every row', async () => {
    const rt = await testRuntime({ ...POISON, fusedPrologues: true });
    const seed = freshSeed();
    const m = model(rt, config, seed);
    const g = new Generator(m, new ByteTokenizer());
    const [a, b, c] = prompts([9, 17, 3], seed + 1);
    // Several samples of each prompt, interleaved, and one prompt alone.
    const input = [a!, b!, a!, a!, c!, b!];
    const opts = { temperature: 1, seed, maxNewTokens: 8, eosTokenIds: [] };
    const shared = await g.generate(input, opts);
    const apart = await g.generate(input, { ...opts, useCache: false });
    expect(shared.rows.map((r) => r.completionIds), `seed ${seed}`).toEqual(apart.rows.map((r) => r.completionIds));
    shared.rows.forEach((r, i) => {
      r.modelLogprobs.forEach((lp, k) => expect(Math.abs(lp - apart.rows[i]!.modelLogprobs[k]!), `seed ${seed}, row ${i}, token ${k}`).toBeLessThan(1e-4));
    });
    g.release();
    m.destroy();
  });

  it('records 9 dispatches per layer for a decode step (the rotary embedding fused into the cache store), 6 with fused prologues', async () => {
    for (const fusedPrologues of [false, true]) {
      const rt = await testRuntime({ fusedPrologues });
      const m = model(rt, config, freshSeed());
      const d = new Decoder(m, 3, 16);
      d.prefill(prompts([3, 5, 4], 1));
      const before = rt.counters.dispatches;
      d.step([0, 1, 2], [7, 8, 9]);
      // Embedding; per layer RMSNorm, q|k|v, rotate + store, attention, o (+ residual), RMSNorm,
      // gate|up, SwiGLU, down (+ residual); RMSNorm, LM head. Fused: each RMSNorm in the
      // projection after it, SwiGLU in the down projection.
      const [perLayer, head] = fusedPrologues ? [6, 1] : [9, 2];
      expect(rt.counters.dispatches - before, `fused prologues: ${fusedPrologues}`).toBe(1 + perLayer * config.num_hidden_layers + head);
      d.destroy();
      m.destroy();
    }
  });

  // The full forward keeps its norms and SwiGLU apart for the backward pass: against it the
  // decoder's fused prologues (each norm and the SwiGLU computed by the matmul reading them) show.
  // An f16 cache rounds each stored k and v to half once (exactly so, against float64, in
  // src/model/kernels/kvcache.test.ts): here its logits stay within KV_F16_TOL of the f32 forward's.
  // A prompt given twice takes the shared prefill, its cache rows gathered then rounded.
  it.each([
    [false, 'f32'],
    [true, 'f32'],
    [false, 'f16'],
  ] as const)("every decode step's logits equal the full forward's at that position (fused prologues: %s, %s cache)", async (fusedPrologues, kvDtype) => {
    if (kvDtype === 'f16' && headDim(config) % 4 !== 0) return;
    const rt = await testRuntime({ ...POISON, fusedPrologues });
    const seed = freshSeed();
    const m = model(rt, config, seed);
    const distinct = prompts(LENGTHS, seed + 1);
    const input = [...distinct, distinct[2]!];
    const B = input.length;
    const steps = 5;
    const P = Math.max(...LENGTHS);
    const d = new Decoder(m, B, P + steps, true, kvDtype);
    const V = config.vocab_size;
    // Feed random next tokens, dropping row 1 after two steps (a finished row).
    const r = rng(seed);
    const seqs = input.map((p) => [...p]);
    const all = input.map((_, b) => b);
    const perStep: { rows: number[]; logits: Float32Array }[] = [{ rows: all, logits: Float32Array.from(await rt.read(d.prefill(input))) }];
    let running = all;
    for (let k = 0; k < steps; k++) {
      if (k === 2) running = running.filter((b) => b !== 1);
      const tokens = running.map(() => Math.floor(r() * 256));
      running.forEach((b, i) => seqs[b]!.push(tokens[i]!));
      perStep.push({ rows: running, logits: Float32Array.from(await rt.read(d.step(running, tokens))) });
    }
    // The full forward over the longest sequences; every shorter row is a prefix of its own.
    const batch = paddedBatch(seqs);
    const full = await rt.read(m.forward(batch));
    perStep.forEach(({ rows, logits }, k) => {
      const ref = new Float32Array(rows.length * V);
      rows.forEach((b, i) => {
        const pad = batch.T - seqs[b]!.length;
        const t = pad + input[b]!.length - 1 + k;
        ref.set(full.subarray((b * batch.T + t) * V, (b * batch.T + t + 1) * V), i * V);
      });
      assertClose(`step ${k} logits (${kvDtype} cache), seed ${seed}`, logits, ref, V, kvDtype === 'f16' ? KV_F16_TOL : 1e-4);
    });
    d.destroy();
    m.destroy();
  });

  // A replayed step binds what its capture recorded and writes only its slot: every step of a
  // generation that crosses attention's schedules (flash-decoding's span of 64 slots, then the
  // cache's 70) and drops rows (a plan per row count) must give the recorded step's logits bit for bit.
  it.each([false, true])('replayed decode steps give exactly the logits of steps recorded anew (one row per invocation: %s)', async (serialRows) => {
    const rt = await testRuntime({ ...POISON, serialRows });
    const seed = freshSeed();
    const m = model(rt, config, seed);
    const input = prompts(LENGTHS, seed + 1);
    const P = Math.max(...LENGTHS);
    const steps = 30;
    const [replayed, recorded] = [true, false].map((replay) => new Decoder(m, input.length, P + steps, true, 'f32', replay));
    const first = await Promise.all([replayed, recorded].map(async (d) => rt.read(d!.prefill(input))));
    expect(first[0]).toEqual(first[1]);
    const r = rng(seed);
    let running = input.map((_, b) => b);
    const dispatches = [0, 0];
    for (let k = 0; k < steps; k++) {
      if (k === 7 || k === 19) running = running.filter((_, i) => i !== 1);
      const tokens = running.map(() => Math.floor(r() * 256));
      const logits: Float32Array[] = [];
      for (const [j, d] of [replayed!, recorded!].entries()) {
        const before = rt.counters.dispatches;
        logits.push(Float32Array.from(await rt.read(d.step(running, tokens))));
        dispatches[j] = dispatches[j]! + rt.counters.dispatches - before;
      }
      expect(logits[0]!.some(Number.isNaN), `step ${k}, seed ${seed}`).toBe(false);
      expect(logits[0], `step ${k}, seed ${seed}`).toEqual(logits[1]);
    }
    // The same work counted: a replay adds its plan's dispatches.
    expect(dispatches[0]).toBe(dispatches[1]);
    replayed!.destroy();
    recorded!.destroy();
    m.destroy();
  });

  it("sampled completions' log-probs equal the policy loss's at the same temperature on the finished sequences", async () => {
    const rt = await testRuntime(POISON);
    const seed = freshSeed();
    const m = model(rt, config, seed);
    const g = new Generator(m, new ByteTokenizer());
    const input = prompts(LENGTHS, seed + 2);
    const out = await g.generate(input, { temperature: 0.8, topK: 40, topP: 0.9, seed, maxNewTokens: 7, eosTokenIds: [] });
    const batch = paddedBatch(sequences(out.rows));
    const targets = new Array<number>(batch.B * batch.T).fill(-1);
    out.rows.forEach((row, b) => {
      const pad = batch.T - row.promptIds.length - row.completionIds.length;
      row.completionIds.forEach((tok, k) => (targets[b * batch.T + pad + row.promptIds.length - 1 + k] = tok));
    });
    // The update's forward at T = 0.8 (log-probs in column 1 of each token's loss, log-prob, entropy).
    const perToken = new Float32Array(4 * targets.length).fill(0);
    const tokOut = m.forwardPolicyLoss({ ...batch, targets }, perToken, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0, temperature: 0.8 });
    const ref = await rt.read(tokOut);
    out.rows.forEach((row, b) => {
      const pad = batch.T - row.promptIds.length - row.completionIds.length;
      row.modelLogprobs.forEach((lp, k) => {
        const want = ref[3 * (b * batch.T + pad + row.promptIds.length - 1 + k) + 1]!;
        expect(Math.abs(lp - want), `seed ${seed}, row ${b}, token ${k}`).toBeLessThan(1e-4);
      });
      // Sampling at temperature 0.8 sharpens the distribution: log q ≥ log p for the likely tokens it draws, and never +∞.
      expect(row.logprobs.every((x) => Number.isFinite(x) && x <= 0)).toBe(true);
    });
    g.release();
    m.destroy();
  });
});

describe('generation: a vocabulary past HEAD_NORM_ONCE_COLUMNS', () => {
  it('with fused prologues the final norm is one dispatch before the LM head, and the decode logits equal the full forward\'s', async () => {
    const config = { ...base, vocab_size: HEAD_NORM_ONCE_COLUMNS + 357 };
    const rt = await testRuntime({ ...POISON, fusedPrologues: true });
    const seed = freshSeed();
    const m = model(rt, config, seed);
    const input = prompts([6, 11, 3], seed + 1);
    const d = new Decoder(m, input.length, 16);
    const V = config.vocab_size;
    const first = Float32Array.from(await rt.read(d.prefill(input)));
    const tokens = input.map((_, b) => (seed + 31 * b) % 256);
    const before = rt.counters.dispatches;
    const next = await rt.read(d.step([0, 1, 2], tokens));
    // Embedding, 6 a layer, then RMSNorm and the LM head apart.
    expect(rt.counters.dispatches - before).toBe(1 + 6 * config.num_hidden_layers + 2);
    const seqs = input.map((p, b) => [...p, tokens[b]!]);
    const batch = paddedBatch(seqs);
    const full = await rt.read(m.forward(batch));
    [first, next].forEach((logits, k) => {
      const ref = new Float32Array(input.length * V);
      seqs.forEach((s, b) => {
        const t = batch.T - s.length + input[b]!.length - 1 + k;
        ref.set(full.subarray((b * batch.T + t) * V, (b * batch.T + t + 1) * V), b * V);
      });
      assertClose(`step ${k} logits, seed ${seed}`, logits, ref, V, 1e-4);
    });
    d.destroy();
    m.destroy();
  });
});

describe('generation: ending rows', () => {
  it('a row ending with EOS at its first token and a row running to the limit are both right', async () => {
    const rt = await testRuntime(POISON);
    const seed = freshSeed();
    const m = model(rt, base, seed);
    const tok = new ByteTokenizer();
    const g = new Generator(m, tok);
    // Row 0's first greedy token becomes EOS; the prompts are redrawn until another row never emits it.
    let input: number[][] = [];
    let free: GeneratedRow[] = [];
    for (let k = 0; k < 20; k++) {
      input = prompts([3, 8, 6], seed + k);
      free = (await g.generate(input, { temperature: 0, maxNewTokens: 10, eosTokenIds: [] })).rows;
      if (free.slice(1).some((r) => !r.completionIds.includes(free[0]!.completionIds[0]!))) break;
    }
    const eos = free[0]!.completionIds[0]!;
    const out = await g.generate(input, { temperature: 0, maxNewTokens: 10, eosTokenIds: [eos] });
    expect(out.rows[0]).toMatchObject({ completionIds: [eos], finishReason: 'eos', text: '' });
    expect(out.rows.some((r) => r.finishReason === 'length'), `seed ${seed}`).toBe(true);
    out.rows.slice(1).forEach((row, i) => {
      const ids = free[i + 1]!.completionIds;
      const end = ids.indexOf(eos);
      expect(row.completionIds, `seed ${seed}`).toEqual(end < 0 ? ids : ids.slice(0, end + 1));
      expect(row.finishReason).toBe(end < 0 ? 'length' : 'eos');
      expect(row.text).toBe(tok.decode(end < 0 ? ids : ids.slice(0, end)));
      expect(row.modelLogprobs).toEqual(free[i + 1]!.modelLogprobs.slice(0, row.completionIds.length));
    });
    g.release();
    m.destroy();
  });

  it('a stop string spanning two tokens ends the row, and the text keeps it', async () => {
    const rt = await testRuntime(POISON);
    const seed = freshSeed();
    const m = model(rt, base, seed);
    const tok = new ByteTokenizer();
    const g = new Generator(m, tok);
    const printable = (t: number) => t >= 32 && t < 127;
    // Redraw prompts until row 0's greedy completion has two printable bytes in a row past its start.
    let input: number[][] = [];
    let ids: number[] = [];
    let at = -1;
    for (let k = 0; k < 50 && at < 0; k++) {
      input = prompts([4, 6], seed + k);
      ids = (await g.generate(input, { temperature: 0, maxNewTokens: 16, eosTokenIds: [] })).rows[0]!.completionIds;
      at = ids.findIndex((t, i) => i >= 1 && printable(t) && printable(ids[i + 1] ?? -1));
    }
    expect(at, `seed ${seed}: no two printable tokens in a row`).toBeGreaterThanOrEqual(0);
    const stop = String.fromCharCode(ids[at]!, ids[at + 1]!);
    // The row ends at the first token whose text completes the stop string.
    let end = 1;
    while (!tok.decode(ids.slice(0, end)).includes(stop)) end++;
    const full = tok.decode(ids.slice(0, end));
    const out = await g.generate(input, { temperature: 0, maxNewTokens: 16, eosTokenIds: [], stop: ['never', stop] });
    const row = out.rows[0]!;
    expect(row.finishReason, `seed ${seed}, stop ${JSON.stringify(stop)}`).toBe('stop');
    expect(row.completionIds).toEqual(ids.slice(0, end));
    expect(row.text).toBe(full.slice(0, full.indexOf(stop) + 2));
    g.release();
    m.destroy();
  });
});

describe('generation: steps in flight', () => {
  it.each([
    ['sampled (top-k, top-p)', { temperature: 1, topK: 20, topP: 0.9 }],
    ['greedy', { temperature: 0 }],
  ])('%s: reading tokens 1, 2 or 4 steps late keeps exactly the tokens and log-probs of reading every step', async (_, sampling) => {
    const rt = await testRuntime(POISON);
    const seed = freshSeed();
    const m = model(rt, CONFIGS[2]![1], seed);
    const tok = new ByteTokenizer();
    const g = new Generator(m, tok);
    const r = rng(seed);
    // Random prompts, two of them shared (one prefill for both).
    const input = prompts(Array.from({ length: 5 }, () => 1 + Math.floor(r() * 20)), seed);
    input.push(input[1]!);
    const base = { ...sampling, seed, maxNewTokens: 20 };
    // EOS ids and a stop string taken from a free run, so that rows end at different steps for each reason.
    const free = (await g.generate(input, { ...base, eosTokenIds: [], stepsInFlight: 0 })).rows;
    const opts = {
      ...base,
      eosTokenIds: [free[0]!.completionIds[2]!, free[3]!.completionIds[9]!],
      stop: [tok.decode(free[4]!.completionIds.slice(5, 7))],
    };
    const sync = await g.generate(input, { ...opts, stepsInFlight: 0 });
    const ended = sync.rows.map((row) => row.completionIds.length);
    expect(new Set(ended).size, `seed ${seed}: rows ending at ${ended}`).toBeGreaterThan(1);
    for (const stepsInFlight of [1, 2, 4]) {
      const late = await g.generate(input, { ...opts, stepsInFlight });
      expect(late.rows, `seed ${seed}, ${stepsInFlight} steps in flight`).toEqual(sync.rows);
      // A row that ended costs at most the steps in flight.
      expect(late.stats.steps).toBeGreaterThanOrEqual(sync.stats.steps);
      expect(late.stats.steps).toBeLessThanOrEqual(sync.stats.steps + stepsInFlight);
    }
    g.release();
    m.destroy();
  });

  it('no bind group is made after the first decode step, one submit per step, and the host waits once per call', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const m = model(rt, base, seed);
    const g = new Generator(m, new ByteTokenizer());
    const input = prompts([4, 9, 2], seed);
    const opts = { seed, maxNewTokens: 12, eosTokenIds: [] };
    // Reading every step: the counters after step 1's read (decode step 1 recorded) against the end.
    let afterStep1: RuntimeCounters | null = null;
    await g.generate(input, { ...opts, stepsInFlight: 0 }, (p) => {
      if (p.step === 1) afterStep1 = { ...rt.counters };
    });
    expect(afterStep1).not.toBeNull();
    const sync = countsSince(afterStep1!, rt);
    // Decode steps 2..11: each one submit, one read, one wait.
    expect(sync).toMatchObject({ bindGroups: 0, submits: 10, readbacks: 10, hostWaits: 10 });
    // Reading late: a wait only for the last read; no bind group made after step 0's read
    // (decode steps 1 and 2 recorded by then).
    const before = { ...rt.counters };
    let afterStep0: RuntimeCounters | null = null;
    const out = await g.generate(input, { ...opts, stepsInFlight: 2 }, (p) => {
      if (p.step === 0) afterStep0 = { ...rt.counters };
    });
    expect(out.stats.steps).toBe(11);
    expect(countsSince(afterStep0!, rt)).toMatchObject({ bindGroups: 0, submits: 9 });
    const late = countsSince(before, rt);
    expect(late.hostWaits).toBe(1);
    expect(late.hostWaits / out.stats.steps).toBeLessThan(1);
    expect(late.readbacks).toBe(12);
    g.release();
    m.destroy();
  });
});

function countsSince(before: RuntimeCounters, rt: Runtime) {
  const c = rt.counters;
  return { bindGroups: c.bindGroups - before.bindGroups, submits: c.submits - before.submits, readbacks: c.readbacks - before.readbacks, hostWaits: c.hostWaits - before.hostWaits };
}

describe('generation: resources', () => {
  it('runs within WebGPU default limits, with the cooperative (workgroup per row) sampler too', async () => {
    const rt = await testRuntime({ defaultLimits: true, serialRows: false, poison: true });
    const seed = freshSeed();
    const m = model(rt, CONFIGS[2]![1], seed);
    const g = new Generator(m, new ByteTokenizer());
    const input = prompts([3, 9, 1], seed);
    const greedy = await g.generate(input, { temperature: 0, maxNewTokens: 6, eosTokenIds: [] });
    const recomputed = await g.generate(input, { temperature: 0, maxNewTokens: 6, eosTokenIds: [], useCache: false });
    expect(greedy.rows.map((r) => r.completionIds), `seed ${seed}`).toEqual(recomputed.rows.map((r) => r.completionIds));
    const sampled = await g.generate(input, { temperature: 0.9, topK: 20, topP: 0.8, seed, maxNewTokens: 6, eosTokenIds: [] });
    expect(sampled.rows.every((r) => r.logprobs.every((x) => Number.isFinite(x) && x <= 0))).toBe(true);
    g.release();
    m.destroy();
  });

  it('refuses, with the numbers and before allocating, a request the adapter cannot hold', async () => {
    const rt = await testRuntime(POISON);
    const m = model(rt, base, 1);
    const g = new Generator(m, new ByteTokenizer());
    const before = rt.stats().liveBytes;
    await expect(g.generate(['x'.repeat(90)], { maxNewTokens: 10 })).rejects.toThrow(/a prompt of 91 tokens and 10 new tokens need 100 positions but the model's context is 96/);
    // At least 200,000 rows: past what a spread argument list holds, as an H100's binding limit
    // (over 1 GiB) asks for; its first run overflowed the stack before this check.
    const rows = Math.max(Math.ceil(rt.ctx.limits.maxStorageBufferBindingSize / (2 * 60 * 2 * 12 * 4)) + 1, 200_000);
    await expect(g.generate(new Array<number[]>(rows).fill([1, 2]), { maxNewTokens: 59 })).rejects.toThrow(/KV cache of [\d.]+ MiB .* the adapter binds at most/);
    const odd = model(rt, { ...base, head_dim: 6 }, 1);
    await expect(new Generator(odd, new ByteTokenizer()).generate(['x'], { kvCache: 'f16' })).rejects.toThrow(/an f16 KV cache needs head_dim a multiple of 4 \(this model's is 6\)/);
    odd.destroy();
    expect(rt.stats().liveBytes).toBe(before);
    m.destroy();
  });

  it("after 200 calls of varying shapes the pool's live bytes return to where they started", async () => {
    const rt = await testRuntime(POISON);
    const m = model(rt, { ...base, num_hidden_layers: 1 }, 2);
    const start = rt.stats().liveBytes;
    const g = new Generator(m, new ByteTokenizer());
    const seed = freshSeed();
    const r = rng(seed);
    for (let i = 0; i < 200; i++) {
      const B = 1 + Math.floor(r() * 5);
      const input = prompts(Array.from({ length: B }, () => 1 + Math.floor(r() * 12)), seed + i);
      const out = await g.generate(input, { maxNewTokens: 1 + Math.floor(r() * 4), seed: i, topK: i % 3 ? 0 : 5, stop: i % 4 ? [] : ['e'] });
      expect(out.rows).toHaveLength(B);
    }
    g.release();
    expect(rt.stats().liveBytes, `seed ${seed}`).toBe(start);
    m.destroy();
  });
});
