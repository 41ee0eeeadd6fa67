import { describe, expect, it } from 'vitest';
import type { Problem } from '../data/problem';
import fc from 'fast-check';
import { createValidators, planVerdict, programOf, unverifiedProblem } from './validators';

const v = createValidators();

describe('loop validators', () => {
  it('judge math answers by equivalence, only from a marked answer', async () => {
    const p: Problem = { id: 'p', source: 's', format: 'qa', kind: 'math', statement: 'Half of 1?', answer: '0.5', raw: {} };
    expect(await v.judge(p, 'so <answer>\\frac{1}{2}</answer>')).toBe(1);
    expect(await v.judge(p, '<answer>0.6</answer>')).toBe(0);
    expect(await v.judge(p, 'I think 0.5')).toBe(0);
  });

  it('a curriculum-style problem is usable only when its expression gives the claimed answer', async () => {
    const ok = await v.propose({ question: '7+8=?', answer: '15' }, 'math', 'g1');
    expect(ok).toMatchObject({ problem: { id: 'g1', format: 'curriculum', answer: '15', expression: '7+8', source: 'challenger' } });
    expect(await v.propose({ question: '7+8=?', answer: '16' }, 'math', 'g2')).toEqual({ unusable: 'claims 16, but 7+8 = 15' });
    expect(await v.propose({ question: '3-9=?', answer: '-6' }, 'math', 'g3')).toMatchObject({ unusable: expect.stringContaining('negative') });
  });

  it('a statement out of the curriculum\'s styles that ends in an expression is answered by it', async () => {
    expect(await v.propose({ question: 'Add 5 and 2: 0+3=?', answer: '0' }, 'math', 'g8')).toEqual({ unusable: 'claims 0, but 0+3 = 3' });
    expect(await v.propose({ question: 'Ed adds 4 to 4: 1+2=?', answer: '3' }, 'math', 'g9')).toMatchObject({ problem: { answer: '3', expression: '1+2', format: 'qa' } });
    expect(await v.propose({ question: 'Hm: (2+3)*4 = ?', answer: '20' }, 'math', 'g10')).toMatchObject({ problem: { answer: '20' } });
    expect(await v.propose({ question: 'Odd: 2+=?', answer: '2' }, 'math', 'g11')).toMatchObject({ unusable: expect.stringContaining('2+') });
  });

  it('with verified problems, only a statement read whole enters, answered by the environment', async () => {
    const verified = (question: string, answer?: string) => v.propose({ question, ...(answer === undefined ? {} : { answer }) }, 'math', 'g', 'verified');
    for (const claim of [undefined, '25', '26', 'x']) expect(await verified('7+18=?', claim)).toMatchObject({ problem: { format: 'curriculum', answer: '25', expression: '7+18', level: 2 } });
    expect(await verified('Di adds 4 to 3: 3+4=?', '9')).toMatchObject({ problem: { answer: '7', level: 1 } });
    const refused = { unusable: 'not a statement the environment reads whole (verified problems only)' };
    // Words and expression disagree (claimed and computed answers admit it, read from the trailing expression), or nothing to read.
    expect(await verified('Di adds 2 to 4: 0+4=?', '4')).toEqual(refused);
    expect(await v.propose({ question: 'Di adds 2 to 4: 0+4=?', answer: '4' }, 'math', 'g')).toMatchObject({ problem: { answer: '4' } });
    expect(await verified('Di takes 8 Hos and yset?', '34')).toEqual(refused);
    expect(await v.propose({ question: 'Di takes 8 Hos and yset?', answer: '34' }, 'math', 'g')).toMatchObject({ problem: { answer: '34' } });
    expect(await verified('3-9=?', '-6')).toMatchObject({ unusable: expect.stringContaining('negative') });
  });

  it('with computed answers, a statement the environment reads is answered by it whatever the claim; others as with claimed ones', async () => {
    const computed = (question: string, answer?: string) => v.propose({ question, ...(answer === undefined ? {} : { answer }) }, 'math', 'g', 'computed');
    // The same statement with a right, a wrong, a junk and no claim: one problem, the environment's answer.
    for (const claim of ['25', '26', 'many', undefined]) {
      expect(await computed('7+18=?', claim)).toMatchObject({ problem: { format: 'curriculum', answer: '25', expression: '7+18', level: 2 } });
    }
    expect(await computed('Add 5 and 2: 0+3=?', '0')).toMatchObject({ problem: { format: 'qa', answer: '3', expression: '0+3' } });
    // What the environment cannot evaluate, or does not read, is as with claimed answers.
    expect(await computed('3-9=?', '-6')).toEqual(await v.propose({ question: '3-9=?', answer: '-6' }, 'math', 'g'));
    expect(await computed('How many legs do 3 cats have?', '12')).toMatchObject({ problem: { format: 'qa', answer: '12' } });
    expect(await computed('How many legs do 3 cats have?')).toEqual({ unusable: 'empty answer' });
  });

  it('outside the curriculum an answer must parse; empty or junk output is unusable', async () => {
    expect(await v.propose({ question: 'How many legs do 3 cats have?', answer: '12' }, 'math', 'g4')).toMatchObject({ problem: { format: 'qa', answer: '12' } });
    expect(await v.propose({ question: 'x', answer: '' }, 'math', 'g5')).toEqual({ unusable: 'empty answer' });
    expect(await v.propose({ question: '  ', answer: '1' }, 'math', 'g6')).toEqual({ unusable: 'empty question' });
    expect(await v.propose({ question: 'q', solution: 'def f(): return 1', tests: 'assert f() == 1' }, 'code', 'g7')).toEqual({ unusable: 'this run has no code sandbox to check code problems' });
  });

  it('refuses to judge code without a sandbox rather than guessing', async () => {
    const code: Problem = { id: 'c', source: 's', format: 'mbpp', kind: 'code', statement: 'add', tests: { style: 'asserts', entryPoint: 'add', asserts: ['assert add(1,2)==3'] }, raw: {} };
    await expect(v.judge(code, 'def add(a,b): return a+b')).rejects.toThrow(/no code sandbox/);
    const seen: string[] = [];
    const withRunner = createValidators({
      verify: async (_p, program) => (seen.push(program), { status: 'fail', passed: 1, total: 2, fraction: 0.5, ms: 1 }),
      verifyAsserts: async () => ({ status: 'pass', passed: 1, total: 1, fraction: 1, ms: 1 }),
    });
    expect(await withRunner.judge(code, 'Here:\n<answer>\n```python\ndef add(a, b):\n    return a - b\n```\n</answer>')).toBe(0.5);
    expect(seen).toEqual(['def add(a, b):\n    return a - b']);
  });

  it('reads the program from a response: the answer tag, a fence inside it, or the whole text', () => {
    expect(programOf('<answer>x = 1</answer> junk')).toBe('x = 1');
    expect(programOf('```py\nx = 1\n```')).toBe('x = 1');
    expect(programOf('def f():\n  return 2')).toBe('def f():\n  return 2');
    expect(programOf('<answer>unclosed')).toBe('unclosed');
  });
});

