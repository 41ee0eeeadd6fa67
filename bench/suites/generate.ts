/**
 * Generation throughput: B rows, a 64-token prompt each, 128 new tokens sampled at
 * temperature 1 (no EOS: every row runs to the limit), for the tiny and small presets.
 * Ours with the KV cache (src/model/generate.ts), ours recomputing the whole sequence every
 * step (the same Generator without its cache), and the same model's cached decode in jax-js
 * under jit (bench/peers/jaxLlama.ts), all on the page's WebGPU adapter. jax-js's
 * log-probabilities are checked against our forward pass, so both run the same model.
 */
import { matmulTuner } from '../../src/gpu/ops/autotune';
import { Runtime } from '../../src/gpu/runtime';
import { view } from '../../src/gpu/tensor';
import { flatParamSize, PRESETS, type PresetName } from '../../src/model/config';
import { Generator, type GenerateStats } from '../../src/model/generate';
import { ByteTokenizer } from '../../src/model/tokenizer';
import { initialParams, Transformer } from '../../src/model/transformer';
import { browserPlatform } from '../../src/platform/browser';
import { createJaxLlamaDecoder } from '../peers/jaxLlama';
import { decodeStepCounts, formatCounts, WORK_COUNT_COLUMNS, type WorkCounts } from '../counts';
import { errorMessage, median, type Suite, type Table } from '../suite';
import { copyBandwidth } from '../gpuReport';
import { INIT_SEED, isolatedCache, makeBatches } from '../trainCore';

interface Workload {
  preset: PresetName;
  B: number;
  prompt: number;
  newTokens: number;
}

const PROMPT = 64;
const NEW_TOKENS = 128;
const BATCHES = [1, 8, 32, 64];
/** Steps at which the recompute baseline is timed; the rest of the 127 steps are interpolated. */
const RECOMPUTE_AT = [0, 32, 64, 96, 126];
/** jax-js's log-probabilities of its tokens against our forward's: f32 rounding only. */
const LOGP_TOLERANCE = 1e-3;

function workloads(quick: boolean): Workload[] {
  if (quick) return [1, 8].map((B) => ({ preset: 'tiny', B, prompt: PROMPT, newTokens: 16 }));
  return (['tiny', 'small'] as const).flatMap((preset) => BATCHES.map((B) => ({ preset, B, prompt: PROMPT, newTokens: NEW_TOKENS })));
}

const label = (w: Workload) => `${w.preset} B=${w.B}`;

/** B prompts of byte-level text, `prompt` tokens each. */
function prompts(w: Workload): number[][] {
  const { tokens } = makeBatches(w.B, w.prompt, undefined, 1)[0]!;
  return Array.from({ length: w.B }, (_, b) => Array.from(tokens.subarray(b * w.prompt, (b + 1) * w.prompt)));
}

interface Result {
  workload: Workload;
  /** Ours, cached: decode tokens/s (steps after the prefill, sampling and readback included) and the split. */
  ours?: { decodeTokensPerS: number; endToEndTokensPerS: number; stats: GenerateStats; perStep: WorkCounts };
  /** Ours recomputing: ms of one step at each of RECOMPUTE_AT, and the tokens/s they imply. */
  recompute?: { stepMs: number[]; tokensPerS: number };
  jax?: { decodeTokensPerS: number; prefillMs: number; decodeMs: number; maxLogpGap: number };
  errors: string[];
}

/** Total time of the 127 recompute steps, linearly interpolated between the timed ones. */
function recomputeTotalMs(stepMs: number[], steps: number): number {
  let total = 0;
  for (let s = 0; s < steps; s++) {
    const k = Math.min(RECOMPUTE_AT.findIndex((x) => x >= s), RECOMPUTE_AT.length - 1);
    const [s0, s1] = k > 0 ? [RECOMPUTE_AT[k - 1]!, RECOMPUTE_AT[k]!] : [RECOMPUTE_AT[0]!, RECOMPUTE_AT[0]!];
    const [t0, t1] = k > 0 ? [stepMs[k - 1]!, stepMs[k]!] : [stepMs[0]!, stepMs[0]!];
    total += s1 > s0 ? t0 + ((t1 - t0) * (s - s0)) / (s1 - s0) : t0;
  }
  return total;
}

/** Rounds of the cached contenders, interleaved so that drift in the machine's load hits both; the best counts. */
const ROUNDS = 2;

