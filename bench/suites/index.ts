import type { Suite } from '../suite';

/**
 * Every suite, by the name used in `?suite=` and `npm run bench -- --suite`. Loaded lazily
 * so a run pays only for the libraries its suites import.
 */
export const SUITES: Record<string, () => Promise<Suite>> = {
  matmul: async () => (await import('./matmul')).matmulSuite,
  train: async () => (await import('./train')).trainSuite,
  generate: async () => (await import('./generate')).generateSuite,
  loop: async () => (await import('./loop')).loopSuite,
  gpu: async () => (await import('./gpu')).gpuSuite,
};
