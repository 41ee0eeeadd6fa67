/**
 * The GPU report: what the engine does on the adapter it runs on, as figures anyone can run and
 * paste. Decode tokens/s at 1 and 32 rows and LoRA training tokens/s for SmolLM2-135M- and
 * Qwen2.5-0.5B-shaped models (random weights, the base in f16), each beside the adapter's own
 * measured copy bandwidth and matmul peak, as a share of the bound they set:
 *   - decode reads every weight once per step, whatever the rows: at B rows the bound is
 *     B · bandwidth / weight bytes tokens/s;
 *   - training's arithmetic is its matmuls (counted as recorded): the share is their FLOP/s
 *     over the matmul peak.
 * Shared by the page's gpu suite (Chromium) and its Node half (Dawn); the same core runs in
 * the GPU kit (npm run gpu-kit).
 */
import type { SubgroupMatrixShape } from '../src/gpu/device';
import { followPlan, kernelPlan, type KernelPlan } from '../src/gpu/kernelPlan';
import { perStep as kernelsPerStep, type KernelTime } from '../src/gpu/profiler';
import { matmulTuner, type TuneMeasurement } from '../src/gpu/ops/autotune';
import { matmul } from '../src/gpu/ops/matmul';
import type { Runtime } from '../src/gpu/runtime';
import { flatParamSize, type LlamaConfig } from '../src/model/config';
import { Generator } from '../src/model/generate';
import { DEFAULT_LORA, initialLora } from '../src/model/lora';
import { Transformer, type Batch } from '../src/model/transformer';
import { AdamW } from '../src/train/adamw';
import { DEFAULT_POLICY_LOSS, policyStep, type PolicyMicroBatch } from '../src/train/policy';
import { POSITION_GRANULE } from '../src/train/session';
import { trainStep } from '../src/train/step';
import { rng } from '../src/util/random';
import { QWEN25_05B, Untexted } from './decodeCounts';
import { pipelinedRate } from './decodeRate';
import { measureHostCost, randomModel, type HostCost } from './hostCost';
import { median, type Table } from './suite';
import { everyRowTargets, policyMicroBatch, SMOLLM2_135M, type PolicyShape } from './trainCounts';

export interface GpuModel {
  name: string;
  config: LlamaConfig;
}

/**
 * Qwen's shape first: the goals are set on it, so a run cut short (a GPU loan's limit)
 * keeps its figures (the report is saved after each model's, GpuReportOptions.save).
 */
export const GPU_MODELS: readonly GpuModel[] = [
  { name: 'Qwen2.5-0.5B', config: QWEN25_05B },
  { name: 'SmolLM2-135M', config: SMOLLM2_135M },
];

/** What each measurement runs: full size, or --quick (a smoke test of the report, not a measurement). */
interface Plan {
  /** Layers and vocabulary kept, or cut in a quick run (the widths are the models'). */
  shape(c: LlamaConfig): LlamaConfig;
  decodeRows: readonly number[];
  prompt: number;
  newTokens: number;
  train: { B: number; T: number; steps: number };
  /** The policy micro-batch's rollouts (PolicyFigure). */
  policy: PolicyShape;
  peakSize: number;
  /** Decode steps each per-kernel profile averages over. */
  profileSteps: number;
  /** Decode steps the host cost averages over. */
  hostSteps: number;
  /** Tune the matmul shapes each measurement uses before timing it (a quick run keeps the untuned choices). */
  tune: boolean;
}

const FULL: Plan = {
  shape: (c) => c,
  decodeRows: [1, 32],
  prompt: 64,
  newTokens: 128,
  train: { B: 4, T: 256, steps: 3 },
  // One row of 1,024 tokens (the LoRA figure's logits, within any adapter's binding): 600 completion tokens.
  policy: { prompt: 100, samples: 4, completion: 150, tokens: 1024, granule: POSITION_GRANULE },
  peakSize: 1024,
  profileSteps: 8,
  hostSteps: 50,
  tune: true,
};

