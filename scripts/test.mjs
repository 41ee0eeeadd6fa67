// `npm test`: unit and GPU kernel tests in Node (Dawn), then browser tests in headless
// Chromium with WebGPU (Playwright). Exits non-zero if any step fails.
import { spawnSync } from 'node:child_process';
import { ensureGpuRuntimes } from './setup.mjs';
import { gpuEnv } from './gpu-env.mjs';

ensureGpuRuntimes();
const env = gpuEnv();
const steps = [
  ['typecheck', ['npx', 'tsc', '--noEmit']],
  ['unit + GPU kernel tests (Node, Dawn)', ['npx', 'vitest', 'run']],
  ['browser tests (Chromium, WebGPU)', ['npx', 'playwright', 'test']],
];
for (const [name, [cmd, ...args]] of steps) {
  console.log(`\n=== ${name} ===`);
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  console.log(`=== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} (${((Date.now() - t0) / 1000).toFixed(0)} s) ===`);
  if (r.status !== 0) process.exit(r.status ?? 1);
}
