/**
 * Lines of a text file read in chunks: a large file is never one string, a huge line is
 * skipped without being held whole, and bytes that are not UTF-8 spoil only their line. A
 * file that is not text at all is refused as a whole, with the reason.
 */

export type LineEvent =
  | { line: number; text: string }
  | { line: number; error: string }
  /** The file is not a text file: nothing of it is read. */
  | { refused: string };

/** Lines longer than this are reported and skipped (their bytes are not kept). */
export const MAX_LINE_BYTES = 64 * 2 ** 20;

/** What the first bytes of a file say when it cannot be text. */
function notText(head: Uint8Array): string | null {
  const starts = (...bytes: number[]) => bytes.every((b, i) => head[i] === b);
  if (starts(0x50, 0x4b, 0x03, 0x04)) return 'a zip archive, not a text file';
  if (starts(0x1f, 0x8b)) return 'a gzip archive, not a text file (decompress it first)';
  if (starts(0x25, 0x50, 0x44, 0x46)) return 'a PDF document, not a text file';
  if (starts(0xff, 0xfe) || starts(0xfe, 0xff)) return 'UTF-16 text; save it as UTF-8';
  if (starts(0x89, 0x50, 0x4e, 0x47) || starts(0xff, 0xd8, 0xff)) return 'an image, not a text file';
  // Text never holds NUL bytes; a few control bytes can be noise, many mean binary.
  let control = 0;
  for (const b of head) {
    if (b === 0) return 'binary data (NUL bytes), not a text file';
    if (b < 0x09 || (b > 0x0d && b < 0x20 && b !== 0x1b)) control++;
  }
  return control > head.length / 10 ? 'binary data, not a text file' : null;
}

/** Bytes looked at to decide whether a file is text. */
const SNIFF_BYTES = 4096;

/** The file's lines in order, numbered from 1, blank lines included as empty text. */
export async function* readLines(chunks: AsyncIterable<Uint8Array>, maxLineBytes = MAX_LINE_BYTES): AsyncGenerator<LineEvent> {
  const source = chunks[Symbol.asyncIterator]();
  const first: Uint8Array[] = [];
  let have = 0;
  while (have < SNIFF_BYTES) {
    const r = await source.next();
    if (r.done) break;
    first.push(r.value);
    have += r.value.length;
  }
  const reason = notText(concat(first, have).subarray(0, SNIFF_BYTES));
  if (reason) {
    yield { refused: reason };
    return;
  }
  const splitter = new LineSplitter(maxLineBytes);
  for (const chunk of first) yield* splitter.push(chunk);
  for (let r = await source.next(); !r.done; r = await source.next()) yield* splitter.push(r.value);
  yield* splitter.end();
}

/** Cuts bytes at newlines, keeping only the current line's bytes (and not even those past the limit). */
class LineSplitter {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private parts: Uint8Array[] = [];
  private size = 0;
  private tooLong = false;
  private line = 0;

  constructor(private readonly maxLineBytes: number) {}

  *push(chunk: Uint8Array): Generator<LineEvent> {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      this.append(chunk.subarray(start, nl));
      yield this.finish();
      start = nl + 1;
    }
    this.append(chunk.subarray(start));
  }

  *end(): Generator<LineEvent> {
    if (this.size > 0 || this.tooLong) yield this.finish();
  }

  private append(bytes: Uint8Array): void {
    if (this.tooLong || bytes.length === 0) return;
    if (this.size + bytes.length > this.maxLineBytes) {
      this.tooLong = true;
      this.parts = [];
      this.size = 0;
      return;
    }
    this.parts.push(bytes.slice()); // the chunk's buffer may be reused by the stream
    this.size += bytes.length;
  }

  private finish(): LineEvent {
    const line = ++this.line;
    const bytes = concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    if (this.tooLong) {
      this.tooLong = false;
      return { line, error: `line longer than ${this.maxLineBytes / 2 ** 20} MiB, skipped` };
    }
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length; // CRLF
    try {
      // The decoder drops a byte-order mark at the start of what it decodes (the file's first line).
      return { line, text: this.decoder.decode(bytes.subarray(0, end)) };
    } catch {
      return { line, error: 'not valid UTF-8' };
    }
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A whole text as chunks (for callers that already hold it, and for tests). */
export async function* textChunks(text: string | Uint8Array, chunkBytes = 1 << 16): AsyncGenerator<Uint8Array> {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
  for (let i = 0; i < bytes.length; i += chunkBytes) yield bytes.subarray(i, i + chunkBytes);
}

/** A Blob's (a dropped File's) bytes as chunks, read as the consumer asks for them. */
export async function* blobChunks(blob: Blob): AsyncGenerator<Uint8Array> {
  const reader = blob.stream().getReader();
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) yield r.value;
  } finally {
    reader.releaseLock();
  }
}