async function prepareOurs(gen: Generator, w: Workload, input: number[][], log: (m: string) => void) {
  const opts = { maxNewTokens: w.newTokens, eosTokenIds: [], seed: 1 };
  // Warm-up: compiles the pipelines; then the matmul shapes it used are tuned (once per adapter).
  await gen.generate(input, { ...opts, maxNewTokens: 4 });
  const tuned = await matmulTuner(gen.model.rt).tunePending();
  if (tuned) log(`generate ${label(w)}: tuned ${tuned} matmul shape classes`);
  await gen.generate(input, { ...opts, maxNewTokens: 4 });
  // A timed call (a GPU sync after every phase) gives the split, and the prefill time to leave
  // out of the decode time of plain calls, made as an application makes them.
  const timed = await gen.generate(input, { ...opts, timing: true });
  const perStep = await decodeStepCounts(gen.model.rt, (newTokens) => gen.generate(input, { ...opts, maxNewTokens: newTokens }));
  return {
    timed: timed.stats,
    perStep,
    async once(): Promise<GenerateStats> {
      const out = await gen.generate(input, opts);
      if (out.stats.newTokens !== w.B * w.newTokens) throw new Error(`${out.stats.newTokens} tokens, expected ${w.B * w.newTokens}`);
      return out.stats;
    },
  };
}

async function runRecompute(gen: Generator, w: Workload, input: number[][]): Promise<Result['recompute']> {
  const stepMs: number[] = [];
  for (const s of RECOMPUTE_AT) {
    // A prompt s tokens longer: its one decode step recomputes P + s + 1 tokens per row, as step s would.
    const longer = input.map((p) => [...p, ...p, ...p].slice(0, w.prompt + s));
    const out = await gen.generate(longer, { maxNewTokens: 2, eosTokenIds: [], seed: 1, useCache: false, timing: true });
    const t = out.stats.timing!;
    stepMs.push(t.decodeMs + t.sampleMs + t.readbackMs);
  }
  const steps = w.newTokens - 1;
  return { stepMs, tokensPerS: (w.B * steps) / (recomputeTotalMs(stepMs, steps) / 1000) };
}

async function prepareJax(jax: typeof import('@jax-js/jax'), model: Transformer, flat: Float32Array, w: Workload, input: number[][]) {
  const dec = createJaxLlamaDecoder(jax, model.config, flat, { device: 'webgpu', B: w.B, P: w.prompt, T: w.prompt + w.newTokens });
  // Warm-up: traces and compiles the prefill and the step.
  let r = await dec.prefill(input, 0);
  for (let s = 0; s < 2; s++) r = await dec.step(r.tokens, s + 1);
  return {
    dec,
    /** One generation: prefill and decode times, and row 0's tokens and log-probabilities. */
    async once(seed: number) {
      const t0 = performance.now();
      let out = await dec.prefill(input, seed);
      const t1 = performance.now();
      const row0 = { tokens: [out.tokens[0]!], logp: [out.logp[0]!] };
      for (let s = 1; s < w.newTokens; s++) {
        out = await dec.step(out.tokens, seed + s);
        row0.tokens.push(out.tokens[0]!);
        row0.logp.push(out.logp[0]!);
      }
      return { prefillMs: t1 - t0, decodeMs: performance.now() - t1, row0 };
    },
  };
}

/** Largest gap between jax-js's log-probabilities of row 0's tokens and our forward's. */
async function logpGap(model: Transformer, w: Workload, prompt: number[], row0: { tokens: number[]; logp: number[] }): Promise<number> {
  const seq = [...prompt, ...row0.tokens];
  const T = seq.length - 1;
  const targets = seq.slice(1).map((t, i) => (i >= w.prompt - 1 ? t : -1));
  const { logp } = model.forwardLoss({ B: 1, T, tokens: seq.slice(0, T), targets, weights: targets.map(() => 1) });
  const ours = await model.rt.read(view(logp, [w.newTokens], w.prompt - 1));
  return Math.max(...row0.logp.map((x, i) => Math.abs(x - ours[i]!)));
}

