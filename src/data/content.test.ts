import { readdirSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkHeldOut, contentKeys, describeOverlap, findOverlap, normaliseContent, overlapReport, overlapSummary, withoutOverlap } from './content';
import { generateSet } from './curriculum';
import { readProblemFile } from './nodeFile';
import { recordToProblem, type Problem } from './problem';

const problem = (record: Record<string, unknown>, id: string): Problem => {
  const r = recordToProblem(record, 'test', id);
  if ('error' in r) throw new Error(r.error);
  return r.problem;
};
const qa = (question: string, id = question) => problem({ question, answer: '1' }, id);
const shares = (a: Problem, b: Problem) => findOverlap([a], [b]).length > 0;
const curriculum = (question: string, expression: string, id = question) => problem({ question, answer: '0', expression, level: 1 }, id);

describe('content keys', () => {
  it('ignore case, spacing, sentence punctuation, names and numbers in words', () => {
    const same = [
      'Janet’s ducks lay 16 eggs per day. She eats three for breakfast and bakes twenty-five muffins.',
      "janet's ducks lay sixteen eggs per day she eats 3 for breakfast, and bakes 25 muffins!",
      'Maria’s   ducks lay 16 eggs per day. Tom eats Three for breakfast and bakes twenty five muffins.',
    ];
    // Renamed, or re-cased as a whole; not both at once (a lower-case name cannot be told from a word).
    for (const b of same) expect(shares(qa(same[0]!), qa(b)), b).toBe(true);
    expect(normaliseContent(same[0]!)).toBe(normaliseContent(same[2]!));
    expect(normaliseContent(same[0]!, false)).toBe(normaliseContent(same[1]!, false));
    // Numbers, operators, brackets and LaTeX are content.
    const different = ['What is 3+4?', 'What is 3-4?', 'What is 3+5?', 'What is (3+4)*2?', 'What is 3+4*2?', 'Compute $\\Delta x$.', 'Compute $\\delta y$.', 'It costs $2.50.', 'It costs $250.'];
    for (const a of different) for (const b of different) if (a !== b) expect(shares(qa(a), qa(b)), `${a} | ${b}`).toBe(false);
    expect(normaliseContent('Sam paid $1,000 for 2.5 kg.')).toBe(normaliseContent('Ann paid $1000 for 2.5 kg'));
  });

  it('a statement overlaps itself renamed, respaced, recased and punctuated, and not with a number changed', () => {
    const word = fc.stringMatching(/^[a-z]{1,8}$/);
    // A capitalised number word ("One") is a number, content: no name.
    const name = fc.stringMatching(/^[A-Z][a-z]{1,8}$/).filter((n) => normaliseContent(n) === normaliseContent('Sam'));
    const number = fc.integer({ min: 0, max: 99_999 }).map(String);
    const part = fc.oneof(word, name, number, fc.constantFrom('+', '-', '=', '(', ')', '$'));
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 30 }), fc.array(name, { minLength: 30, maxLength: 30 }), (parts, names) => {
        const seed = qa(parts.join(' '), 'seed');
        const renamed = parts.map((p, i) => (/^[A-Z]/.test(p) ? names[i]! : p)).join('  ') + '.';
        const recased = parts.join(' ').replace(/^[a-z]/, (c) => c.toUpperCase()) + '?';
        const n = parts.findIndex((p) => /^\d+$/.test(p));
        const renumbered = parts.map((p, i) => (i === n ? String(Number(p) + 1) : p)).join(' ');
        const overlapping = findOverlap([seed], [qa(renamed, 'renamed'), qa(recased, 'recased'), qa(renumbered, 'renumbered')]).map((o) => o.problem.id);
        expect(overlapping).toEqual(n >= 0 ? ['renamed', 'recased'] : ['renamed', 'recased', 'renumbered']);
      }),
      { numRuns: 300 },
    );
  });

  it('the curriculum is its expression; a statement in a curriculum style has that expression, whatever its format', () => {
    expect(contentKeys(curriculum('Jo adds 4 to 3: 3+4=?', '3+4'))).toEqual(['expression 3+4']);
    expect(contentKeys(curriculum('Sum: 3+4=?', ' 3 + 4 '))).toEqual(['expression 3+4']);
    const asked = qa('Hal adds 4 to 3: 3+4=?');
    expect(contentKeys(asked)).toContain('expression 3+4');
    expect(findOverlap([asked], [curriculum('3+4=?', '3+4', 'v1'), curriculum('4+3=?', '4+3', 'v2')]).map((o) => o.problem.id)).toEqual(['v1']);
  });

  it('code: the statement, and the function where it has a canonical solution', () => {
    const mbpp = (prompt: string, solution: string, id: string) =>
      problem({ task_id: id, prompt, entry_point: 'add', canonical_solution: solution, base_input: [[1, 2]], atol: 0 }, id);
    const seed = mbpp('Write a function that adds two numbers.', 'def add(a, b):\n    return a + b\n', 's1');
    const reworded = mbpp('Return the sum of two integers.', 'def add(a, b):\n  return a + b', 'v1');
    const other = mbpp('Return the sum of two integers, then double it.', 'def add(a, b):\n    return 2 * (a + b)\n', 'v2');
    const restated = mbpp('write a function that adds 2 numbers', 'def add(x, y):\n    return y + x\n', 'v3');
    expect(findOverlap([seed], [reworded, other, restated]).map((o) => [o.problem.id, o.seed.id])).toEqual([
      ['v1', 's1'],
      ['v3', 's1'],
    ]);
  });

  it('findOverlap names each overlapping problem with its seed; checkHeldOut refuses them with the reason', () => {
    const seeds = [qa('Bo has 3 pens and buys two more. How many pens?', 's1'), qa('What is 7 times 8?', 's2')];
    const validation = [qa('Ivy has three pens and buys 2 more: how many pens?', 'v1'), qa('What is 7 times 9?', 'v2'), qa('what is seven times eight', 'v3')];
    const overlap = findOverlap(seeds, validation);
    expect(overlap.map((o) => [o.problem.id, o.seed.id])).toEqual([
      ['v1', 's1'],
      ['v3', 's2'],
    ]);
    expect(withoutOverlap(validation, overlap).map((p) => p.id)).toEqual(['v2']);
    expect(overlapSummary(overlap.length, validation.length)).toBe('2 of 3 validation problems share their content with a seed (a score on them measures recall, not generalisation)');
    expect(describeOverlap(overlap[0]!)).toBe('v1 "Ivy has three pens and buys 2 more: how many pens?" ↔ seed s1');
    expect(overlapReport(overlap, validation.length, 1)).toEqual({ count: 2, validation: 3, examples: [describeOverlap(overlap[0]!)] });
    expect(() => checkHeldOut(seeds, validation)).toThrow(/^2 of 3 validation problems share their content with a seed .*recall.*; first: v1 /);
    expect(() => checkHeldOut(seeds, [validation[1]!])).not.toThrow();
  });

  it('a held-out split the generator draws without the seeds’ expressions never overlaps them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), (seed) => {
        const asProblems = (rs: ReturnType<typeof generateSet>) => rs.map((r) => problem({ ...r }, r.id));
        const seeds = generateSet({ 1: 40, 2: 40 }, seed, { operandCap: { 1: 4 } });
        const validation = generateSet({ 1: 40, 2: 40 }, seed + 1, { exclude: new Set(seeds.map((p) => p.expression)) });
        expect(findOverlap(asProblems(seeds), asProblems(validation))).toEqual([]);
        // Without the exclusion, level 1 would overlap.
        expect(findOverlap(asProblems(seeds), asProblems(generateSet({ 1: 40 }, seed + 1, { operandCap: { 1: 4 } }))).length).toBeGreaterThan(0);
      }),
      { numRuns: 10 },
    );
  });
});

describe('the shipped splits', () => {
  it('no validation problem of any shipped file shares its content with a seed of any shipped file', async () => {
    const read = async (dir: string) => (await Promise.all(readdirSync(dir).filter((f) => f.endsWith('.jsonl')).map((f) => readProblemFile(`${dir}/${f}`)))).flatMap((r) => r.problems);
    const [seeds, validation] = await Promise.all([read('data/seeds'), read('data/validation')]);
    expect(seeds.length).toBeGreaterThan(1000);
    expect(validation.length).toBeGreaterThan(3000);
    expect(findOverlap(seeds, validation).map(describeOverlap)).toEqual([]);
  });
});