const QUICK: Plan = {
  shape: (c) => ({ ...c, num_hidden_layers: 1, vocab_size: 4096 }),
  decodeRows: [1, 32],
  prompt: 8,
  newTokens: 6,
  train: { B: 1, T: 32, steps: 2 },
  policy: { prompt: 8, samples: 2, completion: 6, tokens: 32, granule: POSITION_GRANULE },
  peakSize: 256,
  profileSteps: 2,
  hostSteps: 10,
  tune: false,
};

/** The report's decode counts and shapes, full or --quick: what its peers run beside it. */
export function decodePlan(quick: boolean): Pick<Plan, 'shape' | 'decodeRows' | 'prompt' | 'newTokens'> {
  return quick ? QUICK : FULL;
}

export interface DecodeFigure {
  rows: number;
  /**
   * The path users run (steps in flight, the host never waiting for the GPU between them):
   * rows · (N − 1) / (t(N new tokens) − t(1 new token)), median of 3 each, so the prefill and
   * the first sample cancel out.
   */
  tokensPerS: number;
  /**
   * The same pipelined figure with every product in f32 (Runtime.halfMath off), where the
   * device has shader-f16 and so the figure above multiplies the f16 base in f16.
   */
  f32ProductsTokensPerS?: number;
  /**
   * The synchronous path (GenerateOptions.timing: the host waits for the GPU after each
   * phase), tokens/s after the prefill, and each phase's ms per decode step.
   */
  synchronous: { tokensPerS: number; decodeMs: number; sampleMs: number; readbackMs: number };
  /** B · bandwidth / weight bytes. */
  boundTokensPerS: number;
  /** Of the pipelined figure. */
  share: number;
}

/** One step's kernels (a decode step, or a training step), timed one by one with timestamp queries (a pass each). */
export interface KernelProfile {
  /** Rows a decode step decodes; a training step's B·T tokens. */
  rows: number;
  /** Steps the figures are averaged over. */
  steps: number;
  /** The step's dispatches, as many as it records. */
  dispatchesPerStep: number;
  workgroupsPerStep: number;
  /** Sum of the kernels' own GPU time per step (no gaps between them). */
  gpuUsPerStep: number;
  /** Per (kernel, workgroups): dispatches and GPU µs per step, slowest first. */
  kernels: KernelTime[];
}

export interface GpuModelFigures {
  model: string;
  layers: number;
  vocab: number;
  parameters: number;
  /** The base in f16, the LM head included (tied: the embedding is read as the head). */
  weightBytes: number;
  decode: DecodeFigure[];
  /** Per-kernel profiles of a decode step, at each decode row count (empty without timestamp queries). */
  profiles: KernelProfile[];
  /** Per-kernel profile of one LoRA training step (forward, backward and AdamW; absent without timestamp queries). */
  trainProfile?: KernelProfile;
  /** Host time per dispatch of a decode step (recording, submitting), at each decode row count. */
  hostCost: HostCost[];
  /**
   * f32ProductsTokensPerS: the same steps with every product in f32 (Runtime.halfMath off), where
   * the device has shader-f16 and so the figure multiplies the f16 base in f16 (on the matrix
   * units where it has them; elsewhere training computes in f32 either way).
   */
  lora: { B: number; T: number; tokensPerS: number; f32ProductsTokensPerS?: number; matmulGflopPerStep: number; share: number; policy?: PolicyFigure };
  errors: string[];
}

/**
 * One policy-gradient update of a micro-batch as the loop packs the Solver's rollouts (a prompt
 * its samples share, then each completion; bench/trainCounts.ts policyMicroBatch) on the LoRA
 * figure's adapter: tokens (B·T) a second with the LM head on the completion tokens alone, and
 * the same micro-batch with a target on every row (the head on all, the loss unchanged).
 */
export interface PolicyFigure {
  B: number;
  T: number;
  lossRows: number;
  tokensPerS: number;
  everyRowTokensPerS: number;
}

