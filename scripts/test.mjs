// `npm test`: unit and GPU kernel tests in Node (Dawn), the f16 kernel tests on Mesa's lavapipe,
// then browser tests in headless Chromium with WebGPU (Playwright). Exits non-zero if any step fails.
import { spawnSync } from 'node:child_process';
import { ensureGpuRuntimes } from './setup.mjs';
import { gpuEnv } from './gpu-env.mjs';
import { ensureLavapipe, lavapipeEnv } from './lavapipe.mjs';

ensureGpuRuntimes();
const env = gpuEnv();
const lavapipe = ensureLavapipe();
const steps = [
  ['typecheck', ['npx', 'tsc', '--noEmit'], env],
  ['unit + GPU kernel tests (Node, Dawn)', ['npx', 'vitest', 'run'], env],
  [
    'f16 kernel tests (Node, Dawn on Mesa lavapipe)',
    ['npx', 'vitest', 'run'],
    lavapipe.icd ? { ...lavapipeEnv(lavapipe.icd, env), SAGE_TESTS: 'f16' } : null,
  ],
  ['browser tests (Chromium, WebGPU)', ['npx', 'playwright', 'test'], env],
];
for (const [name, [cmd, ...args], stepEnv] of steps) {
  if (!stepEnv) {
    // Without a driver that offers shader-f16 these kernels cannot run here: said, not failed.
    console.log(`\n=== ${name}: skipped, ${lavapipe.why} ===`);
    continue;
  }
  console.log(`\n=== ${name} ===`);
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: stepEnv });
  console.log(`=== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} (${((Date.now() - t0) / 1000).toFixed(0)} s) ===`);
  if (r.status !== 0) process.exit(r.status ?? 1);
}
