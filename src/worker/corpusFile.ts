/** A corpus picked in the lab's fine-tuning panel: documents trained with the loss on every token. */
import { readCorpus, type DocumentSplit } from '../data/corpus';
import { blobChunks } from '../data/lines';
import type { SftDocument } from '../train/sft';
import type { SftCorpusReport } from './api';

/** Skipped lines listed to the page (all of them counted). */
const REPORTED_ERRORS = 200;

/** The file's documents, and what the page is told of them; a file that is not text, or holds no document, is refused. */
export async function readSftCorpus(name: string, file: Blob, split: DocumentSplit): Promise<{ documents: SftDocument[]; report: SftCorpusReport }> {
  const r = await readCorpus(blobChunks(file), split);
  if (r.refused) throw new Error(`${name} is ${r.refused}`);
  if (!r.documents.length) throw new Error(`${name}: no documents${r.errors.length ? ` (line ${r.errors[0]!.line}: ${r.errors[0]!.reason})` : ''}`);
  return {
    documents: r.documents.map((text) => ({ text })),
    report: {
      name,
      documents: r.documents.length,
      characters: r.documents.reduce((n, d) => n + d.length, 0),
      format: r.format,
      split,
      errors: r.errors.slice(0, REPORTED_ERRORS),
      errorCount: r.errors.length,
    },
  };
}