export interface GpuReport {
  adapter: string;
  swiftshader: boolean;
  quick: boolean;
  /** Bytes read and written per second by a 64 MiB buffer copy. */
  bandwidth: number;
  peakGflops: number;
  peakSize: number;
  prompt: number;
  newTokens: number;
  /** Optional features the device was granted (shader-f16, subgroups, timestamp-query). */
  features: string[];
  models: GpuModelFigures[];
  /** The kernels every figure ran (the tuner's winners): a rerun follows it to compare like with like. */
  kernelPlan: KernelPlan;
  /** The device's subgroup matrices (matmul_mma), or null where it has none (the kernel plan's are those the figures could use). */
  subgroupMatrix: SubgroupMatrixShape | null;
  /** Every matmul class tuned for these figures: each accepted variant's ms and the refused (why each class runs what the plan says). */
  tuning: Record<string, TuneMeasurement>;
  /** matmul_mma's test cases against float64 on this device (where it has subgroup matrices and the caller checks them): how many, and each failure. */
  mmaCheck: { cases: number; failed: string[] } | null;
  /** Present while figures are still to come: a report saved part-way (GpuReportOptions.save), which a run cut short leaves. */
  partial?: true;
}

/**
 * The adapter's memory bandwidth as WebGPU sees it: a 64 MiB buffer-to-buffer copy (read +
 * write bytes over time), median of 5 after a warm-up.
 */
export async function copyBandwidth(rt: Runtime): Promise<number> {
  const n = 16 * 2 ** 20;
  const a = rt.empty([n]);
  const b = rt.empty([n]);
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    rt.copy(a, b);
    await rt.sync();
    if (i > 0) times.push(performance.now() - t0);
  }
  rt.release(a, b);
  return (2 * n * 4) / (median(times) / 1000);
}

/** The best variant's best GFLOP/s at n³ (tuned, then the fastest of 10 runs with a GPU sync each): the peak a phase is measured against. */
export async function matmulPeak(rt: Runtime, n = 512): Promise<number> {
  const shape = { batch: 1, M: n, N: n, K: n, transA: false, transB: false };
  const times = await matmulTuner(rt).tune(shape);
  const variant = matmulTuner(rt).choose(shape);
  const a = rt.upload(Float32Array.from({ length: n * n }, () => Math.random() - 0.5), [n, n]);
  const b = rt.upload(Float32Array.from({ length: n * n }, () => Math.random() - 0.5), [n, n]);
  const out = rt.empty([n, n]);
  const samples: number[] = [];
  for (let i = 0; i < 11; i++) {
    const t0 = performance.now();
    matmul(rt, { a, b, out, variant });
    await rt.sync();
    if (i > 0) samples.push(performance.now() - t0);
  }
  rt.release(a, b, out);
  const ms = Math.min(...samples, times[variant] ?? Infinity);
  return (2 * n ** 3) / (ms / 1e3) / 1e9;
}

function decodePrompts(rows: number, plan: Plan): number[][] {
  return Array.from({ length: rows }, (_, b) => Array.from({ length: plan.prompt }, (_, t) => 3 + ((b * plan.prompt + t) * 7919) % 250));
}

const DECODE_OPTIONS = { eosTokenIds: [], seed: 1, temperature: 1 };

async function decodeFigure(model: Transformer, rows: number, plan: Plan, bandwidth: number, weightBytes: number): Promise<DecodeFigure> {
  const gen = new Generator(model, new Untexted());
  const prompts = decodePrompts(rows, plan);
  const run = (maxNewTokens: number, timing = false) => gen.generate(prompts, { ...DECODE_OPTIONS, maxNewTokens, timing });
  const pipelined = async () => {
    // Warm-up: compiles the pipelines and tunes the shapes it used, then runs tuned once more.
    await run(4);
    if (plan.tune) {
      await matmulTuner(model.rt).tunePending();
      await run(4);
    }
    return pipelinedRate(run, rows, plan.newTokens);
  };
  const tokensPerS = await pipelined();
  let f32ProductsTokensPerS: number | undefined;
  if (model.rt.halfMath) {
    model.rt.halfMath = false;
    try {
      f32ProductsTokensPerS = await pipelined();
    } finally {
      model.rt.halfMath = true;
    }
  }
  const { stats } = await run(plan.newTokens, true);
  const t = stats.timing!;
  const synchronous = {
    tokensPerS: (rows * stats.steps) / ((stats.ms - t.prefillMs) / 1000),
    decodeMs: t.decodeMs / stats.steps,
    sampleMs: t.sampleMs / stats.steps,
    readbackMs: t.readbackMs / stats.steps,
  };
  const boundTokensPerS = (rows * bandwidth) / weightBytes;
  return { rows, tokensPerS, ...(f32ProductsTokensPerS ? { f32ProductsTokensPerS } : {}), synchronous, boundTokensPerS, share: tokensPerS / boundTokensPerS };
}

