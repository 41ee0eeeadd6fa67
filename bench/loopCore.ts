/**
 * Loop steps measured phase by phase: SAGE, MAE and the RLVR baseline as a default run makes
 * them, from the lab's default checkpoint with the settings its record names (so completions
 * have the lengths of a real run, not the token limits an untrained model runs to) on the
 * shipped curriculum seeds.
 * Each run first tunes its kernels (LoopModel.prepare, from an empty tuning cache) and then
 * times every step, the first included. Per phase: wall time, GPU busy time (timestamp
 * queries at each submit's start and end; one step more times each dispatch, for the kernel
 * tables alone), matmul FLOPs, dispatches, submits, bind groups made, host waits and readbacks, and the achieved share of this adapter's
 * matmul peak (the best variant's best rate at 512³, measured in the same run); generation against
 * the pipelined decode rate of the same model at the same batch (64-token prompts, 128 new
 * tokens, or the longest a role may write where shorter).
 * The page's suite (bench/suites/loop.ts) and its Node half (bench/node/loop.ts) run this
 * same function, each on its platform's WebGPU.
 */
import type { Problem } from '../src/data/problem';
import { perStep as kernelsPerStep, type KernelTime, type ProfileEntry } from '../src/gpu/profiler';
import type { Runtime, RuntimeCounters } from '../src/gpu/runtime';
import { importCheckpoint } from '../src/model/checkpoint';
import { detachedLoop } from '../src/sage/run';
import type { MethodName } from '../src/sage/config';
import { runShapeHints, type StepMetrics } from '../src/sage/loop';
import type { LoopSettings, Phase } from '../src/sage/loopContract';
import { DEFAULT_RUN } from '../src/sage/settings';
import { checkpointStart, resolveRunSettings } from '../src/sage/runSpec';
import { DEFAULT_MODEL, SHIPPED_MODELS_DIR } from '../src/sage/shippedModels';
import { detachedRunModel } from '../src/sage/runModel';
import type { LoraConfig } from '../src/model/lora';
import { ModelSession, type ModelSource } from '../src/train/session';
import { addCounts, countsBetween, decodeStepCounts, formatCounts, WORK_COUNT_COLUMNS, zeroCounts, type WorkCounts } from './counts';
import { median, type Table } from './suite';
import { pipelinedRate } from './decodeRate';
import { matmulPeak } from './gpuReport';

/** The checkpoint a default run starts from, and its files (its record names the run's settings). */
export const LOOP_CHECKPOINT = `${SHIPPED_MODELS_DIR}/${DEFAULT_MODEL}`;
export const LOOP_CHECKPOINT_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'sage_lab.json'];
export const LOOP_SEEDS = 'data/seeds/curriculum-500.jsonl';

export const LOOP_METHODS: readonly MethodName[] = ['sage', 'mae', 'rlvr'];
/** Phases in the order a step runs them. */
export const LOOP_PHASES: readonly Phase[] = ['propose', 'score-problems', 'difficulty', 'admit', 'plan', 'score-plans', 'solve', 'judge-answers', 'update'];
/** Held-out problems a default run validates on: validation is one of its generations. */
const HELD_OUT = DEFAULT_RUN.validationLimit;

export interface PhaseFigures {
  wallS: number;
  /**
   * The GPU's busy time in the phase: the union of its submits' spans (timestamp queries,
   * ProfileMode 'submits', the work encoded as unprofiled), median over the steps.
   */
  gpuS: number;
  /**
   * Where GPU time goes: per (kernel, workgroups), dispatches and GPU ms in one step more with
   * each dispatch timed in a pass of its own, slowest first, the first PHASE_KERNELS: what a
   * phase's busy share alone cannot say.
   */
  kernels: KernelTime[];
  /** That step's GPU time in the phase: the sum of all its kernels' own times (the kernels' shares are of it). */
  kernelsGpuS: number;
  matmulGflop: number;
  /** Dispatches, submits, bind groups made, host waits and readbacks. */
  work: WorkCounts;
  /** The phase's generation: its rows, tokens, seconds, and the decode rate at its rows. */
  generation?: { rows: number; tokens: number; seconds: number; decodeTokensPerS: number };
}

