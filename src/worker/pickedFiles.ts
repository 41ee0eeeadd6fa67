/**
 * A checkpoint or run export as the user picked it (a folder's files, or one .zip), read and
 * unpacked in the engine worker: a large archive never holds up the page.
 */
import { unzipSync } from 'fflate';
import type { CheckpointFile, PickedFile } from './api';
import { errorText } from '../util/errorText';

const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/** Files of a checkpoint from what the user picked: the loose files of a folder, or one .zip of them. */
export async function readPicked(picked: readonly PickedFile[]): Promise<{ name: string; files: CheckpointFile[] }> {
  if (picked.length === 0) throw new Error('no files chosen');
  const zip = picked.find((f) => f.path.toLowerCase().endsWith('.zip'));
  if (zip) {
    if (picked.length > 1) throw new Error('choose either one .zip or the loose files of a checkpoint folder, not both');
    let entries: Record<string, Uint8Array>;
    try {
      entries = unzipSync(new Uint8Array(await zip.blob.arrayBuffer()));
    } catch (e) {
      throw new Error(`${baseName(zip.path)} is not a readable zip archive (${errorText(e)})`);
    }
    // A zip of a folder holds "folder/config.json": paths are kept below that one folder
    // (a run's export nests its checkpoints: last/config.json).
    const paths = Object.keys(entries).filter((path) => !path.endsWith('/'));
    const top = commonFolder(paths);
    return { name: baseName(zip.path).replace(/\.zip$/i, ''), files: paths.map((path) => ({ name: path.slice(top.length), bytes: entries[path]! })) };
  }
  const paths = picked.map((f) => f.path);
  const top = commonFolder(paths);
  const files = await Promise.all(picked.map(async (f, i) => ({ name: paths[i]!.slice(top.length), bytes: new Uint8Array(await f.blob.arrayBuffer()) })));
  return { name: top.replace(/\/$/, '') || 'imported checkpoint', files };
}

/** The one folder (with its slash) every path lies in, or '' when they do not share one. */
function commonFolder(paths: readonly string[]): string {
  const first = paths[0]?.split('/') ?? [];
  if (first.length < 2) return '';
  const folder = `${first[0]}/`;
  return paths.every((p) => p.startsWith(folder)) ? folder : '';
}
