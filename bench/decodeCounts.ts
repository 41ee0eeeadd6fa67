/**
 * What one decode token costs in recorded work, on any hardware: the dispatches and workgroups
 * of each op, and the weight bytes the matmuls request against the model's size. Taken as the
 * difference between two generate calls that differ only in their number of new tokens, so
 * that the prefill cancels and the sampling and everything else a token needs is counted.
 */
import { matmulTuner } from '../src/gpu/ops/autotune';
import { untunedVariant } from '../src/gpu/ops/matmulVariants';
import type { Runtime } from '../src/gpu/runtime';
import { BYTES_PER_ELEMENT } from '../src/gpu/tensor';
import type { LlamaConfig } from '../src/model/config';
import { Generator } from '../src/model/generate';
import { ByteTokenizer } from '../src/model/tokenizer';
import type { Transformer } from '../src/model/transformer';

/** Qwen2.5-0.5B's shape (its config.json): 24 layers, 14 query heads over 2 kv heads, tied embeddings. */
export const QWEN25_05B: LlamaConfig = {
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-6,
  rope_theta: 1e6,
  tie_word_embeddings: true,
  attention_bias: true,
};

export interface OpCounts {
  dispatches: number;
  workgroups: number;
}

export interface DecodeCounts {
  /** Rows decoded together. */
  B: number;
  /** Per decode step (B tokens), by dispatch label. */
  ops: Record<string, OpCounts>;
  dispatches: number;
  workgroups: number;
  /** Bytes of weights the step's matmuls request (see RuntimeCounters.matmulWeightBytes). */
  weightBytes: number;
  /** Bytes of the model's weights as stored. */
  modelBytes: number;
}

/**
 * Records a GPU's untuned plan on this runtime: each matmul shape gets the variant the untuned
 * table picks for an adapter with subgroups, with the cooperative kernels (serialRows false).
 * Returns the function that puts the runtime's own choice back.
 */
export function planAsGpu(rt: Runtime, what: string): () => void {
  if (rt.serialRows) throw new Error(`${what}: a GPU plan needs a runtime with serialRows false`);
  const gpu = { adapter: { ...rt.ctx.adapter, architecture: 'gpu' }, features: new Set(['subgroups'] as const) };
  const tuner = matmulTuner(rt);
  const choose = tuner.choose;
  tuner.choose = (shape) => untunedVariant(shape, gpu);
  return () => {
    tuner.choose = choose;
  };
}

/**
 * Counts dispatches and workgroups by label from now until `stop()`, each dispatch also run
 * when `execute` (false records the plan without running it).
 */
export function countOps(rt: Runtime, execute: boolean): { ops: Record<string, OpCounts>; stop: () => void } {
  const ops: Record<string, OpCounts> = {};
  const dispatch = rt.dispatch;
  rt.dispatch = (d) => {
    const op = (ops[d.label ?? d.kernel.entry] ??= { dispatches: 0, workgroups: 0 });
    op.dispatches++;
    op.workgroups += d.workgroups.reduce<number>((n, w) => n * (w ?? 1), 1);
    if (execute) dispatch.call(rt, d);
  };
  return {
    ops,
    stop: () => {
      rt.dispatch = dispatch;
    },
  };
}

/** The sums of a per-op table. */
export function opTotals(ops: Record<string, OpCounts>): OpCounts {
  const sum = (k: keyof OpCounts) => Object.values(ops).reduce((n, c) => n + c[k], 0);
  return { dispatches: sum('dispatches'), workgroups: sum('workgroups') };
}

/** Byte-level token ids and no text: counting never reads what is generated, whatever the vocabulary. */
export class Untexted extends ByteTokenizer {
  override decode(): string {
    return '';
  }
}

/**
 * The work one decode step of B rows records, at a prompt of `prompt` tokens. `gpuPlan` records
 * it as a GPU's untuned runtime would choose its kernels (decode matmuls of its untuned table for
 * an adapter with subgroups); the runtime must then run rows cooperatively (serialRows false).
 * `execute` false records the plan without running it (what is counted never depends on the
 * values computed: no end-of-sequence token stops a row): a GPU plan SwiftShader cannot run in
 * minutes is counted in seconds.
 */
export async function decodeCounts(model: Transformer, B: number, options: { prompt?: number; gpuPlan?: boolean; execute?: boolean } = {}): Promise<DecodeCounts> {
  const rt = model.rt;
  const prompt = options.prompt ?? 16;
  const restorePlan = options.gpuPlan ? planAsGpu(rt, 'decode counts') : () => {};
  const gen = new Generator(model, new Untexted());
  const input = Array.from({ length: B }, (_, b) => Array.from({ length: prompt }, (_, t) => (31 * b + 7 * t) % 256));
  const run = async (tokens: number) => {
    const before = rt.counters.matmulWeightBytes;
    const counting = countOps(rt, options.execute ?? true);
    try {
      // Every step recorded, not replayed: a step's own dispatches are what is counted.
      await gen.generate(input, { maxNewTokens: tokens, eosTokenIds: [], seed: 1, replay: false });
    } finally {
      counting.stop();
    }
    return { ops: counting.ops, weightBytes: rt.counters.matmulWeightBytes - before };
  };
  try {
    // First a generation counted in neither: one-time work (an adapter's inference copies) is made there.
    await run(1);
    const [short, long] = [await run(2), await run(3)];
    const ops: Record<string, OpCounts> = {};
    for (const [label, c] of Object.entries(long.ops)) {
      const d = { dispatches: c.dispatches - (short.ops[label]?.dispatches ?? 0), workgroups: c.workgroups - (short.ops[label]?.workgroups ?? 0) };
      if (d.dispatches) ops[label] = d;
    }
    return { B, ops, ...opTotals(ops), weightBytes: long.weightBytes - short.weightBytes, modelBytes: modelBytes(model) };
  } finally {
    restorePlan();
    gen.release();
  }
}

function modelBytes(model: Transformer): number {
  return model.specs.reduce((n, s) => n + s.size, 0) * BYTES_PER_ELEMENT[model.baseDtype];
}

/** Rows of a per-op table: op, dispatches and workgroups per step, largest workgroup count first. */
export function opRows(c: DecodeCounts): string[][] {
  return Object.entries(c.ops)
    .sort((a, b) => b[1].workgroups - a[1].workgroups)
    .map(([op, n]) => [op, String(n.dispatches), String(n.workgroups)]);
}
