import { createStore, entries, set } from 'idb-keyval';
import { BrowserSandboxPool } from '../verify/python/browserPool';
import type { Platform } from './types';

const sources = import.meta.glob('../../shaders/*.wgsl', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

const shaders = new Map<string, string>(
  Object.entries(sources).map(([path, text]) => [path.replace(/^.*\/(.*)\.wgsl$/, '$1'), text]),
);

/** IndexedDB is reachable from pages and workers alike (localStorage is not in workers). */
let store: ReturnType<typeof createStore> | null = null;
const cacheStore = () => (store ??= createStore('sage-lab', 'cache'));

export const browserPlatform: Platform = {
  codeSandbox: () => new BrowserSandboxPool(),
  name: typeof window === 'undefined' ? 'browser worker' : 'browser page',
  async gpu() {
    return typeof navigator !== 'undefined' && navigator.gpu ? navigator.gpu : null;
  },
  unavailableAdvice() {
    return (
      'Use a recent Chrome or Edge (113+) with WebGPU enabled; on Linux start it with ' +
      '--enable-unsafe-webgpu --enable-features=Vulkan, and on a machine without a GPU add ' +
      '--use-webgpu-adapter=swiftshader --enable-unsafe-swiftshader.'
    );
  },
  shaderSource(name) {
    const text = shaders.get(name);
    if (text === undefined) throw new Error(`unknown shader "${name}" (looked in shaders/*.wgsl)`);
    return text;
  },
  async loadCache() {
    if (typeof indexedDB === 'undefined') return {};
    const all = await entries<string, string>(cacheStore());
    return Object.fromEntries(all.filter(([k, v]) => typeof k === 'string' && typeof v === 'string'));
  },
  async saveCache(key, value) {
    if (typeof indexedDB !== 'undefined') await set(key, value, cacheStore());
  },
};