/** Kernels a phase's figures keep (the rest of its time is in gpuS). */
export const PHASE_KERNELS = 8;

/** A phase's slowest kernels over `steps` steps' profiles, as means a step. */
export function phaseKernels(entries: readonly ProfileEntry[], steps: number): KernelTime[] {
  return kernelsPerStep(entries, steps).slice(0, PHASE_KERNELS);
}

export interface LoopBenchRow {
  method: MethodName;
  /** Seconds LoopModel.prepare took (tracing, then tuning from an empty cache) and the shape classes it tuned. */
  prepare: { seconds: number; tuned: number };
  /** Every step's seconds, the first included. */
  stepSeconds: number[];
  /** Kernel shape classes tuned inside each step (0 when prepare covered the run). */
  tunedInSteps: number[];
  /** Medians over the steps. */
  seconds: { total: number; generation: number; validators: number; training: number };
  phases: Partial<Record<Phase, PhaseFigures>>;
  generatedTokens: number;
  trainedTokens: number;
  /** Generated tokens per second of generation. */
  generationTokensPerS: number;
  /**
   * Generation against decoding: the seconds each phase's generation would take at the decode
   * rate of its batch size (pipelined, as generation runs), over the seconds it took (1 = as
   * fast as plain decoding; records before 2026-12-04 set it against the synchronous rate).
   */
  generationShare: number;
  error?: string;
}

/** One decode setting of the shipped model: the matmul prologues fused (Runtime.fusedPrologues) or apart. */
export interface PrologueFigures {
  fused: boolean;
  /** Work of one decode step, sampling included. */
  perStep: WorkCounts;
  /** Decode tokens/s at PROLOGUE_ROWS rows and the prefill of their 64-token prompts. */
  decodeTokensPerS: number;
  prefillMs: number;
}

export interface LoopBench {
  /** GFLOP/s of the best matmul variant at 512³ on this adapter, measured in this run. */
  peakGflops: number;
  /** The adapter's default (Runtime.fusedPrologues) and the other choice, measured in this run. */
  prologues: PrologueFigures[];
  rows: LoopBenchRow[];
}

/** B prompts of 64 tokens, the same in every measurement. */
const decodePrompts = (B: number) => Array.from({ length: B }, (_, b) => Array.from({ length: 64 }, (_, t) => 3 + ((b * 64 + t) * 7919) % 250));
const DECODE_OPTS = { maxNewTokens: 128, temperature: 1, seed: 1, eosTokenIds: [], timing: true };

/**
 * Decode tokens/s of the session's model at B rows (64-token prompts, 128 new tokens, no EOS)
 * on the synchronous path, as the generate suite measures it, and the prefill it splits out.
 */
async function decodeRate(session: ModelSession, B: number): Promise<{ tokensPerS: number; prefillMs: number }> {
  const prompts = decodePrompts(B);
  await session.generate(prompts, DECODE_OPTS);
  const { stats } = await session.generate(prompts, DECODE_OPTS);
  return { tokensPerS: (B * stats.steps) / ((stats.ms - stats.timing!.prefillMs) / 1e3), prefillMs: stats.timing!.prefillMs };
}

/**
 * Decode tokens/s of the session's model at B rows on the pipelined path, as generation runs
 * (64-token prompts, `newTokens` new tokens, no EOS; pipelinedRate): what a phase's generation
 * is set against.
 */
async function pipelinedDecodeRate(session: ModelSession, B: number, newTokens: number): Promise<number> {
  const prompts = decodePrompts(B);
  const run = (maxNewTokens: number) => session.generate(prompts, { ...DECODE_OPTS, timing: false, maxNewTokens });
  await run(Math.min(4, newTokens));
  return pipelinedRate(run, B, newTokens);
}

/** Rows of the prologue comparison: the Challenger's batch, where a decode step's dispatches weigh most. */
const PROLOGUE_ROWS = 8;

