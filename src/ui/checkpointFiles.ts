/**
 * Checkpoint folders between the user's disk and the engine: a .zip download, a folder chosen
 * with the File System Access API, or files picked or dropped (a folder's files or one .zip).
 */
import { directorySink } from '../platform/directorySink';
import type { CheckpointFile, PickedFile } from '../worker/api';


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

/** A folder the user picks to write into; null if they cancel. */
export async function pickFolder(): Promise<FileSystemDirectoryHandle | null> {
  try {
    return await (window as unknown as DirectoryPickerWindow).showDirectoryPicker({ mode: 'readwrite', id: 'sage-checkpoint' });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') return null;
    throw e;
  }
}

/** Writes the files into a folder the user picks; resolves false if they cancel. */
export async function saveToFolder(files: readonly CheckpointFile[]): Promise<boolean> {
  const dir = await pickFolder();
  if (!dir) return false;
  const sink = directorySink(dir);
  // A run's export nests its checkpoints (last/model.safetensors): the sink makes the subfolders.
  for (const f of files) await sink.file(f.name, (async function* () { yield f.bytes; })());
  return true;
}

/** What the user picked, for the engine to read: each file with its path in the chosen folder. */
export const toPicked = (files: readonly File[]): PickedFile[] => files.map((f) => ({ path: f.webkitRelativePath || f.name, blob: f }));
