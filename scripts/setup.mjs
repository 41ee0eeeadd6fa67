// `npm run setup`: makes sure this machine can run WebGPU without a GPU, in the browser and in
// Node. The browser tests need Chromium (CHROMIUM_PATH or /usr/bin/chromium); Dawn (Node) needs
// the SwiftShader Vulkan driver that Debian's chromium ships and a Vulkan loader (libvulkan1).
// As root on Debian it installs what is missing with apt-get; otherwise it says the command.
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { browserAvailable, chromiumPath } from './browser.mjs';
import { SWIFTSHADER_ICD, vulkanLoaderAvailable } from './gpu-env.mjs';
import { ensureLavapipe } from './lavapipe.mjs';
import { ensureLlamaCpp } from './llamaCpp.mjs';

const INSTALL = 'apt-get install -y chromium libvulkan1';

function missing() {
  const what = [];
  if (!browserAvailable()) what.push(`Chromium (${chromiumPath})`);
  if (!process.env.CHROMIUM_PATH && !existsSync(SWIFTSHADER_ICD)) what.push(`SwiftShader (${SWIFTSHADER_ICD})`);
  if (!vulkanLoaderAvailable()) what.push('a Vulkan loader (libvulkan.so.1)');
  return what;
}

export function ensureGpuRuntimes() {
  let what = missing();
  if (!what.length) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && existsSync('/etc/debian_version')) {
    console.log(`Missing ${what.join(', ')}: installing Debian's chromium and libvulkan1 with apt-get ...`);
    execSync(`apt-get update -qq && DEBIAN_FRONTEND=noninteractive ${INSTALL.replace('-y', '-y -qq')}`, { stdio: 'inherit' });
    what = missing();
    if (!what.length) return;
  }
  console.error(
    `Missing ${what.join(', ')}. WebGPU without a GPU runs on SwiftShader, which Chromium ships:\n` +
      `  Debian/Ubuntu: sudo ${INSTALL}   (then re-run)\n` +
      '  or point CHROMIUM_PATH at a Chrome/Chromium 113+ binary (browser tests), SAGE_GPU=hardware for a real GPU.',
  );
  process.exit(1);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  ensureGpuRuntimes();
  const lavapipe = ensureLavapipe();
  console.log(lavapipe.icd ? `Mesa's lavapipe for the f16 kernel tests: ${lavapipe.icd}` : `The f16 kernel tests will be skipped: ${lavapipe.why}.`);
  const llama = ensureLlamaCpp();
  console.log(llama.binary ? `llama.cpp's decode peer: ${llama.binary}` : `The llama.cpp peer's tests will be skipped: ${llama.why}.`);
}
