// Runs a TypeScript entry point in Node with the environment Dawn needs (see gpu-env.mjs).
import { spawnSync } from 'node:child_process';
import { gpuEnv } from './gpu-env.mjs';

const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  console.error('usage: node scripts/node-gpu.mjs <entry.ts> [args...]');
  process.exit(2);
}
const r = spawnSync('npx', ['tsx', entry, ...args], { stdio: 'inherit', env: gpuEnv() });
// npx missing (Node without npm) leaves no output of its own: say so rather than exit silently.
if (r.error) console.error(`node-gpu: could not start npx tsx ${entry}: ${r.error.message}`);
process.exit(r.status ?? 1);