/**
 * One decode step's kernels on a runtime that times every dispatch (its own pass between two
 * timestamps): the dispatches of a run of 1 new token (prefill, first sample) subtracted from
 * those of a run of 1 + steps, per (kernel, workgroups), so what is left is the decode steps
 * and their sampling, each timed by the mean of its calls.
 */
async function decodeProfile(rt: Runtime, model: Transformer, rows: number, plan: Plan): Promise<KernelProfile | null> {
  const profiler = rt.profiler;
  if (!profiler) return null;
  const steps = plan.profileSteps;
  const gen = new Generator(model, new Untexted());
  const prompts = decodePrompts(rows, plan);
  const profiled = async (maxNewTokens: number) => {
    await rt.profile();
    profiler.reset();
    const before = { ...rt.counters };
    await gen.generate(prompts, { ...DECODE_OPTIONS, maxNewTokens });
    await rt.sync();
    const entries = await rt.profile();
    profiler.reset();
    return { entries, dispatches: rt.counters.dispatches - before.dispatches, workgroups: rt.counters.workgroups - before.workgroups };
  };
  await profiled(2);
  const short = await profiled(1);
  const long = await profiled(1 + steps);
  const key = (e: { label: string; workgroups: number }) => `${e.label}|${e.workgroups}`;
  const shortBy = new Map(short.entries.map((e) => [key(e), e]));
  const kernels = long.entries
    .map((e) => {
      const s = shortBy.get(key(e));
      // Dispatches a step: exact, from the counts. Time: the mean of every call of this shape
      // (a prefill's call of the same kernel and workgroups does the same work), not a
      // difference of two noisy totals.
      const perStep = (e.count - (s?.count ?? 0)) / steps;
      return { label: e.label, workgroups: e.workgroups, perStep, usPerStep: (1000 * e.totalMs * perStep) / e.count };
    })
    .filter((k) => k.perStep > 0)
    .sort((a, b) => b.usPerStep - a.usPerStep);
  return {
    rows,
    steps,
    dispatchesPerStep: (long.dispatches - short.dispatches) / steps,
    workgroupsPerStep: (long.workgroups - short.workgroups) / steps,
    gpuUsPerStep: kernels.reduce((n, k) => n + k.usPerStep, 0),
    kernels,
  };
}

/** LoRA on `model` (rank 16 on every projection) with its optimizer, and one batch of B×T random tokens. */
function loraSetup(rt: Runtime, model: Transformer, plan: Plan): { optimizer: AdamW; batch: Batch } {
  const { B, T } = plan.train;
  model.enableLora(DEFAULT_LORA, initialLora(model.config, DEFAULT_LORA, 1));
  const optimizer = new AdamW(rt, model.trainable.size, model.trainable.specs);
  const r = rng(2);
  const tokens = Array.from({ length: B * T }, () => Math.floor(r() * model.config.vocab_size));
  return { optimizer, batch: { B, T, tokens, targets: tokens.map((_, i) => (i % T === T - 1 ? -1 : tokens[i + 1]!)), weights: tokens.map(() => 1 / (B * T)) } };
}

