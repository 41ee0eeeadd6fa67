// Environment for Node processes that use Dawn (the `webgpu` package). Without a GPU, Dawn
// runs on the SwiftShader Vulkan driver that Debian's chromium ships; it also needs a Vulkan
// loader, which chromium ships too when the system has none (libvulkan1).
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

const CHROMIUM_LIB = '/usr/lib/chromium';
export const SWIFTSHADER_ICD = `${CHROMIUM_LIB}/vk_swiftshader_icd.json`;

function systemHasVulkanLoader() {
  return ['/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib/aarch64-linux-gnu/libvulkan.so.1', '/usr/lib/libvulkan.so.1'].some(
    (p) => existsSync(p),
  );
}

export function vulkanLoaderAvailable() {
  return systemHasVulkanLoader() || existsSync(`${CHROMIUM_LIB}/libvulkan.so.1`);
}

export function gpuEnv(base = process.env) {
  const env = { ...base };
  if (!env.VK_ICD_FILENAMES && existsSync(SWIFTSHADER_ICD) && env.SAGE_GPU !== 'hardware') {
    env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  }
  if (!systemHasVulkanLoader() && existsSync(`${CHROMIUM_LIB}/libvulkan.so.1`)) {
    env.LD_LIBRARY_PATH = [CHROMIUM_LIB, env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  }
  // Dawn's Vulkan window-system code looks for a Wayland display in XDG_RUNTIME_DIR and, where
  // the variable is unset (a headless session, a container, CI), prints "error: XDG_RUNTIME_DIR
  // is invalid or not set" on every start: nothing is wrong, but it reads as a failure. A
  // private empty directory gives it somewhere to find no display, silently.
  if (!env.XDG_RUNTIME_DIR?.startsWith('/')) {
    const dir = join(tmpdir(), `sage-lab-runtime-${userInfo().uid}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    env.XDG_RUNTIME_DIR = dir;
  }
  return env;
}