/**
 * The shipped model's decode with the matmul prologues fused and apart: dispatches per decode
 * step (two generations that differ by 8 decode steps) and the best of 3 decode rates each,
 * alternating so that drift in the machine's load hits both.
 */
async function prologueFigures(rt: Runtime, checkpoint: Map<string, Uint8Array>): Promise<PrologueFigures[]> {
  const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(checkpoint), name: LOOP_CHECKPOINT });
  const adapterDefault = rt.fusedPrologues;
  try {
    const prompts = decodePrompts(PROLOGUE_ROWS);
    const figures = [adapterDefault, !adapterDefault].map((fused) => ({ fused, perStep: zeroCounts(), decodeTokensPerS: 0, prefillMs: Infinity }));
    for (const f of figures) {
      rt.fusedPrologues = f.fused;
      // Plain calls (no timing), as the loop makes them.
      f.perStep = await decodeStepCounts(rt, (newTokens) => session.generate(prompts, { ...DECODE_OPTS, timing: false, maxNewTokens: newTokens }));
    }
    for (let round = 0; round < 3; round++) {
      for (const f of figures) {
        rt.fusedPrologues = f.fused;
        const { tokensPerS, prefillMs } = await decodeRate(session, PROLOGUE_ROWS);
        f.decodeTokensPerS = Math.max(f.decodeTokensPerS, tokensPerS);
        f.prefillMs = Math.min(f.prefillMs, prefillMs);
      }
    }
    return figures;
  } finally {
    rt.fusedPrologues = adapterDefault;
    session.destroy();
  }
}


/** The model a loop bench steps: a checkpoint, how its base is held, and the LoRA adapter that trains (none: in full). */
export interface LoopBenchModel {
  source: Extract<ModelSource, { kind: 'checkpoint' }>;
  lora?: LoraConfig;
}

/**
 * `steps` loop steps of `settings` on a fresh session of `model`, each phase timed (wall and
 * GPU), counted and its generation measured against the decode rate of its batch size.
 */
