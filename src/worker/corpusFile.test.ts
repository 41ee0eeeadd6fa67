import { describe, expect, it } from 'vitest';
import { readSftCorpus } from './corpusFile';

describe('a corpus picked in the lab', () => {
  it('holds the documents and tells the page their count, format and skipped lines', async () => {
    const jsonl = new Blob(['{"text": "3+4=7"}\n{"text": "Nine minus two is seven."}\nnot json\n']);
    const read = await readSftCorpus('corpus.jsonl', jsonl, 'lines');
    expect(read.documents).toEqual([{ text: '3+4=7' }, { text: 'Nine minus two is seven.' }]);
    expect(read.report).toMatchObject({ name: 'corpus.jsonl', documents: 2, characters: 29, format: 'jsonl', split: 'lines', errorCount: 1 });
    expect(read.report.errors[0]).toMatchObject({ line: 3 });
    const paragraphs = await readSftCorpus('notes.txt', new Blob(['a\nb\n\nc\n']), 'paragraphs');
    expect(paragraphs.documents).toEqual([{ text: 'a\nb' }, { text: 'c' }]);
    expect(paragraphs.report).toMatchObject({ documents: 2, format: 'text', split: 'paragraphs', errorCount: 0 });
  });

  it('refuses a file that is not text, or holds no document, in one line', async () => {
    await expect(readSftCorpus('x.zip', new Blob([new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0])]), 'lines')).rejects.toThrow('x.zip is a zip archive, not a text file');
    await expect(readSftCorpus('empty.txt', new Blob(['\n \n']), 'lines')).rejects.toThrow(/^empty\.txt: no documents$/);
    await expect(readSftCorpus('bad.jsonl', new Blob(['{"body": 1}\n']), 'lines')).rejects.toThrow(/^bad\.jsonl: no documents \(line 1: no "text" field/);
  });
});
