/** Helpers for GPU kernel tests in Node (Dawn). Not part of the app bundle. */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodePlatform } from '../platform/node';
import type { Platform } from '../platform/types';
import { rowRelativeError } from './reference';
import { Runtime, type RuntimeOptions } from './runtime';
import { f32ToHalves, halvesToF32 } from '../util/half';
import { view, type Tensor } from './tensor';

export { rng, uniform } from '../util/random';

const shared = new Map<string, Promise<Runtime>>();

/**
 * Where a test runtime keeps its autotune table: its file's own, thrown away ('own': a kernel
 * test sees only what it tuned itself), or the suite's ('suite': the repository's cache, which
 * every command-line run the tests start also uses). Tests of training and runs take the
 * suite's, so that a shape class is measured once for the whole suite, as a user's runs measure
 * it once, instead of once in every file.
 */
export type TuningCache = 'own' | 'suite';

/** Test files this process has ended (endTestRuntimes): a file's 'own' autotune table is named by it. */
let filesEnded = 0;

/** The platform of a test runtime or engine with that autotune table. */
export function testPlatform(tuning: TuningCache): Platform {
  return tuning === 'suite' ? nodePlatform() : nodePlatform({ cacheFile: join(tmpdir(), `sage-lab-test-${process.pid}-${filesEnded}.json`) });
}

/**
 * Ends the test file's runtimes (src/testSetup.ts, after each file). A worker process runs
 * several files (vitest.config.ts): the next file gets runtimes and an 'own' autotune table of
 * its own, on the same device, whose compiled pipelines it reuses.
 */
export async function endTestRuntimes(): Promise<void> {
  const ending = [...shared.values()];
  shared.clear();
  filesEnded++;
  for (const rt of ending) (await rt).destroy();
}

/** One runtime per test file, option set and autotune table (see TuningCache). */
export function testRuntime(options: RuntimeOptions = {}, tuning: TuningCache = 'own'): Promise<Runtime> {
  const key = JSON.stringify([options, tuning]);
  let rt = shared.get(key);
  if (!rt) {
    rt = Runtime.create(testPlatform(tuning), options);
    shared.set(key, rt);
  }
  return rt;
}

export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}

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