export async function benchLoopMethod(
  rt: Runtime, bench: LoopBenchModel, seeds: readonly Problem[], settings: LoopSettings, steps: number, log: (m: string) => void,
): Promise<LoopBenchRow> {
  const name = settings.method.name as MethodName;
  const session = ModelSession.create(rt, bench.source);
  try {
    if (bench.lora) session.setLora(bench.lora, { seed: settings.seed });
    session.resetOptimizer();
    const model = detachedRunModel(session, DEFAULT_RUN.warmupLr);
    // Each phase's generation: rows, tokens and time, counted around the model's generate.
    let genOfStep: Partial<Record<Phase, { rows: number; tokens: number; seconds: number }>> = {};
    let phaseNow: Phase | null = null;
    const generate = model.generate.bind(model);
    model.generate = async (request) => {
      const t = performance.now();
      const out = await generate(request);
      const g = (genOfStep[phaseNow!] ??= { rows: 0, tokens: 0, seconds: 0 });
      g.rows = Math.max(g.rows, request.prompts.length);
      g.tokens += out.reduce((n, c) => n + c.completionIds.length, 0);
      g.seconds += (performance.now() - t) / 1e3;
      return out;
    };
    const t0 = performance.now();
    const tuned = await model.prepare!(runShapeHints(settings, seeds, HELD_OUT), (done, total) => {
      if (done === total || done % 20 === 0) log(`loop ${name}: tuning kernels for this run ${done}/${total}`);
    });
    const prepare = { seconds: (performance.now() - t0) / 1e3, tuned };

    // Each phase's counters and GPU time, taken at its boundaries (held time: left out of the step's timings).
    let current: { phase: Phase; counters: RuntimeCounters } | null = null;
    let perStep: Partial<Record<Phase, Omit<PhaseFigures, 'wallS' | 'kernels' | 'kernelsGpuS'>>> = {};
    // The timed steps' GPU time is their submits' (ProfileMode): the work runs as unprofiled,
    // so the wall time and the busy share are a plain run's. The kernel tables come from one
    // step more, each dispatch timed in a pass of its own, which slows the host and the GPU:
    // its entries by phase, nothing else of it.
    const profiler = rt.profiler;
    if (profiler) profiler.mode = 'submits';
    const entriesOf: Partial<Record<Phase, ProfileEntry[]>> = {};
    const close = async () => {
      await rt.sync();
      const entries = await rt.profile();
      const gpuMs = await rt.gpuBusyMs();
      profiler?.reset();
      if (current && profiler?.mode === 'dispatches') {
        (entriesOf[current.phase] ??= []).push(...entries);
        current = null;
      } else if (current) {
        const f = (perStep[current.phase] ??= { gpuS: 0, matmulGflop: 0, work: zeroCounts() });
        f.gpuS += gpuMs / 1e3;
        f.matmulGflop += (rt.counters.matmulFlops - current.counters.matmulFlops) / 1e9;
        addCounts(f.work, countsBetween(current.counters, rt.counters));
        current = null;
      }
    };
    const loop = detachedLoop(model, seeds, settings, async (phase) => {
      await close();
      current = { phase, counters: { ...rt.counters } };
      phaseNow = phase;
    });
    const metrics: StepMetrics[] = [];
    const phaseRuns: Partial<Record<Phase, Omit<PhaseFigures, 'kernels'>[]>> = {};
    const genRuns: Partial<Record<Phase, { rows: number; tokens: number; seconds: number }[]>> = {};
    for (let i = 0; i < steps; i++) {
      perStep = {};
      genOfStep = {};
      const { metrics: m } = await loop.runStep();
      await close();
      metrics.push(m);
      for (const [phase, f] of Object.entries(perStep) as [Phase, Omit<PhaseFigures, 'wallS' | 'kernels'>][]) {
        (phaseRuns[phase] ??= []).push({ ...f, wallS: m.seconds.phases[phase] ?? 0 });
      }
      for (const [phase, g] of Object.entries(genOfStep) as [Phase, { rows: number; tokens: number; seconds: number }][]) (genRuns[phase] ??= []).push(g);
      log(`loop ${name}: step ${i + 1}/${steps} ${m.seconds.total.toFixed(1)} s${m.tunedKernels ? ` (tuned ${m.tunedKernels} new shapes)` : ''}`);
    }
    if (profiler) {
      profiler.mode = 'dispatches';
      const { metrics: m } = await loop.runStep();
      await close();
      log(`loop ${name}: a step with each dispatch timed (the kernel tables) ${m.seconds.total.toFixed(1)} s`);
      profiler.mode = 'submits';
    }
    const med = (f: (m: StepMetrics) => number) => median(metrics.map(f));
    // The decode rate at each batch size a phase generated with, over 128 new tokens or the
    // most a role may write where fewer (a quick run's 8: SwiftShader took 20 minutes at 128).
    const rates = new Map<number, number>();
    const rateTokens = Math.min(DECODE_OPTS.maxNewTokens, Math.max(...Object.values(settings.maxNewTokens)));
    for (const runs of Object.values(genRuns)) for (const g of runs) if (g.rows && !rates.has(g.rows)) rates.set(g.rows, await pipelinedDecodeRate(session, g.rows, rateTokens));
    const phases: Partial<Record<Phase, PhaseFigures>> = {};
    let ideal = 0;
    let actual = 0;
    for (const [phase, runs] of Object.entries(phaseRuns) as [Phase, Omit<PhaseFigures, 'generation' | 'kernels'>[]][]) {
      const pm = (k: 'wallS' | 'gpuS' | 'matmulGflop') => median(runs.map((r) => r[k]));
      const work = zeroCounts();
      for (const k of Object.keys(work) as (keyof WorkCounts)[]) work[k] = median(runs.map((r) => r.work[k]));
      const kernelEntries = entriesOf[phase] ?? [];
      phases[phase] = {
        wallS: pm('wallS'), gpuS: pm('gpuS'), kernels: phaseKernels(kernelEntries, 1), kernelsGpuS: kernelEntries.reduce((n, e) => n + e.totalMs, 0) / 1e3,
        matmulGflop: pm('matmulGflop'), work,
      };
      const gens = genRuns[phase];
      if (gens?.length) {
        const rows = Math.max(...gens.map((g) => g.rows));
        const g = { rows, tokens: median(gens.map((x) => x.tokens)), seconds: median(gens.map((x) => x.seconds)), decodeTokensPerS: rates.get(rows)! };
        phases[phase]!.generation = g;
        ideal += g.tokens / g.decodeTokensPerS;
        actual += g.seconds;
      }
    }
    const generation = med((m) => m.seconds.generation);
    const generatedTokens = med((m) => m.tokens.generated);
    return {
      method: name,
      prepare,
      stepSeconds: metrics.map((m) => m.seconds.total),
      tunedInSteps: metrics.map((m) => m.tunedKernels),
      seconds: { total: med((m) => m.seconds.total), generation, validators: med((m) => m.seconds.validators), training: med((m) => m.seconds.training) },
      phases,
      generatedTokens,
      trainedTokens: med((m) => m.tokens.trained),
      generationTokensPerS: generation > 0 ? generatedTokens / generation : 0,
      generationShare: actual > 0 ? ideal / actual : 0,
    };
  } catch (e) {
    const error = e instanceof Error ? (e.stack ?? e.message) : String(e);
    return {
      method: name, prepare: { seconds: 0, tuned: 0 }, stepSeconds: [], tunedInSteps: [], seconds: { total: 0, generation: 0, validators: 0, training: 0 },
      phases: {}, generatedTokens: 0, trainedTokens: 0, generationTokensPerS: 0, generationShare: 0, error,
    };
  } finally {
    if (rt.profiler) rt.profiler.mode = 'dispatches';
    session.destroy();
  }
}

