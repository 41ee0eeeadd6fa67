import { describe, expect, it } from 'vitest';
import { textChunks } from './lines';
import { fileChunks } from './nodeFile';
import { readSftPairs } from './sftPairs';

describe('seed JSONL to SFT pairs', () => {
  it('reads every shipped seed format', async () => {
    for (const [file, lines] of [['gsm8k-148', 148], ['math-156', 156], ['humaneval-87', 87], ['mbppplus-109', 109], ['curriculum-500', 500]] as const) {
      const { pairs, errors } = await readSftPairs(fileChunks(`data/seeds/${file}.jsonl`));
      expect(errors).toEqual([]);
      expect(pairs.length).toBe(lines);
      expect(pairs.every((p) => p.prompt.length > 0 && p.response.length > 0)).toBe(true);
    }
  });

  it('reports bad lines with their number and reason and keeps the good ones', async () => {
    const text = [
      '{"question": "1+1?", "answer": 2}',
      '{"question": "broken"',
      '[1, 2]',
      '',
      '{"title": "no fields"}',
      '{"problem": "x", "solution": "  "}',
      '{"prompt": "def f():", "canonical_solution": "    return 1"}',
    ].join('\n');
    const { pairs, errors } = await readSftPairs(textChunks(text, 7));
    expect(pairs).toEqual([
      { prompt: '1+1?', response: '2' },
      { prompt: 'def f():', response: '    return 1' },
    ]);
    expect(errors.map((e) => e.line)).toEqual([2, 3, 5, 6]);
    expect(errors[0]!.reason).toMatch(/not valid JSON/);
    expect(errors[1]!.reason).toMatch(/expected a JSON object, got an array/);
    expect(errors[2]!.reason).toMatch(/no prompt field/);
    expect(errors[3]!.reason).toMatch(/empty "solution"/);
  });

  it('refuses a file that is not text', async () => {
    const r = await readSftPairs(textChunks(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3])));
    expect(r.refused).toMatch(/zip/);
    expect(r.pairs).toEqual([]);
  });
});
