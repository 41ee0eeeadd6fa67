import type { Platform } from './types';

const sources = import.meta.glob('../../shaders/*.wgsl', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

const shaders = new Map<string, string>(
  Object.entries(sources).map(([path, text]) => [path.replace(/^.*\/(.*)\.wgsl$/, '$1'), text]),
);

/** localStorage exists in pages but not in workers; fall back to memory there. */
const memory = new Map<string, string>();
const storage: Pick<Storage, 'getItem' | 'setItem'> | null =
  typeof localStorage === 'undefined' ? null : localStorage;

export const browserPlatform: Platform = {
  name: typeof window === 'undefined' ? 'browser worker' : 'browser page',
  async gpu() {
    return typeof navigator !== 'undefined' && navigator.gpu ? navigator.gpu : null;
  },
  shaderSource(name) {
    const text = shaders.get(name);
    if (text === undefined) throw new Error(`unknown shader "${name}" (looked in shaders/*.wgsl)`);
    return text;
  },
  cacheGet(key) {
    return storage ? storage.getItem(key) : (memory.get(key) ?? null);
  },
  cacheSet(key, value) {
    if (storage) storage.setItem(key, value);
    else memory.set(key, value);
  },
};