/** `rt` must profile (Runtime.create with profile: true) and start from an empty tuning cache. */
export async function benchLoop(
  rt: Runtime,
  checkpoint: Map<string, Uint8Array>,
  seeds: readonly Problem[],
  o: { quick: boolean; log: (m: string) => void; methods?: readonly MethodName[]; steps?: number },
): Promise<LoopBench> {
  const peakGflops = await matmulPeak(rt);
  o.log(`loop: matmul peak at 512³ ${peakGflops.toFixed(2)} GFLOP/s`);
  const rows: LoopBenchRow[] = [];
  for (const name of o.methods ?? LOOP_METHODS) {
    const imported = importCheckpoint(checkpoint);
    const model = { source: { kind: 'checkpoint', checkpoint: imported, name: LOOP_CHECKPOINT } } as const;
    // Resolved as the CLI and the page resolve a run from this checkpoint with nothing overridden.
    const settings = resolveRunSettings({ start: checkpointStart(imported.rolesTaught, imported.labSettings), templates: imported.templates ?? 'compact', lora: false, method: name });
    rows.push(await benchLoopMethod(rt, model, seeds, settings, o.steps ?? (o.quick ? 2 : 5), o.log));
  }
  // After the methods: their tuning covers the decode shapes measured here.
  const prologues = await prologueFigures(rt, checkpoint);
  o.log(`loop: decode step ${prologues.map((f) => `${f.fused ? 'fused' : 'apart'} ${f.perStep.dispatches} dispatches, ${f.perStep.bindGroups} bind groups made, ${f.perStep.hostWaits} host waits, ${f.decodeTokensPerS.toFixed(0)} tok/s`).join('; ')}`);
  return { peakGflops, prologues, rows };
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits));
const pct = (x: number) => `${fmt(100 * x, 0)}%`;

