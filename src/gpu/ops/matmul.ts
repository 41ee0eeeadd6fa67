/**
 * The matmul op: C = alpha·op(A)·op(B) (+ bias) (+ beta·C), batched, each call by the variant
 * the autotuner chose for its shape class (autotune.ts) unless the call forces one. The
 * variants themselves, their checks and launches are in matmulVariants.ts.
 */
import type { Runtime } from '../runtime';
import type { Tensor } from '../tensor';
import { matmulTuner } from './autotune';
import { runMatmul, type MatmulArgs } from './matmulVariants';

/** C = alpha·op(A)·op(B) (+ bias) (+ beta·C), batched. Returns C. */
export function matmul(rt: Runtime, args: MatmulArgs): Tensor {
  return runMatmul(rt, args, (shape) => matmulTuner(rt).choose(shape));
}