async function loraFigure(rt: Runtime, model: Transformer, plan: Plan, peakGflops: number): Promise<GpuModelFigures['lora']> {
  const { B, T, steps } = plan.train;
  const { optimizer, batch } = loraSetup(rt, model, plan);
  /** The median step's seconds and matmul FLOPs; the first step compiles and tunes, the rest count. */
  const measure = async () => {
    await trainStep(model, optimizer, [batch], 1e-4, plan.tune);
    const ms: number[] = [];
    let flops = 0;
    for (let i = 0; i < steps; i++) {
      const before = rt.counters.matmulFlops;
      const t0 = performance.now();
      await trainStep(model, optimizer, [batch], 1e-4, false);
      ms.push(performance.now() - t0);
      flops = rt.counters.matmulFlops - before;
    }
    return { s: median(ms) / 1000, flops };
  };
  /** The median seconds of a policy update of `micro` (the first compiles and tunes). */
  const policySeconds = async (micro: PolicyMicroBatch) => {
    await policyStep(model, optimizer, [micro], 1e-4, DEFAULT_POLICY_LOSS, plan.tune);
    const ms: number[] = [];
    for (let i = 0; i < steps; i++) {
      const t0 = performance.now();
      await policyStep(model, optimizer, [micro], 1e-4, DEFAULT_POLICY_LOSS, false);
      ms.push(performance.now() - t0);
    }
    return median(ms) / 1000;
  };
  try {
    const { s, flops } = await measure();
    const micro = policyMicroBatch(model.config, plan.policy);
    const tokens = micro.batch.B * micro.batch.T;
    const policy: PolicyFigure = {
      B: micro.batch.B, T: micro.batch.T, lossRows: Array.from(micro.batch.targets!).filter((t) => t >= 0).length,
      tokensPerS: tokens / (await policySeconds(micro)), everyRowTokensPerS: tokens / (await policySeconds(everyRowTargets(micro))),
    };
    let f32ProductsTokensPerS: number | undefined;
    if (rt.halfMath) {
      rt.halfMath = false;
      try {
        f32ProductsTokensPerS = (B * T) / (await measure()).s;
      } finally {
        rt.halfMath = true;
      }
    }
    return { B, T, tokensPerS: (B * T) / s, ...(f32ProductsTokensPerS ? { f32ProductsTokensPerS } : {}), matmulGflopPerStep: flops / 1e9, share: flops / s / 1e9 / peakGflops, policy };
  } finally {
    optimizer.destroy();
  }
}

/**
 * One LoRA training step's kernels, as the figure above runs it (the same batch and plan), on
 * a runtime that times every dispatch: where a training step's time goes, kernel by kernel
 * with its workgroups, which the tokens/s alone cannot say.
 */
async function trainProfile(rt: Runtime, model: Transformer, plan: Plan): Promise<KernelProfile | null> {
  const profiler = rt.profiler;
  if (!profiler) return null;
  const { optimizer, batch } = loraSetup(rt, model, plan);
  try {
    // The first step compiles (the plan is the figure's, followed: nothing is tuned here).
    await trainStep(model, optimizer, [batch], 1e-4, false);
    await rt.profile();
    profiler.reset();
    const before = { ...rt.counters };
    await trainStep(model, optimizer, [batch], 1e-4, false);
    await rt.sync();
    const entries = await rt.profile();
    profiler.reset();
    const kernels = kernelsPerStep(entries, 1);
    return {
      rows: batch.B * batch.T,
      steps: 1,
      dispatchesPerStep: rt.counters.dispatches - before.dispatches,
      workgroupsPerStep: rt.counters.workgroups - before.workgroups,
      gpuUsPerStep: kernels.reduce((n, k) => n + k.usPerStep, 0),
      kernels,
    };
  } finally {
    optimizer.destroy();
  }
}

export interface GpuReportOptions {
  quick: boolean;
  log(m: string): void;
  /** A runtime made with `profile: true` on `rt`'s adapter for the per-kernel profiles (none: no profiles); it follows `rt`'s kernel plan. */
  profileRt?: Runtime;
  /** The host-cost clock (bench/hostCost.ts; a thread's CPU time in Node), else the wall clock. */
  clock?: () => number;
  /** matmul_mma's cases checked against float64 on this device before `rt` was made (bench/mmaCheck.ts, Node): recorded with the figures. */
  mmaCheck?: GpuReport['mmaCheck'];
  /** Called with the report so far (`partial`) after each group of figures, so that a run stopped part-way keeps what it measured. */
  save?(report: GpuReport): void;
}

