import { describe, expect, it } from 'vitest';
import { readProblemFile } from '../data/nodeFile';
import type { MathProblem } from '../data/problem';
import { extractAnswer, judgeMath, lastBoxed, mathEqual, normaliseAnswer } from './math';

/** A different value of the same shape: the first number's last digit bumped, or "+1" when there is none. */
function perturb(answer: string): string {
  const m = /\d(?!\d)/.exec(answer);
  if (!m) return `${answer}+1`;
  return answer.slice(0, m.index) + String((Number(m[0]) + 1) % 10) + answer.slice(m.index + 1);
}

const MATH_FILES = ['data/seeds/math-156.jsonl', 'data/validation/math500-344.jsonl', 'data/seeds/gsm8k-148.jsonl', 'data/validation/gsm8k-test-1319.jsonl'];

describe('every shipped reference answer', () => {
  it.each(MATH_FILES)('%s: extracted from its solution, equal to itself, unequal to a perturbation', async (file) => {
    const { problems } = await readProblemFile(file);
    expect(problems.length).toBeGreaterThan(100);
    const failures: string[] = [];
    for (const p of problems as (MathProblem & { answer: string })[]) {
      const fromSolution = extractAnswer(p.solution!, { lastNumber: false });
      if (fromSolution === null || !mathEqual(fromSolution, p.answer)) failures.push(`${p.id}: solution gives ${fromSolution}, reference ${p.answer}`);
      if (!mathEqual(p.answer, p.answer)) failures.push(`${p.id}: ${p.answer} unequal to itself`);
      const other = perturb(p.answer);
      if (mathEqual(other, p.answer)) failures.push(`${p.id}: ${other} judged equal to ${p.answer}`);
    }
    expect(failures).toEqual([]);
  });
});

describe('extraction', () => {
  it.each([
    ['<think>2+2</think><answer>4</answer>', '4'],
    ['<answer>so \\boxed{7}</answer>', '7'],
    ['so the area is $\\boxed{\\frac{1}{2}}$.', '\\frac{1}{2}'],
    ['\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}', '\\left( 3, \\frac{\\pi}{2} \\right)'],
    ['\\boxed{a} then \\boxed{{b}}', '{b}'],
    ['\\boxed 5', '5'],
    ['He pays 3*4=12\n#### 12', '12'],
    ['Thus the answer is $18$.', '18'],
    ['The answer is: 1,200 dollars', '1,200 dollars'],
    ['first 3 then 4, finally 5.5 apples', '5.5'],
    ['no number here', null],
  ])('%s -> %s', (text, expected) => expect(extractAnswer(text)).toBe(expected));

  it('the last-number fallback can be turned off', () => {
    expect(extractAnswer('we get 42', { lastNumber: false })).toBeNull();
  });

  it('an unclosed \\boxed gives nothing rather than the rest of the text', () => {
    expect(lastBoxed('\\boxed{1 + {2')).toBeNull();
  });
});

describe('normalisation rules', () => {
  it.each([
    ['1,000', '1000'],
    ['\\$18.90', '18.9'],
    ['18 dollars', '18'],
    ['864 \\mbox{ inches}^2', '864'],
    ['50\\%', '50'],
    ['120^\\circ', '120'],
    ['30°', '30'],
    ['\\text{Evelyn}', 'Evelyn'],
    ['5.0', '5'],
    ['x = 5', '5'],
    ['.35', '0.35'],
    ['\\dfrac{3}{4}', '((3)/(4))'],
    ['\\frac43', '((4)/(3))'],
    ['\\sqrt2', 'sqrt(2)'],
    ['2 1/2', '(2+1/2)'],
  ])('%s -> %s', (raw, normal) => expect(normaliseAnswer(raw)).toBe(normal));

  it.each([
    ['\\frac{1}{2}', '0.5'],
    ['\\tfrac12', '1/2'],
    ['2\\sqrt{2}', '\\sqrt{8}'],
    ['\\sqrt[3]{27}', '3'],
    ['\\left( \\frac{3}{2}, -13 \\right)', '(1.5,-13)'],
    ['(-\\infty, 0]', '(-\\infty,0]'],
    ['(0,9) \\cup (9,36)', '(0, 9)\\cup(9, 36)'],
    ['1 \\pm \\sqrt{19}', '1-\\sqrt{19}, 1+\\sqrt{19}'],
    ['1,-2', '-2, 1'],
    ['2\\frac{1}{2}', '2.5'],
    ['137 \\frac{1}{2}', '275/2'],
    ['\\$32,\\!348', '32348'],
    ['11,\\! 111,\\! 111,\\! 100', '11111111100'],
    ['6 - 5i', '-5i+6'],
    ['x^2+2x+1', '(x+1)^2'],
    ['(a+5)(b+2)', '(b+2)(a+5)'],
    ['y = 2x + 3', 'y=3+2x'],
    ['\\begin{pmatrix} -1/3 \\\\ 2/3 \\end{pmatrix}', '\\begin{pmatrix} -\\frac{1}{3} \\\\ \\frac23 \\end{pmatrix}'],
    ['\\text{(C)}', '(C)'],
    ['0.333333333', '\\frac{1}{3}'],
    ['\\frac{270}7\\text{ degrees}', '\\frac{270}{7}'],
  ])('%s equals %s', (a, b) => {
    expect(mathEqual(a, b)).toBe(true);
    expect(mathEqual(b, a)).toBe(true);
  });

  it.each([
    ['\\frac{1}{2}', '0.51'],
    ['2\\sqrt{2}', '\\sqrt{6}'],
    ['(1,2)', '[1,2]'],
    ['(1,2)', '(2,1)'],
    ['x^2', 'x^3'],
    ['40_9', '40_8'],
    ['11111111100', '11111111101'],
    ['1+2i', '1-2i'],
    ['\\text{east}', '\\text{west}'],
  ])('%s differs from %s', (a, b) => expect(mathEqual(a, b)).toBe(false));

  it('judges a response against a reference', () => {
    expect(judgeMath('so <answer>\\frac{6}{4}</answer>', '1.5')).toEqual({ correct: true, extracted: '\\frac{6}{4}' });
    expect(judgeMath('I do not know', '3')).toEqual({ correct: false, extracted: null });
  });
});

describe('hostile input', () => {
  // Bounded by construction: the assertions check results after a fixed amount of work.
  it('a 100 kB expression and deeply nested braces end with an answer, not a hang or a throw', () => {
    const long = '1+'.repeat(40_000) + '1'; // 80 kB
    expect(mathEqual(long, '40001')).toBe(false); // longer than any answer: compared as text
    expect(extractAnswer(`\\boxed{${long}}`)).toHaveLength(long.length);
    const nested = '{'.repeat(20_000) + '1' + '}'.repeat(20_000);
    expect(extractAnswer(`\\boxed${nested}`)).toBe(nested.slice(1, -1));
    expect(mathEqual('('.repeat(200) + '1' + ')'.repeat(200), '1')).toBe(true);
    expect(mathEqual('\\frac{'.repeat(150) + '1' + '}{2}'.repeat(150), '0')).toBe(false);
    expect(mathEqual('9^9^9^9^9', '1')).toBe(false);
  });

  it('never runs code: mathjs functions outside arithmetic are refused', () => {
    for (const evil of ['import({}, {})', 'createUnit("foo")', 'f(x) = x', 'evaluate("1")', 'x.constructor', 'a := 1', 'cos.constructor("return 1")()']) {
      expect(mathEqual(evil, '1')).toBe(false);
      expect(mathEqual(`${evil}+1`, `1+${evil}`)).toBe(false);
    }
  });
});
