import type { FileSink } from './fileSink';

/**
 * A sink that writes into a folder of the File System Access API (one the user picked, or the
 * origin-private file system), in pages and workers alike: subfolders created as names need
 * them, each file through one writable stream that the browser commits when it closes (an
 * aborted file leaves the old one in place).
 */
export function directorySink(dir: FileSystemDirectoryHandle): FileSink & { written: string[] } {
  const written: string[] = [];
  return {
    written,
    async file(name, chunks) {
      const parts = name.split('/');
      let folder = dir;
      for (const part of parts.slice(0, -1)) folder = await folder.getDirectoryHandle(part, { create: true });
      const writable = await (await folder.getFileHandle(parts[parts.length - 1]!, { create: true })).createWritable();
      try {
        for await (const c of chunks) await writable.write(c as Uint8Array<ArrayBuffer>);
      } catch (e) {
        await writable.abort();
        throw e;
      }
      await writable.close();
      written.push(name);
    },
  };
}
