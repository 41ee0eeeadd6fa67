/** Helpers for GPU kernel tests in Node (Dawn). Not part of the app bundle. */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodePlatform } from '../platform/node';
import type { Platform } from '../platform/types';
import { Runtime, type RuntimeOptions } from './runtime';

export { rng, uniform } from '../util/random';
export { assertClose, poisoned, uploadHalf } from './checks';

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

