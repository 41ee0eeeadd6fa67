/** Helpers for GPU kernel tests in Node (Dawn). Not part of the app bundle. */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodePlatform } from '../platform/node';
import { Runtime, type RuntimeOptions } from './runtime';
import type { Tensor } from './tensor';

export { rng } from '../util/random';

const shared = new Map<string, Promise<Runtime>>();

/** One runtime per test file and option set, with its own throwaway autotune cache. */
export function testRuntime(options: RuntimeOptions = {}): Promise<Runtime> {
  const key = JSON.stringify(options);
  let rt = shared.get(key);
  if (!rt) {
    rt = Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-lab-test-${process.pid}.json`) }), options);
    shared.set(key, rt);
  }
  return rt;
}

export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}

/** Uniform values in [-scale, scale). */
export function uniform(n: number, random: () => number, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => (2 * random() - 1) * scale);
}

/** A tensor filled with NaN, so a kernel that skips an element is caught. */
export function poisoned(rt: Runtime, shape: readonly number[]): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return rt.upload(new Float32Array(size).fill(Number.NaN), shape);
}

/**
 * Fails on any NaN, or on an element whose error exceeds `tol` relative to its row's scale:
 * the largest magnitude in that row of `scale` (by default the reference itself). For sums
 * that can cancel, pass the same computation over absolute values (Σ|a||b| for a matmul),
 * the quantity f32 rounding error is proportional to. Reports the worst element.
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
  let worst = 0;
  let worstAt = -1;
  for (let r = 0; r * rowLength < ref.length; r++) {
    let scale = 0;
    const end = Math.min(ref.length, (r + 1) * rowLength);
    for (let i = r * rowLength; i < end; i++) scale = Math.max(scale, Math.abs(scaleOf[i]!));
    scale = Math.max(scale, 1e-30);
    for (let i = r * rowLength; i < end; i++) {
      const g = got[i]!;
      if (Number.isNaN(g)) throw new Error(`${what}: NaN at element ${i} (expected ${ref[i]})`);
      const err = Math.abs(g - ref[i]!) / scale;
      if (!(err <= worst)) {
        worst = err;
        worstAt = i;
      }
    }
  }
  if (worst > tol) {
    throw new Error(
      `${what}: relative error ${worst.toExponential(2)} > ${tol} at element ${worstAt} ` +
        `(got ${got[worstAt]}, expected ${ref[worstAt]})`,
    );
  }
}