/** Ours and jax-js, warmed up, then timed in interleaved rounds; ours recomputing once. */
async function runWorkload(
  jax: typeof import('@jax-js/jax'),
  gen: Generator,
  flat: Float32Array,
  w: Workload,
  rounds: number,
  log: (m: string) => void,
): Promise<Result> {
  const r: Result = { workload: w, errors: [] };
  const input = prompts(w);
  const fail = (what: string, e: unknown) => r.errors.push(`${what}: ${errorMessage(e)}`);
  log(`generate ${label(w)}: warming up ours and jax-js`);
  const ours = await prepareOurs(gen, w, input, log).catch((e: unknown) => void fail('ours', e));
  const peer = await prepareJax(jax, gen.model, flat, w, input).catch((e: unknown) => void fail('jax-js', e));
  const oursRuns: GenerateStats[] = [];
  const jaxRuns: Awaited<ReturnType<NonNullable<typeof peer>['once']>>[] = [];
  for (let k = 0; k < rounds; k++) {
    log(`generate ${label(w)}: round ${k + 1}/${rounds}`);
    // A contender that failed a round sits out the rest.
    if (ours && oursRuns.length === k) await ours.once().then((x) => oursRuns.push(x), (e: unknown) => fail('ours', e));
    if (peer && jaxRuns.length === k) await peer.once(100 * (k + 1)).then((x) => jaxRuns.push(x), (e: unknown) => fail('jax-js', e));
  }
  peer?.dec.dispose();
  if (ours && oursRuns.length) {
    const best = oursRuns.reduce((a, b) => (b.ms < a.ms ? b : a));
    r.ours = {
      decodeTokensPerS: (w.B * best.steps) / ((best.ms - ours.timed.timing!.prefillMs) / 1000),
      endToEndTokensPerS: best.newTokens / (best.ms / 1000),
      stats: ours.timed,
      perStep: ours.perStep,
    };
  }
  if (jaxRuns.length) {
    const best = jaxRuns.reduce((a, b) => (b.decodeMs < a.decodeMs ? b : a));
    const gap = await logpGap(gen.model, w, input[0]!, jaxRuns[0]!.row0);
    r.jax = { decodeTokensPerS: (w.B * (w.newTokens - 1)) / (best.decodeMs / 1000), prefillMs: best.prefillMs, decodeMs: best.decodeMs, maxLogpGap: gap };
  }
  log(`generate ${label(w)}: ours recomputing, steps ${RECOMPUTE_AT.join(', ')}`);
  r.recompute = await runRecompute(gen, w, input).catch((e: unknown) => void fail('recompute', e)) ?? undefined;
  return r;
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined ? 'FAILED' : x.toFixed(digits));
const ratio = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? '-' : `${(x / y).toFixed(1)}×`);

