/**
 * Where files are written one at a time from their chunks: a folder on disk, a folder the
 * user picked in the browser (`directorySink.ts`), or memory (a .zip download, an autosave).
 */

/** Where a streamed export goes: one file at a time, written from its chunks in order (a chunk is not changed once yielded). */
export interface FileSink {
  file(name: string, chunks: AsyncIterable<Uint8Array>): Promise<void>;
}

/** A sink that keeps the files in memory (a .zip download, an autosave). */
export function memorySink(): FileSink & { files: Map<string, Uint8Array> } {
  const files = new Map<string, Uint8Array>();
  return {
    files,
    async file(name, chunks) {
      const parts: Uint8Array[] = [];
      for await (const c of chunks) parts.push(c);
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      files.set(name, out);
    },
  };
}
