import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Platform } from './types';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

export interface NodePlatformOptions {
  /** JSON file for the persistent cache (autotune results). */
  cacheFile?: string;
  /** Dawn toggles passed to `create()`, e.g. `enable-dawn-features=...`. */
  dawnFlags?: string[];
}

/**
 * Dawn in Node. With no GPU, Dawn needs the Vulkan loader pointed at SwiftShader
 * (Chromium ships it); the variable must be set before the first `create()`.
 */
export function nodePlatform(options: NodePlatformOptions = {}): Platform {
  const cacheFile = options.cacheFile ?? join(root, '.cache', 'sage-lab-cache.json');
  let cache: Record<string, string> | null = null;
  const load = (): Record<string, string> => {
    if (cache) return cache;
    try {
      cache = existsSync(cacheFile) ? (JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, string>) : {};
    } catch {
      cache = {};
    }
    return cache;
  };
  // Dawn's process-wide instance must stay referenced while any device lives,
  // or the process crashes when it is garbage-collected.
  let instance: GPU | null = null;
  return {
    name: 'node (dawn)',
    async gpu() {
      if (instance) return instance;
      if (!process.env.VK_ICD_FILENAMES && existsSync(SWIFTSHADER_ICD)) {
        process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
      }
      const dawn = (await import('webgpu')) as unknown as {
        create(flags: string[]): GPU;
        globals: Record<string, unknown>;
      };
      Object.assign(globalThis, dawn.globals);
      instance = dawn.create(options.dawnFlags ?? []);
      keepAlive.push(instance);
      return instance;
    },
    shaderSource(name) {
      return readFileSync(join(root, 'shaders', `${name}.wgsl`), 'utf8');
    },
    async loadCache() {
      return { ...load() };
    },
    async saveCache(key, value) {
      const all = load();
      all[key] = value;
      mkdirSync(dirname(cacheFile), { recursive: true });
      writeFileSync(cacheFile, JSON.stringify(all, null, 2));
    },
  };
}

const keepAlive: GPU[] = [];