export const generateSuite: Suite = async ({ quick, log }) => {
  const failures: string[] = [];
  const jax = await import('@jax-js/jax');
  const devices = await jax.init('webgpu');
  if (!devices.includes('webgpu')) failures.push(`jax-js: no webgpu backend (initialised ${devices.join(', ') || 'nothing'})`);
  const platform = isolatedCache(browserPlatform);
  const results: Result[] = [];
  let bandwidth = 0;
  const weightBytes: Partial<Record<PresetName, number>> = {};
  for (const preset of [...new Set(workloads(quick).map((w) => w.preset))]) {
    const rt = await Runtime.create(platform);
    bandwidth ||= await copyBandwidth(rt);
    const config = PRESETS[preset];
    const flat = initialParams(config, INIT_SEED);
    weightBytes[preset] = flatParamSize(config) * 4;
    const model = Transformer.fromFlat(rt, config, flat);
    const gen = new Generator(model, new ByteTokenizer());
    for (const w of workloads(quick).filter((x) => x.preset === preset)) {
      const r = await runWorkload(jax, gen, flat, w, quick ? 1 : ROUNDS, log);
      for (const e of r.errors) failures.push(`${label(w)} ${e}`);
      if (r.jax && !(r.jax.maxLogpGap <= LOGP_TOLERANCE)) {
        failures.push(`${label(w)}: jax-js log-probabilities differ from our forward by ${r.jax.maxLogpGap.toExponential(1)}: not the same model`);
      }
      log(
        `generate ${label(w)}: decode tokens/s ours ${fmt(r.ours?.decodeTokensPerS)}, recompute ${fmt(r.recompute?.tokensPerS)}, ` +
          `jax-js ${fmt(r.jax?.decodeTokensPerS)}`,
      );
      results.push(r);
    }
    gen.release();
    model.destroy();
    rt.destroy();
  }

  const throughput: Table = {
    title: `Decode throughput, tokens/s (prompt ${PROMPT}, ${quick ? 16 : NEW_TOKENS} new tokens per row, temperature 1)`,
    columns: ['preset, B', 'ours (cache)', 'ours end-to-end', 'ours recompute', 'jax-js cache (jit)', 'cache / recompute', 'ours / jax-js'],
    rows: results.map((r) => [
      label(r.workload),
      fmt(r.ours?.decodeTokensPerS),
      fmt(r.ours?.endToEndTokensPerS),
      fmt(r.recompute?.tokensPerS),
      fmt(r.jax?.decodeTokensPerS),
      ratio(r.ours?.decodeTokensPerS, r.recompute?.tokensPerS),
      ratio(r.ours?.decodeTokensPerS, r.jax?.decodeTokensPerS),
    ]),
    notes: [
      'Decode tokens/s: B·(new tokens − 1) over the time after the prefill (decode steps with their sampling and readback);',
      "ours: a plain call's time less the prefill of a timed call. End-to-end: every new token over the whole plain call.",
      `Recompute: the same Generator without its cache; one step timed at steps ${RECOMPUTE_AT.join(', ')} (a prompt that much`,
      'longer), the other steps interpolated linearly: the cost of a step grows with the sequence it recomputes.',
      'jax-js: prefill and decode step each under one jit; its cache write is a where() over the whole cache (no scatter in',
      'jax-js), sampling by categorical() in the step; tokens and log-probabilities read back every step, as ours. Ours and',
      `jax-js run ${ROUNDS} interleaved rounds (the best counts) after warm-up calls; ours tunes its matmul shapes after the first.`,
    ],
  };
  const split: Table = {
    title: 'Where ours spends a generate call (KV cache), ms',
    columns: ['preset, B', 'prefill', 'decode', 'sampling', 'readback', 'steps', 'ms / step'],
    rows: results.flatMap((r) => {
      const t = r.ours?.stats.timing;
      if (!t) return [];
      const steps = r.ours!.stats.steps;
      return [[label(r.workload), fmt(t.prefillMs, 0), fmt(t.decodeMs, 0), fmt(t.sampleMs, 0), fmt(t.readbackMs, 0), String(steps), fmt((t.decodeMs + t.sampleMs + t.readbackMs) / steps)]];
    }),
    notes: [
      'A timed call: each phase ends with a GPU sync (1–3 ms each on this adapter, counted in the phase that waits), so the',
      'phases add up to more than a plain call. Decode: the forward of a step (embedding, layers, LM head); sampling: its kernel.',
    ],
  };
  const bound: Table = {
    title: 'B = 1 against the memory-bandwidth bound (every weight read once per token)',
    columns: ['preset', 'weights MiB', 'copy bandwidth GB/s', 'bound tokens/s', 'ours B=1 tokens/s', 'share of bound'],
    rows: results
      .filter((r) => r.workload.B === 1 && r.ours)
      .map((r) => {
        const bytes = weightBytes[r.workload.preset]!;
        const limit = bandwidth / bytes;
        return [r.workload.preset, fmt(bytes / 2 ** 20), fmt(bandwidth / 1e9, 2), fmt(limit, 0), fmt(r.ours!.decodeTokensPerS), `${((100 * r.ours!.decodeTokensPerS) / limit).toFixed(1)}%`];
      }),
    notes: ['Bandwidth: a 64 MiB copyBufferToBuffer on the same adapter, (read + write bytes) / time; the bound reads the f32 weights once per token.'],
  };
  const work: Table = {
    title: 'Work per decode step of ours (KV cache): counts that hold on any adapter',
    columns: ['preset, B', ...WORK_COUNT_COLUMNS],
    rows: results.flatMap((r) => (r.ours ? [[label(r.workload), ...formatCounts(r.ours.perStep)]] : [])),
    notes: [
      'per decode step (one new token per row): two plain calls 8 steps apart, their difference over 8, so the prefill and the',
      'first step fall out. Host waits: results awaited with nothing submitted after them (each drains the queue).',
    ],
  };
  return { suite: 'generate', tables: [throughput, split, bound, work], data: { quick, bandwidth, weightBytes, results }, failures };
};
