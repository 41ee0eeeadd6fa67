/**
 * Checkpoint folders between the user's disk and the engine: a .zip download, a folder chosen
 * with the File System Access API, or files picked or dropped (a folder's files or one .zip).
 */
import { unzipSync } from 'fflate';
import type { CheckpointFile } from '../worker/api';

/** Files of a checkpoint from what the user picked: the loose files of a folder, or one .zip of them. */
export async function readCheckpointFiles(picked: readonly File[]): Promise<{ name: string; files: CheckpointFile[] }> {
  if (picked.length === 0) throw new Error('no files chosen');
  const zip = picked.find((f) => f.name.toLowerCase().endsWith('.zip'));
  if (zip) {
    if (picked.length > 1) throw new Error('choose either one .zip or the loose files of a checkpoint folder, not both');
    let entries: Record<string, Uint8Array>;
    try {
      entries = unzipSync(new Uint8Array(await zip.arrayBuffer()));
    } catch (e) {
      throw new Error(`${zip.name} is not a readable zip archive (${e instanceof Error ? e.message : String(e)})`);
    }
    // A zip of a folder holds "folder/config.json": paths are kept below that one folder
    // (a run's export nests its checkpoints: last/config.json).
    const paths = Object.keys(entries).filter((path) => !path.endsWith('/'));
    const top = commonFolder(paths);
    return { name: zip.name.replace(/\.zip$/i, ''), files: paths.map((path) => ({ name: path.slice(top.length), bytes: entries[path]! })) };
  }
  const paths = picked.map((f) => f.webkitRelativePath || f.name);
  const top = commonFolder(paths);
  const files = await Promise.all(picked.map(async (f, i) => ({ name: paths[i]!.slice(top.length), bytes: new Uint8Array(await f.arrayBuffer()) })));
  return { name: top.replace(/\/$/, '') || 'imported checkpoint', files };
}

/** The one folder (with its slash) every path lies in, or '' when they do not share one. */
function commonFolder(paths: readonly string[]): string {
  const first = paths[0]?.split('/') ?? [];
  if (first.length < 2) return '';
  const folder = `${first[0]}/`;
  return paths.every((p) => p.startsWith(folder)) ? folder : '';
}

export function downloadBytes(name: string, bytes: Uint8Array, type: string): void {
  const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

interface DirectoryPickerWindow {
  showDirectoryPicker(options: { mode: 'readwrite'; id?: string }): Promise<FileSystemDirectoryHandle>;
}

/** Whether this browser can write a folder directly (File System Access API). */
export function canSaveToFolder(): boolean {
  return typeof (window as unknown as Partial<DirectoryPickerWindow>).showDirectoryPicker === 'function';
}

/** Writes the files into a folder the user picks; resolves false if they cancel. */
export async function saveToFolder(files: readonly CheckpointFile[]): Promise<boolean> {
  let dir: FileSystemDirectoryHandle;
  try {
    dir = await (window as unknown as DirectoryPickerWindow).showDirectoryPicker({ mode: 'readwrite', id: 'sage-checkpoint' });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') return false;
    throw e;
  }
  for (const f of files) {
    // A run's export nests its checkpoints (last/model.safetensors): one folder per level.
    const parts = f.name.split('/');
    let folder = dir;
    for (const part of parts.slice(0, -1)) folder = await folder.getDirectoryHandle(part, { create: true });
    const writable = await (await folder.getFileHandle(parts[parts.length - 1]!, { create: true })).createWritable();
    await writable.write(f.bytes as Uint8Array<ArrayBuffer>);
    await writable.close();
  }
  return true;
}
