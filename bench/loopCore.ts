/**
 * Seconds per loop step, split by phase: SAGE, MAE and the RLVR baseline with the default
 * loop settings, from the shipped warm-up checkpoint (so completions have the lengths of a
 * real run, not the token limits an untrained model runs to) on the shipped curriculum seeds.
 * The page's suite (bench/suites/loop.ts) and its Node half (bench/node/loop.ts) run this
 * same function, each on its platform's WebGPU.
 */
import type { Problem } from '../src/data/problem';
import type { Runtime } from '../src/gpu/runtime';
import { importCheckpoint, memorySink } from '../src/model/checkpoint';
import { ProblemBank } from '../src/sage/bank';
import { METHODS, type MethodName } from '../src/sage/config';
import { DEFAULT_LOOP, SageLoop, type Phase, type StepMetrics } from '../src/sage/loop';
import { DEFAULT_RUN } from '../src/sage/settings';
import { COMPACT_TEMPLATES } from '../src/sage/templates';
import { createValidators } from '../src/sage/validators';
import { sessionRunModel, warmupSft } from '../src/train/runModel';
import { DEFAULT_POLICY, ModelSession } from '../src/train/session';
import { median } from './suite';

/** The shipped checkpoint the loop starts from, and its files. */
export const LOOP_CHECKPOINT = 'data/models/tiny-curriculum';
export const LOOP_CHECKPOINT_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'];
export const LOOP_SEEDS = 'data/seeds/curriculum-500.jsonl';

export const LOOP_METHODS: readonly MethodName[] = ['sage', 'mae', 'rlvr'];
/** Phases in the order a step runs them. */
export const LOOP_PHASES: readonly Phase[] = ['propose', 'score-problems', 'difficulty', 'admit', 'plan', 'score-plans', 'solve', 'judge-answers', 'update'];

export interface LoopBenchRow {
  method: MethodName;
  /** Timed steps (after one untimed step, which tunes kernels for the method's shapes). */
  steps: number;
  /** Medians over the timed steps. */
  seconds: { total: number; generation: number; validators: number; training: number; phases: Partial<Record<Phase, number>> };
  generatedTokens: number;
  trainedTokens: number;
  /** Generated tokens per second of generation. */
  generationTokensPerS: number;
  error?: string;
}

function summarise(method: MethodName, timed: StepMetrics[]): LoopBenchRow {
  const med = (f: (m: StepMetrics) => number) => median(timed.map(f));
  const phases: Partial<Record<Phase, number>> = {};
  for (const p of LOOP_PHASES) if (timed.some((m) => m.seconds.phases[p] !== undefined)) phases[p] = med((m) => m.seconds.phases[p] ?? 0);
  const generation = med((m) => m.seconds.generation);
  const generatedTokens = med((m) => m.tokens.generated);
  return {
    method,
    steps: timed.length,
    seconds: { total: med((m) => m.seconds.total), generation, validators: med((m) => m.seconds.validators), training: med((m) => m.seconds.training), phases },
    generatedTokens,
    trainedTokens: med((m) => m.tokens.trained),
    generationTokensPerS: generation > 0 ? generatedTokens / generation : 0,
  };
}

export async function benchLoop(
  rt: Runtime,
  checkpoint: Map<string, Uint8Array>,
  seeds: readonly Problem[],
  o: { quick: boolean; log: (m: string) => void },
): Promise<LoopBenchRow[]> {
  const timedSteps = o.quick ? 1 : 3;
  const rows: LoopBenchRow[] = [];
  for (const name of LOOP_METHODS) {
    const method = METHODS[name];
    const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(checkpoint), name: LOOP_CHECKPOINT });
    try {
      session.resetOptimizer();
      const model = sessionRunModel(session, { policy: DEFAULT_POLICY, warmup: warmupSft(session, 0), checkpointSink: () => memorySink() });
      const { bank } = ProblemBank.fromSeeds(seeds, { alpha: method.rewards.alpha, nearDuplicate: DEFAULT_RUN.nearDuplicate });
      const loop = new SageLoop(model, createValidators(), bank, { ...DEFAULT_LOOP, method, templates: COMPACT_TEMPLATES });
      const timed: StepMetrics[] = [];
      for (let i = 0; i <= timedSteps; i++) {
        const { metrics } = await loop.runStep();
        o.log(`loop ${name}: step ${i + 1}/${timedSteps + 1}${i === 0 ? ' (untimed: tunes kernels)' : ''} ${metrics.seconds.total.toFixed(1)} s`);
        if (i > 0) timed.push(metrics);
      }
      rows.push(summarise(name, timed));
    } catch (e) {
      const error = e instanceof Error ? (e.stack ?? e.message) : String(e);
      rows.push({ method: name, steps: 0, seconds: { total: 0, generation: 0, validators: 0, training: 0, phases: {} }, generatedTokens: 0, trainedTokens: 0, generationTokensPerS: 0, error });
    } finally {
      session.destroy();
    }
  }
  return rows;
}
