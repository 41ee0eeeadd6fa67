/** The options of `npm run bench` (scripts/bench.mjs), declared where the tests can check them. */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliDescription, OptionSpecs } from '../src/cli/options';

/** Every page suite: bench/suites/<name>.ts. */
export const SUITE_NAMES = readdirSync(join(dirname(fileURLToPath(import.meta.url)), 'suites'))
  .filter((f) => f.endsWith('.ts') && f !== 'index.ts')
  .map((f) => f.slice(0, -3))
  .sort();

const options = {
  suite: { type: 'string', multiple: true, choices: ['all', ...SUITE_NAMES], arg: 'NAME[,NAME]', help: 'suites to run (default all); repeatable' },
  quick: { type: 'flag', help: 'fewer shapes and runs: checks the harness, not a measurement' },
  'timeout-min': { type: 'number', min: 0, minExclusive: true, default: 20, help: 'give up on the page, and on each Node half, after N minutes' },
  'no-write': { type: 'flag', help: 'print only; write no files under bench/results' },
} as const satisfies OptionSpecs;

export const benchCli: CliDescription<typeof options> = {
  name: 'bench',
  summary: 'Side-by-side benchmarks in headless Chromium on WebGPU (and their Node halves on Dawn).',
  options,
  notes: ['env CHROMIUM_PATH  browser executable (default /usr/bin/chromium)', 'env SAGE_GPU=hardware  use the real GPU instead of SwiftShader'],
};
