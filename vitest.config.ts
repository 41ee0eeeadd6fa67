import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // One process at a time: GPU tests share the machine's SwiftShader threads, and Dawn
    // is happiest in a plain process (no worker threads).
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
