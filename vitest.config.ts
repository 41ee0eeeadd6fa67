import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'bench/**/*.test.ts'],
    // One process at a time: GPU tests share the machine's SwiftShader threads, and Dawn
    // is happiest in a plain process (no worker threads).
    pool: 'forks',
    fileParallelism: false,
    // Timeouts only catch hangs: tests assert results after a fixed amount of work, and a
    // busy 2-core machine may run GPU (SwiftShader) work several times slower than idle.
    testTimeout: 15 * 60_000,
    hookTimeout: 15 * 60_000,
  },
});