/** The per-phase table and the goals' summary of one platform's run. */
export function loopTables(platform: string, bench: LoopBench): Table[] {
  const ok = bench.rows.filter((r) => !r.error);
  const phaseRows = ok.flatMap((r) =>
    LOOP_PHASES.filter((p) => r.phases[p]).map((p) => {
      const f = r.phases[p]!;
      const g = f.generation;
      return [
        r.method, p, fmt(f.wallS, 2), fmt(f.gpuS, 2), fmt(f.matmulGflop, 2), fmt(f.matmulGflop / f.wallS, 2),
        pct(f.matmulGflop / f.wallS / bench.peakGflops), ...formatCounts(f.work, 1),
        g ? `${g.rows}` : '-', g ? fmt(g.tokens / g.seconds, 0) : '-', g ? fmt(g.decodeTokensPerS, 0) : '-', g ? pct(g.tokens / g.seconds / g.decodeTokensPerS) : '-',
      ];
    }),
  );
  const summary = bench.rows.map((r) => {
    if (r.error) return [r.method, 'failed', ...new Array<string>(6).fill('-')];
    const steps = r.stepSeconds;
    const update = r.phases.update;
    return [
      r.method,
      fmt(r.seconds.total, 2),
      `${fmt(steps[0]! / r.seconds.total, 2)} / ${fmt(Math.max(...steps) / r.seconds.total, 2)}`,
      `${fmt(r.prepare.seconds, 0)} s, ${r.prepare.tuned}`,
      String(r.tunedInSteps.reduce((a, b) => a + b, 0)),
      fmt(r.generationTokensPerS, 0),
      pct(r.generationShare),
      update ? pct(update.matmulGflop / update.wallS / bench.peakGflops) : '-',
    ];
  });
  return [
    {
      title: `Loop step by phase, ${platform} (matmul peak at 512³: ${fmt(bench.peakGflops, 2)} GFLOP/s, this run)`,
      columns: ['method', 'phase', 'wall s', 'GPU s', 'matmul GFLOP', 'GFLOP/s', 'share of peak', ...WORK_COUNT_COLUMNS, 'rows', 'generated tok/s', 'decode tok/s at rows', 'share of decode'],
      rows: phaseRows,
      notes: [
        'medians over the timed steps; GPU s: the GPU\'s busy time on the phase\'s submits (timestamp queries at each command buffer\'s start and end, the union of their spans); GFLOP: the matmuls\' 2·M·N·K',
        '(attention, norms and the rest are a few % of the arithmetic here); share of peak: the phase\'s matmul GFLOP/s over the peak;',
        'decode tok/s at rows: the same model decoding that many rows (64-token prompts, 128 new tokens or the longest a role may write where shorter, no EOS), measured in this run;',
        'the update phase is one training step. Host waits: results awaited with nothing submitted after them (each drains the queue)',
      ],
    },
    {
      title: `Decode step of the shipped model with the matmul prologues fused and apart, ${platform} (${PROLOGUE_ROWS} rows)`,
      columns: ['RMSNorm and SwiGLU', ...WORK_COUNT_COLUMNS.map((c) => `${c} per decode step`), 'decode tok/s', 'prefill ms'],
      rows: bench.prologues.map((f) => [
        `${f.fused ? 'in the matmuls after them' : 'kernels of their own'}${f.fused === bench.prologues[0]!.fused ? ' (this adapter\'s default)' : ''}`,
        ...formatCounts(f.perStep), fmt(f.decodeTokensPerS, 0), fmt(f.prefillMs, 0),
      ]),
      notes: [
        'work per decode step: two plain generations 8 steps apart, sampling included; tok/s and prefill: best of 3, alternating,',
        '64-token prompts, 128 new tokens, no EOS',
      ],
    },
    {
      title: `Loop step goals, ${platform}`,
      columns: ['method', 's/step', 'first / slowest step ÷ median', 'tuning before step 1 (shapes)', 'shapes tuned in steps', 'generated tok/s', 'generation share of decode', 'update share of peak'],
      rows: summary,
      notes: [
        'every step timed, the first included, after LoopModel.prepare tuned the run\'s kernels from an empty cache (the methods after the first share its tuning);',
        'generation share of decode: the seconds the phases\' generations would take at the decode rate of their batch sizes over the seconds they took;',
        `a default run's step: ${LOOP_CHECKPOINT} with the settings its record names, every other setting the lab's default`,
      ],
    },
  ];
}
