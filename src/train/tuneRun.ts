/**
 * Tuning a run's kernels before its first step. The matmul autotuner measures each shape class
 * (transposes and the log2 size of M, N and K) the first time it is used; left to the loop,
 * that happens inside steps: a cold first step several times the median, and spikes mid-run
 * when a batch of a new size appears. Here the model's generation and update are traced (their
 * dispatches discarded, see Runtime.trace) at a representative size of every class the run
 * can reach, and every class not yet measured on this adapter is tuned, with progress.
 */
import { matmulTuner } from '../gpu/ops/autotune';
import { Decoder } from '../model/decoder';
import type { Transformer } from '../model/transformer';
import { DEFAULT_POLICY_LOSS } from './policy';

export interface GenerationShape {
  /** Rows of the batch, distinct prompts among them (prefilled once each), and the longest prompt in tokens. */
  rows: number;
  distinct: number;
  promptTokens: number;
}

export interface RunShapes {
  /** Every generation the run makes (a phase's batch, validation's). */
  generations: GenerationShape[];
  /** Whether the run updates the model (the update's forward and backward shapes). */
  trains: boolean;
  /** The update's micro-batch token budget and row-length granule (see packRollouts). */
  microTokens: number;
  granule: number;
}

const log2 = (x: number) => Math.ceil(Math.log2(Math.max(1, x)));
/** The smallest size in log2 class k (the cheapest shape to tune it at). */
const classLow = (k: number) => (k === 0 ? 1 : 2 ** (k - 1) + 1);

/** `rows` prompts of P tokens, all distinct (none shared: their prefill has rows × P positions). */
function distinctPrompts(rows: number, P: number, V: number): number[][] {
  return Array.from({ length: rows }, (_, b) => Array.from({ length: P }, (_, t) => Math.floor(b / V ** t) % V));
}

/** Records, without running them, the generations and the update at every size class the run can reach. */
export function traceRunShapes(model: Transformer, s: RunShapes): void {
  const rt = model.rt;
  const c = model.config;
  const context = c.max_position_embeddings;
  const V = c.vocab_size;
  const prefill = new Set<number>();
  const decode = new Set<number>();
  for (const g of s.generations) {
    for (let k = 0; k <= log2(g.distinct * Math.min(g.promptTokens, context - 1)); k++) prefill.add(k);
    for (let k = 0; k <= log2(g.rows); k++) decode.add(k);
  }
  const trace = (rows: number, P: number, steps: number[]) => {
    const decoder = new Decoder(model, rows, P + Math.max(1, steps.length));
    try {
      decoder.prefill(distinctPrompts(rows, P, V));
      for (const n of steps) decoder.step(Array.from({ length: n }, (_, b) => b), new Array<number>(n).fill(0));
    } finally {
      decoder.destroy();
    }
  };
  rt.trace(() => {
    // Prefills of M positions in each class (rows × P, as few rows as the batch has), then decode steps of n rows.
    const maxRows = Math.max(1, ...s.generations.map((g) => g.rows));
    for (const k of prefill) {
      const M = classLow(k);
      let rows = Math.min(M, maxRows);
      let P = Math.ceil(M / rows);
      if (P === 1 && rows > V) [rows, P] = [Math.ceil(M / 2), 2];
      if (P < context) trace(rows, P, []);
    }
    const steps = [...decode].map(classLow);
    const rows = Math.max(...steps);
    trace(rows, rows > V ? 2 : 1, steps);
    if (!s.trains) return;
    // The update: micro-batches of 1..rowsPer packed rows (packRollouts' row length when sequences are shorter than it).
    const T = Math.min(context, Math.max(s.granule, Math.floor(s.microTokens / s.granule) * s.granule));
    const rowsPer = Math.max(1, Math.floor(s.microTokens / T));
    const classes = new Set<number>();
    for (let B = rowsPer; B >= 1; B--) {
      if (classes.has(log2(B * T))) continue;
      classes.add(log2(B * T));
      const N = B * T;
      model.forwardPolicyLoss({ B, T, tokens: new Array<number>(N).fill(0), targets: new Array<number>(N).fill(0) }, new Float32Array(4 * N), DEFAULT_POLICY_LOSS);
      model.backward();
    }
    traceLossHeads(model, rowsPer, T);
  });
}

/**
 * Records a loss's LM head at every size class of rows below B·T (traced: call inside
 * Runtime.trace). The head runs on the rows with targets alone (Transformer.lossHead), as many
 * as a micro-batch has completion or response tokens, so a step's head can be of any class up
 * to its batch's; the rest of the step is the batch's whole.
 */
export function traceLossHeads(model: Transformer, B: number, T: number): void {
  const N = B * T;
  const tokens = new Array<number>(N).fill(0);
  const weights = new Array<number>(N).fill(0);
  for (let k = 0; k < log2(N); k++) {
    const n = classLow(k);
    model.forwardLoss({ B, T, tokens, targets: tokens.map((_, i) => (i < n ? 0 : -1)), weights });
    model.backward();
  }
}

/**
 * Traces the run's shapes, then tunes every matmul class not measured yet on this adapter
 * (the results persist: a later run on the same machine tunes nothing). Returns how many.
 */
export async function tuneRunShapes(model: Transformer, s: RunShapes, onProgress: (done: number, total: number) => void = () => {}): Promise<number> {
  traceRunShapes(model, s);
  const tuner = matmulTuner(model.rt);
  return tuner.tunePending(3, onProgress);
}
