/**
 * Inputs and checks against float64 shared by the kernel tests and the GPU report's on-card
 * checks (bench/mmaCheck.ts: kernels that only a GPU with subgroup matrices runs).
 */
import { f32ToHalves, halvesToF32 } from '../util/half';
import { rowRelativeError } from './reference';
import type { Runtime } from './runtime';
import { view, type Tensor } from './tensor';

/** A tensor filled with NaN, so a kernel that skips an element is caught. */
export function poisoned(rt: Runtime, shape: readonly number[]): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return rt.upload(new Float32Array(size).fill(Number.NaN), shape);
}

/**
 * Fails on any NaN, or on an element whose error exceeds `tol` relative to its row's scale
 * (see rowRelativeError). Reports the worst element.
 */
export function assertClose(
  what: string,
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  rowLength: number,
  tol = 1e-5,
  scaleOf: ArrayLike<number> = ref,
): void {
  if (got.length !== ref.length) throw new Error(`${what}: ${got.length} values, expected ${ref.length}`);
  const nan = Array.prototype.findIndex.call(got, (g: number) => Number.isNaN(g));
  if (nan >= 0) throw new Error(`${what}: NaN at element ${nan} (expected ${ref[nan]})`);
  const { error: worst, at: worstAt } = rowRelativeError(got, ref, rowLength, scaleOf);
  if (worst > tol) {
    throw new Error(
      `${what}: relative error ${worst.toExponential(2)} > ${tol} at element ${worstAt} ` +
        `(got ${got[worstAt]}, expected ${ref[worstAt]})`,
    );
  }
}

/**
 * `values` rounded to half precision and uploaded as an f16 tensor starting `offset` elements
 * into a buffer whose other halves are NaN; returns the tensor and the rounded values (the
 * reference's inputs).
 */
export function uploadHalf(rt: Runtime, values: Float32Array, shape: readonly number[], offset = 0): { tensor: Tensor<'f16'>; values: Float32Array<ArrayBuffer> } {
  const halves = f32ToHalves(values);
  const whole = new Uint16Array(Math.ceil((offset + values.length) / 2) * 2).fill(0x7e00);
  whole.set(halves, offset);
  const buffer = rt.upload(whole, [whole.length], 'f16');
  return { tensor: view(buffer, shape, offset), values: halvesToF32(halves) };
}
