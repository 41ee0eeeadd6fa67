// Where the browser is and how to start it with WebGPU, shared by the e2e tests, the
// benchmarks and the install check.
import { existsSync } from 'node:fs';

/** CHROMIUM_PATH overrides; otherwise Debian's chromium. */
export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const chromiumArgs = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  // Use the real GPU when there is one; SWIFTSHADER=1 (or no GPU) forces the CPU adapter.
  ...(process.env.SAGE_GPU === 'hardware' ? [] : ['--use-webgpu-adapter=swiftshader', '--enable-unsafe-swiftshader']),
];

export function browserAvailable() {
  return existsSync(chromiumPath);
}
