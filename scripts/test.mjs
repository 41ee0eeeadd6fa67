// `npm test`: unit and GPU kernel tests in Node (Dawn), the f16 kernel tests on Mesa's lavapipe,
// the llama.cpp decode peer's tests (its model against the float64 reference), then browser tests in headless Chromium with WebGPU (Playwright). Exits non-zero if any step fails.
import { spawnSync } from 'node:child_process';
import { ensureGpuRuntimes } from './setup.mjs';
import { gpuEnv } from './gpu-env.mjs';
import { ensureLavapipe, lavapipeEnv } from './lavapipe.mjs';
import { ensureLlamaCpp } from './llamaCpp.mjs';

ensureGpuRuntimes();
const env = gpuEnv();
const lavapipe = ensureLavapipe();
const llama = ensureLlamaCpp();
const steps = [
  ['typecheck', ['npx', 'tsc', '--noEmit'], env],
  ['unit + GPU kernel tests (Node, Dawn)', ['npx', 'vitest', 'run'], env],
  [
    'f16 kernel tests (Node, Dawn on Mesa lavapipe)',
    ['npx', 'vitest', 'run'],
    lavapipe.icd ? { ...lavapipeEnv(lavapipe.icd, env), SAGE_TESTS: 'f16' } : lavapipe.why,
  ],
  [
    'llama.cpp decode peer tests (its CPU backend)',
    ['npx', 'vitest', 'run'],
    llama.binary ? { ...env, SAGE_TESTS: 'llama', LLAMA_DECODE: llama.binary } : llama.why,
  ],
  ['browser tests (Chromium, WebGPU)', ['npx', 'playwright', 'test'], env],
];
for (const [name, [cmd, ...args], stepEnv] of steps) {
  if (typeof stepEnv === 'string') {
    // Without a driver that offers shader-f16, or llama.cpp's libraries, these cannot run here: said, not failed.
    console.log(`\n=== ${name}: skipped, ${stepEnv} ===`);
    continue;
  }
  console.log(`\n=== ${name} ===`);
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: stepEnv });
  console.log(`=== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} (${((Date.now() - t0) / 1000).toFixed(0)} s) ===`);
  if (r.status !== 0) process.exit(r.status ?? 1);
}
