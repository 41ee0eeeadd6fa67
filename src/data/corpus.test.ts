import { describe, expect, it } from 'vitest';
import { freshSeed } from '../gpu/testUtils';
import { rng } from '../util/random';
import { holdOutDocuments, readCorpus } from './corpus';
import { textChunks } from './lines';

describe('pretraining corpus', () => {
  it('reads one document a line, blank lines skipped, a line\'s own spaces kept', async () => {
    const r = await readCorpus(textChunks('3+4=7\r\n\n  \nTwelve minus five is seven.\n  indented {x}\n', 5));
    expect(r).toEqual({ format: 'text', errors: [], documents: ['3+4=7', 'Twelve minus five is seven.', '  indented {x}'] });
  });

  it('reads JSONL when the first line is a JSON object: each record\'s text, other records reported by line', async () => {
    const text = ['', '{"text": "2*3=6", "id": 1}', 'not json', '{"body": "x"}', '{"text": "  "}', '{"text": "a\\nb"}'].join('\n');
    const r = await readCorpus(textChunks(text, 3));
    expect(r.format).toBe('jsonl');
    expect(r.documents).toEqual(['2*3=6', 'a\nb']);
    expect(r.errors.map((e) => e.line)).toEqual([3, 4, 5]);
    expect(r.errors[1]!.reason).toMatch(/no "text" field/);
    expect(r.errors[2]!.reason).toBe('empty "text"');
  });

  it('cuts paragraphs at blank lines, their lines joined', async () => {
    const r = await readCorpus(textChunks('{"text": "a"}\nline two\n\n\n  \nsecond\r\n\nthird\n', 4), 'paragraphs');
    expect(r.documents).toEqual(['{"text": "a"}\nline two', 'second', 'third']);
    expect(r.format).toBe('text');
  });

  it('refuses a file that is not text, and reports lines that are not UTF-8', async () => {
    expect((await readCorpus(textChunks(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2])))).refused).toMatch(/zip archive/);
    const bad = await readCorpus(textChunks(new Uint8Array([0x61, 0x0a, 0xff, 0xfe, 0x41, 0x0a, 0x62])));
    expect(bad.documents).toEqual(['a', 'b']);
    expect(bad.errors).toEqual([{ line: 2, reason: 'not valid UTF-8' }]);
  });

  it('holds out a fraction of the distinct documents, every copy of one on the same side', () => {
    const seed = freshSeed();
    const random = rng(seed);
    const documents = Array.from({ length: 400 }, () => `${Math.floor(random() * 60)}+${Math.floor(random() * 3)}`);
    const { train, heldOut } = holdOutDocuments(documents, 0.1, seed);
    const distinct = new Set(documents).size;
    expect(new Set(heldOut).size, `seed ${seed}`).toBe(Math.round(0.1 * distinct));
    expect(heldOut.some((d) => train.includes(d))).toBe(false);
    expect(train.length + heldOut.length).toBe(documents.length);
    // The corpus's order on both sides, and the same split from the same seed.
    expect(train).toEqual(documents.filter((d) => !heldOut.includes(d)));
    expect(holdOutDocuments(documents, 0.1, seed)).toEqual({ train, heldOut });
    expect(() => holdOutDocuments(['a', 'b', 'a'], 0.1, seed)).toThrow('holding out 0.1 of 2 distinct documents leaves none held out');
    expect(() => holdOutDocuments(['a', 'b'], 0.9, seed)).toThrow('leaves none to train on');
  });
});
