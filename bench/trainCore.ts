/**
 * What the training benchmark shares between the page (bench/suites/train.ts) and Node
 * (bench/node/train.ts): the workloads, the batches, our training step, the timing loop and
 * the per-kernel profile. Platform-neutral: callers hand in a way to make a Runtime.
 */
import { byLabel, type ProfileEntry } from '../src/gpu/profiler';
import type { Runtime } from '../src/gpu/runtime';
import { PRESETS, type LlamaConfig, type PresetName } from '../src/model/config';
import { initialParams, Transformer } from '../src/model/transformer';
import { AdamW, DEFAULT_ADAMW, type AdamWConfig } from '../src/train/adamw';
import { trainStep } from '../src/train/step';
import type { Platform } from '../src/platform/types';
import { median, rng } from './suite';

export interface Workload {
  preset: PresetName;
  B: number;
  T: number;
  /** Steps before timing starts; the first compiles every pipeline. */
  warmup: number;
  /** Timed steps; the figure is their median. */
  steps: number;
  /** Steps of the separate, profiled pass (after one un-recorded step). */
  profileSteps: number;
}

/**
 * tiny at B=8, T=128. small has ~10× the parameters: on a CPU adapter a step takes tens of
 * seconds, so it runs half the batch and --quick leaves it out.
 */
export function workloads(quick: boolean): Workload[] {
  if (quick) return [{ preset: 'tiny', B: 8, T: 128, warmup: 1, steps: 2, profileSteps: 1 }];
  return [
    { preset: 'tiny', B: 8, T: 128, warmup: 2, steps: 5, profileSteps: 2 },
    { preset: 'small', B: 4, T: 128, warmup: 2, steps: 5, profileSteps: 1 },
  ];
}

export const workloadLabel = (w: Pick<Workload, 'preset' | 'B' | 'T'>) => `${w.preset} ${w.B}×${w.T}`;

/** Same for every contender, so their losses can be compared step by step. */
export const INIT_SEED = 1234;
export const DATA_SEED = 0x7e57;
export const LR = 1e-3;
export const ADAMW: AdamWConfig = DEFAULT_ADAMW;
/** Distinct batches, cycled: enough to train on, few enough that the loss visibly falls. */
const BATCHES = 4;

export function presetConfig(w: Workload): LlamaConfig {
  return PRESETS[w.preset];
}

export function initialWeights(w: Workload): Float32Array {
  return initialParams(presetConfig(w), INIT_SEED);
}

export interface TrainBatch {
  tokens: Int32Array<ArrayBuffer>;
  targets: Int32Array<ArrayBuffer>;
}

const WORDS = (
  'the of and to in is was for on that with as by at from his it an were are which this be ' +
  'model train loss step token layer weight gradient attention head norm batch learn rate ' +
  'small tiny fast slow value query key sum mean time data run test check agent plan solve'
).split(' ');

/**
 * Byte-level text from a seeded word sampler: sentences with structure a model can learn
 * (spaces, capitals, periods, a small word list), so the loss falls within a few steps.
 */
export function makeBatches(B: number, T: number, seed = DATA_SEED, count = BATCHES): TrainBatch[] {
  const random = rng(seed);
  const pick = <X>(xs: readonly X[]) => xs[Math.floor(random() * xs.length)]!;
  return Array.from({ length: count }, () => {
    const tokens = new Int32Array(B * T);
    const targets = new Int32Array(B * T);
    for (let b = 0; b < B; b++) {
      let text = '';
      while (text.length < T + 1) {
        const n = 4 + Math.floor(random() * 8);
        const words = Array.from({ length: n }, () => pick(WORDS));
        words[0] = words[0]!.charAt(0).toUpperCase() + words[0]!.slice(1);
        text += `${words.join(' ')}. `;
      }
      for (let t = 0; t < T; t++) {
        tokens[b * T + t] = text.charCodeAt(t);
        targets[b * T + t] = text.charCodeAt(t + 1);
      }
    }
    return { tokens, targets };
  });
}

export interface StepOutcome {
  loss: number;
  gradNorm?: number;
}

/** One contender's training loop, advanced one step at a time. */
export interface Trainer {
  step(batch: TrainBatch): Promise<StepOutcome>;
  dispose(): void;
}

/**
 * Our training step as an application runs it (src/train/step.ts, the step SftTrainer
 * takes): zeroGrad, forward + fused loss, backward, AdamW with the gradient clip on the
 * GPU, one readback of the loss and the grad-norm statistics; the first step also tunes the
 * matmul shapes it used.
 */
export function oursTrainer(rt: Runtime, w: Workload, flat: Float32Array): Trainer {
  const config = presetConfig(w);
  const { B, T } = w;
  const model = Transformer.fromFlat(rt, config, flat);
  const optimizer = new AdamW(rt, model.params.size, model.specs, ADAMW);
  // Every token is trained on, so each weighs 1/N and the summed loss is the mean.
  const weights = new Float32Array(B * T).fill(1 / (B * T));
  return {
    async step({ tokens, targets }) {
      const r = await trainStep(model, optimizer, [{ B, T, tokens, targets, weights }], LR);
      if (!r.finite) throw new Error('ours: non-finite gradient (the step was skipped)');
      return { loss: r.loss, gradNorm: r.gradNorm };
    },
    dispose() {
      optimizer.destroy();
      model.destroy();
    },
  };
}

/**
 * The platform with a private, empty autotune cache: results then do not depend on which
 * suites ran before in the same browser profile (the matmul suite tunes shapes); the
 * first warm-up step tunes the training shapes, as a first run of the lab does.
 */
export function isolatedCache(platform: Platform): Platform {
  const memory = new Map<string, string>();
  return {
    ...platform,
    loadCache: async () => Object.fromEntries(memory),
    saveCache: async (key, value) => void memory.set(key, value),
  };
}

