import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { criticScore, parseOutput, type OutputSpec } from './parse';

const QA: OutputSpec = { tags: [{ name: 'question', required: true }, { name: 'answer', required: true }], textOutside: false };
const ANSWER: OutputSpec = { tags: [{ name: 'answer', required: true }], textOutside: true };

describe('role output parsing', () => {
  it('scores a clean output 1 and extracts the fields', () => {
    const p = parseOutput('<question> What is 2+3? </question>\n<answer>5</answer>', QA);
    expect(p).toEqual({ fields: { question: 'What is 2+3?', answer: '5' }, format: 1, defects: [] });
    expect(parseOutput('Add them: 2+3 = 5.\n<answer>5</answer>', ANSWER).format).toBe(1);
  });

  it('takes format away for each defect, and gives 0 without a required tag', () => {
    expect(parseOutput('<question>q</question>', QA)).toMatchObject({ format: 0, defects: ['no <answer>'] });
    expect(parseOutput('<question>q</question><answer>5', QA)).toMatchObject({ format: 0, defects: ['<answer> never closed'] });
    expect(parseOutput('<question>q</question><answer>5</answer><answer>6</answer>', QA)).toMatchObject({
      fields: { answer: '5' },
      format: 0.75,
      defects: ['<answer> 2 times'],
    });
    expect(parseOutput('hello <question>q</question><answer>5</answer>', QA)).toMatchObject({ format: 0.75, defects: ['text outside the tags'] });
    expect(parseOutput('<question>q</question><answer>5</answer> trailing', QA).format).toBe(0.75);
    expect(parseOutput('<question><question>q</question><answer> </answer>', QA)).toMatchObject({
      format: 0.5,
      defects: ['<question> nested', '<answer> empty'],
    });
    expect(parseOutput('<answer>1</answer><answer>2</answer><answer>3', ANSWER)).toMatchObject({
      fields: { answer: '1' },
      format: 0.5,
    });
  });

  it('never throws and always scores within [0, 1] on junk, nested and unclosed tags', () => {
    const piece = fc.oneof(
      fc.constantFrom('<question>', '</question>', '<answer>', '</answer>', '<', '>', '</', '<plan>', '\n', ' '),
      fc.string({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        for (const spec of [QA, ANSWER]) {
          const p = parseOutput(text, spec);
          expect(p.format).toBeGreaterThanOrEqual(0);
          expect(p.format).toBeLessThanOrEqual(1);
          for (const v of Object.values(p.fields)) expect(text).toContain(v);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('parses megabytes in linear time: a fixed amount of work, no hang', () => {
    const huge = '<answer>'.repeat(200_000) + 'x'.repeat(2_000_000) + '</question>'.repeat(100_000);
    expect(parseOutput(huge, QA).format).toBe(0);
    const many = '<answer>1</answer>'.repeat(100_000);
    expect(parseOutput(many, ANSWER)).toMatchObject({ fields: { answer: '1' }, format: 0.75 });
  });

  it('reads Critic scores from 1 to 10 as (N − 1) / 9, clamped, and nothing else', () => {
    expect(criticScore('10')).toBe(1);
    expect(criticScore(' 1 ')).toBe(0);
    expect(criticScore('7')).toBeCloseTo(6 / 9, 12);
    expect(criticScore('8/10')).toBeCloseTo(7 / 9, 12);
    expect(criticScore('12')).toBe(1);
    expect(criticScore('0')).toBe(0);
    expect(criticScore('-3')).toBe(0);
    for (const bad of [undefined, '', 'seven', '7 because', '1e9', '7.5.1', '9'.repeat(100)]) expect(criticScore(bad)).toBeNull();
    fc.assert(fc.property(fc.string({ maxLength: 80 }), (s) => {
      const v = criticScore(s);
      expect(v === null || (v >= 0 && v <= 1)).toBe(true);
    }));
  });
});
