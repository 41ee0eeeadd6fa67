import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeSandboxPool } from '../verify/python/nodePool';
import type { Platform } from './types';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM_LIB = '/usr/lib/chromium';
const SWIFTSHADER_ICD = `${CHROMIUM_LIB}/vk_swiftshader_icd.json`;
const VULKAN_LOADERS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib', CHROMIUM_LIB].map(
  (dir) => `${dir}/libvulkan.so.1`,
);
const INSTALL = 'sudo apt-get install -y chromium libvulkan1   (Debian/Ubuntu; as root: npm run setup)';

/**
 * Why Dawn found no adapter on this machine, and the command that fixes it. Without a GPU,
 * Dawn runs on SwiftShader, a CPU Vulkan driver that Debian's chromium ships, through a
 * Vulkan loader (libvulkan1).
 */
export function nodeUnavailableAdvice(): string {
  if (process.env.SAGE_GPU === 'hardware') {
    return 'SAGE_GPU=hardware asks for a real GPU and Dawn found none: check its Vulkan driver, or unset SAGE_GPU to run on SwiftShader (CPU).';
  }
  const missing: string[] = [];
  const icd = process.env.VK_ICD_FILENAMES ?? SWIFTSHADER_ICD;
  if (!existsSync(icd)) missing.push(`the SwiftShader Vulkan driver (${icd}, from Debian's chromium package)`);
  if (!VULKAN_LOADERS.some((p) => existsSync(p))) missing.push('a Vulkan loader (libvulkan.so.1, from libvulkan1)');
  const what = missing.length
    ? `Node runs WebGPU through Dawn, which on a machine without a GPU needs ${missing.join(' and ')}.`
    : `Node runs WebGPU through Dawn on ${icd}, which offered no adapter; if the Vulkan loader is only Chromium's, run through npm (npm run ...), which sets LD_LIBRARY_PATH.`;
  return `${what} Install: ${INSTALL}`;
}

export interface NodePlatformOptions {
  /** JSON file for the persistent cache (autotune results). */
  cacheFile?: string;
  /** Dawn toggles passed to `create()`, e.g. `enable-dawn-features=...` (default DEFAULT_DAWN_FLAGS). */
  dawnFlags?: string[];
  /** A device of its own rather than the process's shared one (see Platform.shareDevice): a test that loses it on purpose. */
  ownDevice?: boolean;
}

/**
 * Dawn's Vulkan backend withholds `shader-f16` on NVIDIA GPUs unless the adapter toggle
 * `vulkan_enable_f16_on_nvidia` is on (a guard Chrome keeps for f16 conformance failures on
 * some NVIDIA drivers, crbug.com/42251215): with it, inference over an f16 base multiplies in
 * f16 there (Runtime.halfMath; the sums stay f32). The toggle changes nothing on other
 * GPUs or on SwiftShader. Chrome users get it with --enable-dawn-features=vulkan_enable_f16_on_nvidia.
 * `allow_unsafe_apis` lets Dawn offer its experimental features, of which the engine asks for
 * one, `chromium-experimental-subgroup-matrix` (the GPU's matrix units: tensor cores through
 * Vulkan's cooperative matrices), where the driver has it; a device is granted only the
 * features it asks for. Chrome users get it with --enable-unsafe-webgpu.
 */
export const DEFAULT_DAWN_FLAGS: readonly string[] = ['enable-dawn-features=vulkan_enable_f16_on_nvidia,allow_unsafe_apis'];

/**
 * Dawn in Node. With no GPU, Dawn needs the Vulkan loader pointed at SwiftShader
 * (Chromium ships it); the variable must be set before the first `create()`.
 */
export function nodePlatform(options: NodePlatformOptions = {}): Platform {
  // SAGE_CACHE_FILE: another machine's tuning table for a run (a test plants one to make the tuner choose otherwise).
  const cacheFile = options.cacheFile ?? process.env.SAGE_CACHE_FILE ?? join(root, '.cache', 'sage-lab-cache.json');
  const read = (): Record<string, string> => {
    try {
      return existsSync(cacheFile) ? (JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, string>) : {};
    } catch {
      return {};
    }
  };
  const flags = [...(options.dawnFlags ?? DEFAULT_DAWN_FLAGS)];
  return {
    name: 'node (dawn)',
    shareDevice: !options.ownDevice,
    codeSandbox: () => new NodeSandboxPool(),
    gpu: () => dawnInstance(flags),
    unavailableAdvice: nodeUnavailableAdvice,
    shaderSource(name) {
      return readFileSync(join(root, 'shaders', `${name}.wgsl`), 'utf8');
    },
    async loadCache() {
      return read();
    },
    async saveCache(key, value) {
      // Read again and replaced whole: several processes may share the file (runs side by side,
      // a test suite and the runs it starts), and a reader never sees half a file.
      const all = { ...read(), [key]: value };
      mkdirSync(dirname(cacheFile), { recursive: true });
      const partial = `${cacheFile}.${process.pid}.tmp`;
      writeFileSync(partial, JSON.stringify(all, null, 2));
      renameSync(partial, cacheFile);
    },
  };
}

/**
 * Dawn's instance for these toggles, one per process: the platforms of one process share it, and
 * so can share its devices. It stays referenced for the process's life, or the process crashes
 * when it is garbage-collected while a device lives.
 */
const instances = new Map<string, Promise<GPU>>();

function dawnInstance(flags: string[]): Promise<GPU> {
  const key = JSON.stringify(flags);
  let instance = instances.get(key);
  if (!instance) {
    instance = (async () => {
      if (!process.env.VK_ICD_FILENAMES && process.env.SAGE_GPU !== 'hardware' && existsSync(SWIFTSHADER_ICD)) {
        process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
      }
      const dawn = (await import('webgpu')) as unknown as {
        create(flags: string[]): GPU;
        globals: Record<string, unknown>;
      };
      Object.assign(globalThis, dawn.globals);
      return dawn.create(flags);
    })();
    instances.set(key, instance);
  }
  return instance;
}