export interface Measurement {
  /** B·T / median step time. */
  tokensPerS: number;
  medianMs: number;
  samplesMs: number[];
  warmupMs: number[];
  /** Loss of every step, warm-up included, in order. */
  losses: number[];
  gradNorms: number[];
}

export function summarize(w: Workload, m: Omit<Measurement, 'tokensPerS' | 'medianMs'>): Measurement {
  const medianMs = median(m.samplesMs);
  return { ...m, medianMs, tokensPerS: (w.B * w.T) / (medianMs / 1e3) };
}

export interface Entrant {
  name: string;
  trainer: Trainer;
}

/**
 * Warm-up, then timed steps interleaved across contenders (rotating who goes first), so
 * drift in machine load lands on all of them alike. Every contender sees the same batch
 * sequence. A contender that throws is dropped and reported in `errors`.
 */
export async function measure(
  w: Workload,
  entrants: Entrant[],
  batches: TrainBatch[],
  log: (m: string) => void,
): Promise<{ results: Record<string, Measurement>; errors: Record<string, string> }> {
  const errors: Record<string, string> = {};
  const state = new Map(entrants.map((e) => [e.name, { warmupMs: [] as number[], samplesMs: [] as number[], losses: [] as number[], gradNorms: [] as number[] }]));
  let stepIndex = 0;
  const runStep = async (e: Entrant, timed: boolean, index: number) => {
    const s = state.get(e.name)!;
    const t0 = performance.now();
    const out = await e.trainer.step(batches[index % batches.length]!);
    const ms = performance.now() - t0;
    if (!Number.isFinite(out.loss)) throw new Error(`loss is ${out.loss} at step ${index}`);
    (timed ? s.samplesMs : s.warmupMs).push(ms);
    s.losses.push(out.loss);
    if (out.gradNorm !== undefined) s.gradNorms.push(out.gradNorm);
    return ms;
  };
  const live = () => entrants.filter((e) => !(e.name in errors));
  const total = w.warmup + w.steps;
  for (; stepIndex < total; stepIndex++) {
    const timed = stepIndex >= w.warmup;
    const order = live().map((_, i, all) => all[(i + stepIndex) % all.length]!);
    for (const e of order) {
      try {
        const ms = await runStep(e, timed, stepIndex);
        const s = state.get(e.name)!;
        log(
          `train ${workloadLabel(w)}: ${e.name} step ${stepIndex + 1}/${total}${timed ? '' : ' (warm-up)'} ` +
            `${ms.toFixed(0)} ms, loss ${s.losses[s.losses.length - 1]!.toFixed(4)}`,
        );
      } catch (err) {
        errors[e.name] = err instanceof Error ? (err.stack ?? err.message) : String(err);
        log(`train ${workloadLabel(w)}: ${e.name} failed: ${errors[e.name]}`);
      }
    }
  }
  const results: Record<string, Measurement> = {};
  for (const e of entrants) {
    try {
      e.trainer.dispose();
    } catch (err) {
      errors[e.name] ??= err instanceof Error ? err.message : String(err);
    }
    if (e.name in errors) continue;
    results[e.name] = summarize(w, state.get(e.name)!);
  }
  return { results, errors };
}

export interface KernelProfile {
  /** Per step: dispatch count and GPU time by kernel label, slowest first. */
  kernels: { label: string; callsPerStep: number; msPerStep: number; share: number }[];
  /** Σ kernel GPU time per step. */
  gpuMsPerStep: number;
  /** Wall time per step of the profiled pass (slower than unprofiled: one pass per dispatch). */
  wallMsPerStep: number;
  steps: number;
}

/**
 * Our per-kernel GPU time from timestamp queries, in a pass of its own on a fresh runtime
 * (profiling puts every dispatch in its own compute pass, which costs time, so it must not
 * share a run with the throughput figure). One un-recorded step first compiles pipelines.
 */
export async function profileOurs(
  makeRuntime: (options: { profile: boolean }) => Promise<Runtime>,
  w: Workload,
  flat: Float32Array,
  batches: TrainBatch[],
): Promise<KernelProfile | null> {
  const rt = await makeRuntime({ profile: true });
  try {
    if (!rt.profiler) return null;
    const trainer = oursTrainer(rt, w, flat);
    await trainer.step(batches[0]!);
    await rt.profile();
    rt.profiler.reset();
    const t0 = performance.now();
    for (let i = 0; i < w.profileSteps; i++) await trainer.step(batches[(i + 1) % batches.length]!);
    const wallMsPerStep = (performance.now() - t0) / w.profileSteps;
    const entries: ProfileEntry[] = byLabel(await rt.profile());
    trainer.dispose();
    const gpuMs = entries.reduce((n, e) => n + e.totalMs, 0);
    return {
      kernels: entries.map((e) => ({
        label: e.label,
        callsPerStep: e.count / w.profileSteps,
        msPerStep: e.totalMs / w.profileSteps,
        share: gpuMs > 0 ? e.totalMs / gpuMs : 0,
      })),
      gpuMsPerStep: gpuMs / w.profileSteps,
      wallMsPerStep,
      steps: w.profileSteps,
    };
  } finally {
    rt.destroy();
  }
}

/** What bench/node/train.ts reports for each workload (it runs ours only). */
export interface NodeTrainResult {
  workload: Workload;
  dawn: string;
  /** os.loadavg() before and after: other processes on the machine skew CPU-adapter timings. */
  loadAvg: { before: number[]; after: number[] };
  result?: Measurement;
  /** Per-kernel GPU time in Node (Dawn's timestamp queries), when the adapter has them. */
  profile?: KernelProfile | null;
  error?: string;
}
