/**
 * A pretraining corpus: plain-text documents read in chunks (a large file is never one
 * string). One document a line, or a JSONL file of records with a `text` field (detected from
 * its first line), or paragraphs of a text file cut at blank lines. What `npm run pretrain`
 * and the lab's fine-tuning panel train on with the loss on every token.
 */
import { rng, shuffle } from '../util/random';
import { parseJsonLine } from './jsonl';
import { readLines } from './lines';

/** How a text file is cut into documents. */
export const DOCUMENT_SPLITS = ['lines', 'paragraphs'] as const;
export type DocumentSplit = (typeof DOCUMENT_SPLITS)[number];

export interface CorpusReport {
  documents: string[];
  /** How the lines were read: as text, or as JSONL records' `text`. */
  format: 'text' | 'jsonl';
  /** Lines not used, with their numbers and reasons. */
  errors: { line: number; reason: string }[];
  /** Set when the file is not text: nothing was read. */
  refused?: string;
}

/**
 * The documents of a file. `lines`: each non-blank line is a document; when the first
 * non-blank line is a JSON object the file is JSONL and each record's `text` is one (other
 * records are reported). `paragraphs`: runs of non-blank lines, joined by newlines, are the
 * documents (no JSONL detection: a paragraph is text).
 */
export async function readCorpus(chunks: AsyncIterable<Uint8Array>, split: DocumentSplit = 'lines'): Promise<CorpusReport> {
  const out: CorpusReport = { documents: [], format: 'text', errors: [] };
  let decided = split === 'paragraphs';
  let paragraph: string[] = [];
  const close = () => {
    if (paragraph.length) out.documents.push(paragraph.join('\n'));
    paragraph = [];
  };
  for await (const ev of readLines(chunks)) {
    if ('refused' in ev) return { ...out, documents: [], errors: [], refused: ev.refused };
    if ('error' in ev) {
      out.errors.push({ line: ev.line, reason: ev.error });
      continue;
    }
    const blank = !ev.text.trim();
    if (split === 'paragraphs') {
      if (blank) close();
      else paragraph.push(ev.text);
      continue;
    }
    if (blank) continue;
    if (!decided) {
      decided = true;
      if ('value' in parseJsonLine(ev.text.trim())) out.format = 'jsonl';
    }
    if (out.format === 'text') {
      out.documents.push(ev.text);
      continue;
    }
    const record = parseJsonLine(ev.text.trim());
    if ('error' in record) out.errors.push({ line: ev.line, reason: record.error });
    else if (typeof record.value.text !== 'string') out.errors.push({ line: ev.line, reason: 'no "text" field (a JSONL corpus holds one document a record in "text")' });
    else if (!record.value.text.trim()) out.errors.push({ line: ev.line, reason: 'empty "text"' });
    else out.documents.push(record.value.text);
  }
  close();
  return out;
}

/** How a corpus was read, in words. */
export function describeCorpusFormat(format: CorpusReport['format'], split: DocumentSplit): string {
  return format === 'jsonl' ? 'JSONL, each record\'s "text"' : split === 'lines' ? 'text, one a line' : 'text, paragraphs';
}

/**
 * The documents split by content for a held-out loss: `fraction` of the distinct texts, drawn
 * with `seed`, every copy of a drawn text held out, so no held-out document is also trained
 * on. Both sides keep the corpus's order. Throws when either side would be empty.
 */
export function holdOutDocuments(documents: readonly string[], fraction: number, seed: number): { train: string[]; heldOut: string[] } {
  if (!(fraction > 0 && fraction < 1)) throw new Error(`the held-out fraction must be between 0 and 1 (got ${fraction})`);
  const distinct = [...new Set(documents)];
  const count = Math.round(fraction * distinct.length);
  if (count < 1 || count >= distinct.length) {
    throw new Error(`holding out ${fraction} of ${distinct.length} distinct documents leaves ${count < 1 ? 'none held out' : 'none to train on'}`);
  }
  const held = new Set(shuffle(distinct, rng(seed)).slice(0, count));
  return { train: documents.filter((d) => !held.has(d)), heldOut: documents.filter((d) => held.has(d)) };
}