/** Every figure of the report on `rt`'s adapter. */
export async function gpuReport(rt: Runtime, { quick, log, profileRt, clock, mmaCheck, save }: GpuReportOptions): Promise<GpuReport> {
  const plan = quick ? QUICK : FULL;
  const a = rt.ctx.adapter;
  const adapter = [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ') || 'unknown adapter';
  log(`gpu: ${adapter}${quick ? ' (quick)' : ''}: copy bandwidth and matmul peak`);
  const bandwidth = await copyBandwidth(rt);
  const peakGflops = await matmulPeak(rt, plan.peakSize);
  log(`gpu: copy ${(bandwidth / 1e9).toFixed(1)} GB/s, matmul peak at ${plan.peakSize}³ ${peakGflops.toFixed(1)} GFLOP/s`);
  const models: GpuModelFigures[] = [];
  const report = (partial = false): GpuReport => ({
    adapter, swiftshader: a.architecture === 'swiftshader', quick, bandwidth, peakGflops, peakSize: plan.peakSize,
    prompt: plan.prompt, newTokens: plan.newTokens, features: [...rt.ctx.features], models: [...models], kernelPlan: kernelPlan(rt),
    subgroupMatrix: rt.ctx.subgroupMatrix, mmaCheck: mmaCheck ?? null, tuning: matmulTuner(rt).measurements(),
    ...(partial ? { partial: true as const } : {}),
  });
  const saved = () => save?.(report(true));
  saved();
  for (const m of GPU_MODELS) {
    const config = plan.shape(m.config);
    const parameters = flatParamSize(config);
    const figures: GpuModelFigures = {
      model: m.name, layers: config.num_hidden_layers, vocab: config.vocab_size, parameters, weightBytes: 2 * parameters,
      decode: [], profiles: [], hostCost: [], lora: { B: plan.train.B, T: plan.train.T, tokensPerS: 0, matmulGflopPerStep: 0, share: 0 }, errors: [],
    };
    models.push(figures);
    let model: Transformer | null = null;
    try {
      log(`gpu: ${m.name}: ${(parameters / 1e6).toFixed(0)} M parameters in f16`);
      model = randomModel(rt, config);
      for (const rows of plan.decodeRows) {
        log(`gpu: ${m.name}: decode at ${rows} row(s)`);
        figures.decode.push(await decodeFigure(model, rows, plan, bandwidth, figures.weightBytes));
        // Recorded through the model's code every token, then replayed from its captured plan: the plan's saving, in one run.
        for (const replay of [false, true]) figures.hostCost.push(await measureHostCost(model, rows, { clock, steps: plan.hostSteps, replay }));
        saved();
      }
      log(`gpu: ${m.name}: LoRA training at ${plan.train.B}×${plan.train.T}`);
      figures.lora = await loraFigure(rt, model, plan, peakGflops);
    } catch (e) {
      figures.errors.push(e instanceof Error ? e.message : String(e));
    } finally {
      model?.destroy();
    }
    saved();
    if (profileRt?.profiler) {
      let profiled: Transformer | null = null;
      try {
        // The variants the figures above ran: the profiling runtime's own table was read when it
        // was made, before `rt` tuned anything, so alone it would profile the untuned heuristic.
        followPlan(profileRt, kernelPlan(rt));
        profiled = randomModel(profileRt, config);
        for (const rows of plan.decodeRows) {
          log(`gpu: ${m.name}: one decode step's kernels at ${rows} row(s)`);
          const p = await decodeProfile(profileRt, profiled, rows, plan);
          if (p) figures.profiles.push(p);
        }
        log(`gpu: ${m.name}: one LoRA training step's kernels`);
        figures.trainProfile = (await trainProfile(profileRt, profiled, plan)) ?? undefined;
      } catch (e) {
        figures.errors.push(`profile: ${e instanceof Error ? e.message : String(e)}`);
      } finally {
        profiled?.destroy();
      }
      saved();
    }
  }
  return report();
}

const fmt = (x: number, digits = 1) => x.toFixed(digits);
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The report as tables to paste (each a Markdown table); `where`: the runtime it ran in (Chromium, Node). */
export function gpuTables(r: GpuReport, where: string): Table[] {
  const label = `${where} on ${r.swiftshader ? 'SwiftShader (CPU, not a GPU)' : r.adapter}${r.quick ? ', QUICK (1 layer, vocabulary 4,096: a smoke test, not a measurement)' : ''}`;
  const rows = r.models.flatMap((m) => [
    ...m.decode.map((d) => [
      m.model, `decode B=${d.rows}, pipelined${d.f32ProductsTokensPerS ? ', f16 products' : ''}`, fmt(d.tokensPerS), `${fmt(d.boundTokensPerS, 0)} tok/s (copy bandwidth)`, pct(d.share),
    ]),
    ...m.decode.flatMap((d) =>
      d.f32ProductsTokensPerS
        ? [[m.model, `decode B=${d.rows}, pipelined, f32 products`, fmt(d.f32ProductsTokensPerS), `f16 products / f32 ${fmt(d.tokensPerS / d.f32ProductsTokensPerS, 2)}×`, pct(d.f32ProductsTokensPerS / d.boundTokensPerS)]]
        : [],
    ),
    ...m.decode.map((d) => [
      m.model, `decode B=${d.rows}, synchronous`, fmt(d.synchronous.tokensPerS),
      `per step: decode ${fmt(d.synchronous.decodeMs, 2)} ms, sample ${fmt(d.synchronous.sampleMs, 2)}, readback ${fmt(d.synchronous.readbackMs, 2)}`, '',
    ]),
    ...m.hostCost.map((h) => {
      const recorded = h.replay ? m.hostCost.find((o) => !o.replay && o.rows === h.rows) : undefined;
      return [
        m.model, `host µs/dispatch, B=${h.rows}, ${h.replay ? 'replayed' : 'recorded'}`, fmt(h.usPerDispatch, 1),
        `recording ${fmt(h.usRecordPerDispatch, 1)} + submitting ${fmt(h.usSubmitPerDispatch, 1)}, ${h.dispatches} dispatches a step` +
          (recorded ? `; recorded / replayed ${fmt(recorded.usPerDispatch / h.usPerDispatch, 2)}×` : ''),
        '',
      ];
    }),
    ...(m.lora.tokensPerS ? [[m.model, `LoRA r16 train ${m.lora.B}×${m.lora.T}${m.lora.f32ProductsTokensPerS ? ', f16 products' : ''}`, fmt(m.lora.tokensPerS), `${fmt(m.lora.matmulGflopPerStep, 1)} GFLOP/step at the peak`, pct(m.lora.share)]] : []),
    ...(m.lora.f32ProductsTokensPerS
      ? [[m.model, `LoRA r16 train ${m.lora.B}×${m.lora.T}, f32 products`, fmt(m.lora.f32ProductsTokensPerS), `f16 products / f32 ${fmt(m.lora.tokensPerS / m.lora.f32ProductsTokensPerS, 2)}×`, '']]
      : []),
    ...(m.lora.policy
      ? [[
          m.model, `LoRA r16 policy update ${m.lora.policy.B}×${m.lora.policy.T}, LM head on ${m.lora.policy.lossRows} completion tokens`, fmt(m.lora.policy.tokensPerS),
          `head on every row ${fmt(m.lora.policy.everyRowTokensPerS)}: ${fmt(m.lora.policy.tokensPerS / m.lora.policy.everyRowTokensPerS, 2)}×`, '',
        ]]
      : []),
    ...m.errors.map((e) => [m.model, 'FAILED', e, '', '']),
  ]);
  const kernelTable = (title: string, p: KernelProfile, unit: string, how: string): Table => ({
    title: `${title} (${label})`,
    columns: ['kernel', 'workgroups', `dispatches/${unit}`, `GPU µs/${unit}`, 'share'],
    rows: p.kernels.map((k) => [k.label, String(k.workgroups), fmt(k.perStep, 2), fmt(k.usPerStep, 1), pct(k.usPerStep / p.gpuUsPerStep)]),
    notes: [
      `${fmt(p.dispatchesPerStep, 1)} dispatches and ${fmt(p.workgroupsPerStep, 0)} workgroups a ${unit}; the kernels' own GPU time ${fmt(p.gpuUsPerStep, 1)} µs a ${unit} ` +
        `(each timed in its own pass, on the kernel plan the figures above ran, ${how}).`,
    ],
  });
  const profiles: Table[] = r.models.flatMap((m) => [
    ...m.profiles.map((p) => kernelTable(`One decode step's kernels, ${m.model}, B=${p.rows}`, p, 'step', `mean of ${p.steps} steps; the sampling of each step included`)),
    ...(m.trainProfile ? [kernelTable(`One LoRA training step's kernels, ${m.model}, ${m.lora.B}×${m.lora.T} tokens`, m.trainProfile, 'step', 'forward, backward and the AdamW update of one step')] : []),
  ]);
  const tuned = Object.entries(r.tuning ?? {});
  const ranked = (ms: TuneMeasurement['ms']) => Object.entries(ms).sort(([, a], [, b]) => a! - b!);
  const tuningTable: Table[] = tuned.length
    ? [{
        title: `Matmul classes tuned for these figures (${label})`,
        columns: ['class', 'runs', 'ms', 'next best', 'ms', 'mma ms', 'refused'],
        rows: tuned.map(([key, m]) => {
          const [first, second] = ranked(m.ms);
          return [key, first?.[0] ?? 'none accepted', first ? fmt(first[1]!, 4) : '', second?.[0] ?? '', second ? fmt(second[1]!, 4) : '', m.ms.mma !== undefined ? fmt(m.ms.mma, 4) : '', m.refused.join(', ')];
        }),
        notes: ['Each class timed on its tuning slice (GPU timestamps where the adapter has them); refused: did not compile here, or differed from float64 at a checked entry.'],
      }]
    : [];
  return [
    {
      title: `GPU report, ${label}`,
      columns: ['model (random, f16 base)', 'what', 'tokens/s', 'bound', 'share of bound'],
      rows,
      notes: [
        `adapter: ${r.adapter}; features: ${r.features?.join(', ') || 'none'}; copy bandwidth ${fmt(r.bandwidth / 1e9, 1)} GB/s (64 MiB copy, read + write); matmul peak ${fmt(r.peakGflops, 1)} GFLOP/s (best tuned variant at ${r.peakSize}³, f32)`,
        `decode: ${r.prompt}-token prompts, ${r.newTokens} new tokens sampled at temperature 1; pipelined: the path users run (steps in flight), rows·(N−1) over t(N) − t(1), median of 3;`,
        'f16 products: where the device has shader-f16 the f16 base is multiplied in f16 (Runtime.halfMath), the default; f32 products: the same with it off;',
        r.subgroupMatrix
          ? `subgroup matrices ${r.subgroupMatrix.M}×${r.subgroupMatrix.N}×${r.subgroupMatrix.K} (f16 → f32, subgroups of ${r.subgroupMatrix.subgroupMaxSize}): ` +
            (r.kernelPlan.subgroupMatrix ? 'f16 products may run on them (matmul_mma) where the tuner finds it faster' : 'not used by these figures') +
            (r.mmaCheck ? `; ${r.mmaCheck.cases - r.mmaCheck.failed.length} of ${r.mmaCheck.cases} of its cases match float64` : '') + ';'
          : 'no subgroup matrices on this device: f16 products run in the vector kernels;',
        'synchronous: the host waits for the GPU after each phase (decode, sample, readback), tokens/s after the prefill; bound: every f16 weight read once per step;',
        'LoRA: rank 16 on every projection, base frozen in f16, one AdamW step per batch; share: the step\'s matmul FLOP/s over the peak; ' +
          'f16 products: forward and backward over the base on the matrix units (matmul_mma, each row scaled to half\'s range) where the device has them, elsewhere f32 either way;',
        'policy update: one micro-batch of Solver-like rollouts (a prompt its samples share, then each completion) through the fused surrogate, median of the same steps; every row: the same micro-batch with a target on each row (weight 0 off the completions), as the head ran before it kept the loss rows alone.',
      ],
    },
    ...profiles,
    ...tuningTable,
  ];
}
