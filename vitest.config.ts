import { configDefaults, defineConfig } from 'vitest/config';

// The f16 kernel tests need a driver with shader-f16, which SwiftShader lacks: they run alone,
// in a run of their own on Mesa's lavapipe (SAGE_TESTS=f16, started by scripts/test.mjs with the
// driver's environment: scripts/lavapipe.mjs).
// llama.cpp's decode peer (bench/peers) is tested likewise in a run of its own (SAGE_TESTS=llama),
// where scripts/llamaCpp.mjs could build it.
const F16 = '**/*.f16.test.ts';
const LLAMA = '**/*.llama.test.ts';
const apart = { f16: ['src/' + F16], llama: ['bench/' + LLAMA] }[process.env.SAGE_TESTS ?? ''];

export default defineConfig({
  test: {
    include: apart ?? ['src/**/*.test.ts', 'bench/**/*.test.ts'],
    exclude: apart ? configDefaults.exclude : [...configDefaults.exclude, F16, LLAMA],
    // Files run two at a time, in two forked processes (Dawn is happiest in a plain process,
    // no worker threads). A GPU test's time on SwiftShader is mostly pipeline compiles, which
    // run on one core, so a second file keeps the other core busy.
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    // A worker process runs file after file (not a process each): its Dawn device and the
    // pipelines compiled on it (one PipelineCache per device) serve every later file, where
    // most GPU test time on SwiftShader is compiling the same kernels again. Each file still
    // gets runtimes and an 'own' autotune table of its own (src/testSetup.ts).
    isolate: false,
    setupFiles: ['src/testSetup.ts'],
    // Timeouts only catch hangs: tests assert results after a fixed amount of work, and a
    // busy 2-core machine may run GPU (SwiftShader) work several times slower than idle.
    testTimeout: 15 * 60_000,
    hookTimeout: 15 * 60_000,
  },
});
