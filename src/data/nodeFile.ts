/** Reading seed files from disk in Node: the file streamed in chunks, as the lab streams a dropped file. */
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { importProblems, type ImportReport } from './import';
import type { FieldMapping } from './problem';

export function fileChunks(path: string): AsyncIterable<Uint8Array> {
  return createReadStream(path, { highWaterMark: 1 << 16 });
}

export function readProblemFile(path: string, mapping?: FieldMapping): Promise<ImportReport> {
  return importProblems(fileChunks(path), { source: basename(path), mapping });
}
