/**
 * A model session as the loop's RunModel: batched generation on the GPU, the policy-gradient
 * update, SFT for the warm-up, and checkpoints handed to the platform to store.
 */
import { memorySink, type FileSink } from '../platform/fileSink';
import { DEFAULT_POLICY, POSITION_GRANULE, type ModelSession, type PolicySettings } from '../train/session';
import { DEFAULT_SFT, type SftSettings } from '../train/sftSettings';
import { tuneRunShapes } from '../train/tuneRun';
import type { RunModel } from './run';

/**
 * The warm-up's SFT: the curriculum's measured recipe (packed 8 × 128-token batches, peak lr
 * `lr`: 2e-3 for a model from scratch), sequences no longer than the model's context.
 */
export function warmupSft(session: ModelSession, seed: number, lr: number): Omit<SftSettings, 'steps'> {
  return { ...DEFAULT_SFT, batchSize: 8, seqLen: Math.min(128, session.config.max_position_embeddings), packing: true, lr, seed };
}

export interface RunModelOptions {
  policy: PolicySettings;
  /** The warm-up's SFT settings; its step count comes from the run. */
  warmup: Omit<SftSettings, 'steps'>;
  /**
   * Where a checkpoint under a tag is written, a weight at a time (a folder on disk; memory for
   * the browser's autosave); `close` runs once every file is written.
   */
  checkpointSink(tag: string): FileSink & { close?(): void };
}

/**
 * Prompts as token ids that leave room for the completion in the model's context: a prompt
 * too long keeps its first token (BOS, or the chat template's opening) and its end (the instruction and the problem; references at the
 * front go first), and the completion gets at most half the context.
 */
export function fitToContext(prompts: readonly number[][], maxNewTokens: number, context: number): { prompts: number[][]; maxNewTokens: number } {
  const room = Math.min(maxNewTokens, Math.floor(context / 2));
  const keep = context - room;
  return { prompts: prompts.map((p) => (p.length <= keep ? p : [p[0]!, ...p.slice(p.length - keep + 1)])), maxNewTokens: room };
}

/** The loop's generation on a session: prompts fitted to the model's context (also what a validation outside a run generates with). */
export function sessionGenerate(session: ModelSession): RunModel['generate'] {
  return async (r) => {
    const fit = fitToContext(
      r.prompts.map((p) => session.tokenizer.encodePrompt(p)),
      r.maxNewTokens,
      session.config.max_position_embeddings,
    );
    const { rows } = await session.generate(fit.prompts, {
      maxNewTokens: fit.maxNewTokens,
      temperature: r.temperature,
      topK: r.topK,
      topP: r.topP,
      seed: r.seed,
      stop: r.stop,
    });
    return rows.map((row) => ({
      text: row.text, promptIds: row.promptIds, completionIds: row.completionIds, modelLogprobs: row.modelLogprobs, truncated: row.finishReason === 'length',
    }));
  };
}

/**
 * The run model of a loop stepped outside a run (benchmarks, scripts): the default policy, the
 * warm-up recipe at this lr, checkpoints kept in memory.
 */
export function detachedRunModel(session: ModelSession, warmupLr: number): RunModel {
  return sessionRunModel(session, { policy: DEFAULT_POLICY, warmup: warmupSft(session, 0, warmupLr), checkpointSink: () => memorySink() });
}

export function sessionRunModel(session: ModelSession, o: RunModelOptions): RunModel {
  return {
    generate: sessionGenerate(session),
    train: (rollouts, { lr, temperature }) => session.trainPolicy(rollouts, lr, { ...o.policy, loss: { ...o.policy.loss, temperature } }),
    prepare(hints, onProgress) {
      const generations = hints.generations.map((g) => ({ rows: g.rows, distinct: g.distinct, promptTokens: session.tokenizer.encodePrompt(g.prompt).length }));
      return tuneRunShapes(session.model, { generations, trains: hints.trains, microTokens: o.policy.microTokens, granule: POSITION_GRANULE }, onProgress);
    },
    async warmup(examples, steps, onStep) {
      const trainer = await session.startSft(examples, { ...o.warmup, steps, resetOptimizer: true });
      for (let i = 0; i < steps; i++) {
        const r = await trainer.step();
        onStep(i + 1, r.loss);
      }
    },
    async saveCheckpoint(tag) {
      const sink = o.checkpointSink(tag);
      await session.writeCheckpoint(sink, { kind: 'evolve', tag });
      sink.close?.();
    },
  };
}
