import { configDefaults, defineConfig } from 'vitest/config';

// The f16 kernel tests need a driver with shader-f16, which SwiftShader lacks: they run alone,
// in a run of their own on Mesa's lavapipe (SAGE_TESTS=f16, started by scripts/test.mjs with the
// driver's environment: scripts/lavapipe.mjs).
const F16 = '**/*.f16.test.ts';
const f16Run = process.env.SAGE_TESTS === 'f16';

export default defineConfig({
  test: {
    include: f16Run ? ['src/' + F16] : ['src/**/*.test.ts', 'bench/**/*.test.ts'],
    exclude: f16Run ? configDefaults.exclude : [...configDefaults.exclude, F16],
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