describe('a proposal taken on trust (validator-free methods)', () => {
  it('keeps the claimed answer unchecked, and still needs the form of its kind', () => {
    expect(unverifiedProblem({ question: '2+2=?', answer: '5' }, 'math', 'g1')).toMatchObject({ problem: { kind: 'math', statement: '2+2=?', answer: '5' } });
    expect(unverifiedProblem({ question: ' ', answer: '5' }, 'math', 'g2')).toEqual({ unusable: 'empty question' });
    expect(unverifiedProblem({ question: 'x', answer: '' }, 'math', 'g3')).toEqual({ unusable: 'empty answer' });
    // Code: asserts kept, never run (they may well fail on the solution).
    const code = unverifiedProblem({ question: 'Write f.', solution: 'def f():\n    return 1', tests: 'assert f() == 2\nprint(1)' }, 'code', 'g4');
    expect(code).toMatchObject({ problem: { kind: 'code', tests: { style: 'asserts', entryPoint: 'f', asserts: ['assert f() == 2'] } } });
    expect(unverifiedProblem({ question: 'Write f.', solution: 'x = 1', tests: 'assert x' }, 'code', 'g5')).toEqual({ unusable: 'the solution defines no function' });
    expect(unverifiedProblem({ question: 'Write f.', solution: 'def f(): pass', tests: '' }, 'code', 'g6')).toEqual({ unusable: 'no assert statement in the tests' });
  });
});

describe('what the environment computes of a plan', () => {
  const mathProblem = (answer: string | undefined): Problem => ({ id: 'p', source: 's', format: 'qa', kind: 'math', statement: 'a problem', ...(answer === undefined ? {} : { answer }), raw: {} }) as Problem;

  it('a plan whose last expression evaluates to the answer is right, to anything else wrong (random expressions)', () => {
    const op = fc.constantFrom('+', '-', '*');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99 }), op, fc.integer({ min: 0, max: 99 }), op, fc.integer({ min: 1, max: 9 }), fc.boolean(), (a, o1, b, o2, c, nested) => {
        const expression = nested ? `(${a}${o1}${b})${o2}${c}` : `${a}${o1}${b}`;
        // The value computed independently of the project's parser.
        const f = (x: number, o: string, y: number) => (o === '+' ? x + y : o === '-' ? x - y : x * y);
        const value = nested ? f(f(a, o1, b), o2, c) : f(a, o1, b);
        const plan = `First 7+1, then compute ${expression}.`;
        expect(planVerdict(mathProblem(String(value)), plan)).toBe(true);
        expect(planVerdict(mathProblem(String(value + 1)), plan)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('a lone number counts as the plan\'s value; it cannot tell without an expression, an answer or a math problem', () => {
    expect(planVerdict(mathProblem('7'), 'The answer is 7.')).toBe(true);
    expect(planVerdict(mathProblem('7'), 'Compute 3×2.')).toBe(false);
    expect(planVerdict(mathProblem('6'), 'Compute 3×2.')).toBe(true);
    expect(planVerdict(mathProblem('7'), 'Compute it.')).toBeNull();
    expect(planVerdict(mathProblem('7'), 'Compute 3/0.')).toBeNull();
    expect(planVerdict(mathProblem(undefined), 'Compute 3+4.')).toBeNull();
    const code = { id: 'c', source: 's', format: 'mbpp', kind: 'code', statement: 'f', solution: 'def f(): pass', tests: { style: 'asserts', entryPoint: 'f', asserts: ['assert f() is None'] }, raw: {} } as Problem;
    expect(planVerdict(code, 'Compute 3+4.')).toBeNull();
  });
});
