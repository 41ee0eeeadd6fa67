/**
 * A loop run's autosave in the origin private file system (OPFS): the run's export, written
 * at every validation and on pause, so a reload, a closed tab or a lost device loses at most
 * the step in flight. Two slots take turns and a small pointer file names the complete one,
 * written last: a save cut off half-way leaves the previous one whole.
 */
export interface AutosaveInfo {
  /** Loop steps the saved run had completed. */
  step: number;
  method: string;
  /** Date.now() when it was written. */
  savedAt: number;
  bytes: number;
}

export interface RunAutosave {
  save(files: ReadonlyMap<string, Uint8Array>, info: Omit<AutosaveInfo, 'savedAt' | 'bytes'>): Promise<AutosaveInfo>;
  /** The last complete save, or null. */
  info(): Promise<AutosaveInfo | null>;
  /** Its files; `only` reads just those (the records, without the checkpoints). */
  load(only?: readonly string[]): Promise<Map<string, Uint8Array> | null>;
  clear(): Promise<void>;
}

const ROOT = 'sage-autosave';
const POINTER = 'current.json';
const SLOTS = ['a', 'b'] as const;

interface Pointer extends AutosaveInfo {
  slot: (typeof SLOTS)[number];
  files: string[];
}

async function writeFile(dir: FileSystemDirectoryHandle, path: string, bytes: Uint8Array): Promise<void> {
  const parts = path.split('/');
  let folder = dir;
  for (const part of parts.slice(0, -1)) folder = await folder.getDirectoryHandle(part, { create: true });
  const writable = await (await folder.getFileHandle(parts[parts.length - 1]!, { create: true })).createWritable();
  try {
    await writable.write(bytes as Uint8Array<ArrayBuffer>);
    await writable.close();
  } catch (e) {
    await writable.abort().catch(() => undefined);
    throw e;
  }
}

async function readFile(dir: FileSystemDirectoryHandle, path: string): Promise<Uint8Array> {
  const parts = path.split('/');
  let folder = dir;
  for (const part of parts.slice(0, -1)) folder = await folder.getDirectoryHandle(part);
  return new Uint8Array(await (await (await folder.getFileHandle(parts[parts.length - 1]!)).getFile()).arrayBuffer());
}

/** What a failed write means to the user: a full quota is named as such, with the numbers. */
async function describeWriteError(e: unknown, bytes: number): Promise<Error> {
  const full = e instanceof DOMException && e.name === 'QuotaExceededError';
  if (!full) return e instanceof Error ? e : new Error(String(e));
  const est = await navigator.storage.estimate().catch(() => ({ usage: undefined, quota: undefined }));
  const mib = (n: number | undefined) => (n === undefined ? '?' : `${(n / 2 ** 20).toFixed(1)} MiB`);
  return new Error(`the browser's storage quota is full: the autosave needs ${mib(bytes)}, ${mib(est.usage)} of ${mib(est.quota)} are used`);
}

/** The OPFS autosave, or null where this context has no OPFS (Node). */
export function opfsAutosave(): RunAutosave | null {
  const storage = (globalThis as { navigator?: Navigator }).navigator?.storage;
  if (typeof storage?.getDirectory !== 'function') return null;
  const root = async () => (await storage.getDirectory()).getDirectoryHandle(ROOT, { create: true });
  const pointer = async (dir: FileSystemDirectoryHandle): Promise<Pointer | null> => {
    try {
      return JSON.parse(new TextDecoder().decode(await readFile(dir, POINTER))) as Pointer;
    } catch {
      return null;
    }
  };
  return {
    async save(files, info) {
      const dir = await root();
      const current = await pointer(dir);
      const slot = current?.slot === 'a' ? 'b' : 'a';
      await dir.removeEntry(slot, { recursive: true }).catch(() => undefined);
      const target = await dir.getDirectoryHandle(slot, { create: true });
      const bytes = [...files.values()].reduce((a, b) => a + b.byteLength, 0);
      try {
        for (const [name, data] of files) await writeFile(target, name, data);
      } catch (e) {
        await dir.removeEntry(slot, { recursive: true }).catch(() => undefined);
        throw await describeWriteError(e, bytes);
      }
      const next: Pointer = { ...info, savedAt: Date.now(), bytes, slot, files: [...files.keys()] };
      await writeFile(dir, POINTER, new TextEncoder().encode(JSON.stringify(next)));
      const { slot: _s, files: _f, ...out } = next;
      return out;
    },
    async info() {
      const p = await pointer(await root());
      if (!p) return null;
      const { slot: _s, files: _f, ...out } = p;
      return out;
    },
    async load(only) {
      const dir = await root();
      const p = await pointer(dir);
      if (!p) return null;
      const slot = await dir.getDirectoryHandle(p.slot);
      const out = new Map<string, Uint8Array>();
      for (const name of p.files) if (!only || only.includes(name)) out.set(name, await readFile(slot, name));
      return out;
    },
    async clear() {
      await (await storage.getDirectory()).removeEntry(ROOT, { recursive: true }).catch(() => undefined);
    },
  };
}
