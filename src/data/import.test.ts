import { describe, expect, it } from 'vitest';
import { importProblems } from './import';
import { readLines, textChunks } from './lines';
import { readProblemFile } from './nodeFile';
import { parseFieldMapping, type CodeProblem, type MathProblem } from './problem';

const load = (text: string | Uint8Array, chunk = 1 << 16, mapping?: string) =>
  importProblems(textChunks(text, chunk), {
    source: 'test.jsonl',
    mapping: mapping ? (parseFieldMapping(mapping) as Exclude<ReturnType<typeof parseFieldMapping>, string>) : undefined,
  });

describe('seed files the repository ships', () => {
  const shipped: [string, Record<string, number>][] = [
    ['seeds/gsm8k-148.jsonl', { gsm8k: 148 }],
    ['seeds/math-156.jsonl', { math: 156 }],
    ['seeds/humaneval-87.jsonl', { humaneval: 87 }],
    ['seeds/mbppplus-109.jsonl', { mbppplus: 109 }],
    ['seeds/sage-500.jsonl', { math: 156, gsm8k: 148, humaneval: 87, mbppplus: 109 }],
    ['seeds/curriculum-500.jsonl', { curriculum: 500 }],
    ['seeds/curriculum-all-levels-1000.jsonl', { curriculum: 1000 }],
    ['validation/gsm8k-test-1319.jsonl', { gsm8k: 1319 }],
    ['validation/math500-344.jsonl', { math: 344 }],
    ['validation/humaneval-77.jsonl', { humaneval: 77 }],
    ['validation/mbppplus-269.jsonl', { mbppplus: 269 }],
    ['validation/curriculum-1000.jsonl', { curriculum: 1000 }],
  ];
  it.each(shipped)('%s imports with its counts per format and no bad line', async (file, counts) => {
    const r = await readProblemFile(`data/${file}`);
    expect(r.refused).toBeUndefined();
    expect(r.errors).toEqual([]);
    expect(r.duplicates).toEqual([]);
    expect(r.counts).toEqual(counts);
  });

  it('reads each format into the fields its checks need', async () => {
    const { problems } = await readProblemFile('data/seeds/sage-500.jsonl');
    const byFormat = (f: string) => problems.find((p) => p.format === f)!;
    const gsm = byFormat('gsm8k') as MathProblem;
    expect(gsm.answer).toMatch(/^-?[\d,.]+$/);
    expect(gsm.solution).toMatch(/####/);
    const math = byFormat('math') as MathProblem;
    expect(math.level).toBeGreaterThanOrEqual(1);
    const he = byFormat('humaneval') as CodeProblem;
    expect(he.tests).toMatchObject({ style: 'check' });
    expect(he.solution).toBeTruthy();
    const plus = byFormat('mbppplus') as CodeProblem;
    expect(plus.tests.style).toBe('io');
    // MBPP+ inputs hold Python's Infinity and NaN: real values, not bad lines.
    const all = await readProblemFile('data/validation/mbppplus-269.jsonl');
    const nonFinite = (v: unknown): boolean => (Array.isArray(v) ? v.some(nonFinite) : typeof v === 'number' && !Number.isFinite(v));
    const raw = all.problems.filter((p) => nonFinite(p.raw.base_input) || nonFinite(p.raw.plus_input));
    expect(raw.length).toBeGreaterThan(0);
  });
});

describe('robust reading', () => {
  const good = '{"question": "What is 2+3?", "answer": "5"}';

  it('tolerates a BOM, CRLF and blank lines, at any chunk boundary', async () => {
    const text = '\uFEFF' + [good, '', '  ', '{"question": "What is 4+4?", "answer": 8}'].join('\r\n') + '\r\n';
    for (const chunk of [1, 2, 3, 7, 64]) {
      const r = await load(text, chunk);
      expect(r.errors).toEqual([]);
      expect(r.problems.map((p) => (p as MathProblem).answer)).toEqual(['5', '8']);
      expect(r.problems[0]!.statement).toBe('What is 2+3?');
    }
  });

  it('names every bad line with a specific reason and loads the good ones', async () => {
    const bytes = (s: string) => new TextEncoder().encode(s);
    const parts = [
      bytes(good + '\n'),
      bytes('not json\n'),
      bytes('[1, 2]\n'),
      bytes('"text"\n'),
      bytes('{"question": 12, "answer": "x"}\n'),
      bytes('{"question": "Q?"}\n'),
      bytes('{"question": "Q2?", "answer": {"a": 1}}\n'),
      bytes('{"question": "Q3?", "answer": [1, 2]}\n'),
      new Uint8Array([0x7b, 0x22, 0x71, 0xff, 0xfe, 0x22, 0x7d, 0x0a]), // invalid UTF-8
      bytes('{"question": "Q4?", "answer": [7]}\n'),
      bytes('{"nothing": "here"}\n'),
      bytes('null\n'),
    ];
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (all.set(p, at), at + p.length), 0);
    const r = await load(all, 5);
    // A question with no answer field is a question alone (for validator-free runs), not a bad line.
    expect(r.problems.map((p) => [p.statement, (p as MathProblem).answer, p.format])).toEqual([
      ['What is 2+3?', '5', 'qa'],
      ['12', 'x', 'qa'],
      ['Q?', undefined, 'question'],
      ['Q4?', '7', 'qa'],
    ]);
    expect('answer' in r.problems[2]!).toBe(false);
    expect(r.errors).toEqual([
      { line: 2, reason: expect.stringMatching(/^not valid JSON/) },
      { line: 3, reason: 'expected a JSON object, got an array' },
      { line: 4, reason: 'expected a JSON object, got a string' },
      { line: 7, reason: '"answer" is an object, expected an answer' },
      { line: 8, reason: '"answer" is a list of 2 values, expected one answer' },
      { line: 9, reason: 'not valid UTF-8' },
      { line: 11, reason: expect.stringMatching(/^no question field/) },
      { line: 12, reason: 'expected a JSON object, got null' },
    ]);
  });

  it('refuses a file that is not text as a whole, with the reason', async () => {
    const zip = new Uint8Array(5000).fill(7);
    zip.set([0x50, 0x4b, 0x03, 0x04]);
    expect((await load(zip)).refused).toMatch(/zip archive/);
    const binary = Uint8Array.from({ length: 5000 }, (_, i) => (i * 37) % 256);
    expect((await load(binary, 100)).refused).toMatch(/binary/);
    expect((await load(new Uint8Array([0xff, 0xfe, 0x7b, 0]))).refused).toMatch(/UTF-16/);
  });

  it('loads a line of megabytes and skips a line past the limit without holding it', async () => {
    const big = JSON.stringify({ question: 'Long one? ' + 'x'.repeat(3 * 2 ** 20), answer: '1' });
    const r = await load([good, big, good.replace('2+3', '3+3')].join('\n'), 1 << 16);
    expect(r.errors).toEqual([]);
    expect(r.problems).toHaveLength(3);

    async function* endless(): AsyncGenerator<Uint8Array> {
      yield new TextEncoder().encode(good + '\n');
      const chunk = new Uint8Array(1 << 16).fill(0x61);
      for (let i = 0; i < 64; i++) yield chunk; // 4 MiB without a newline
      yield new TextEncoder().encode('\n' + good + '\n');
    }
    const events = [];
    for await (const ev of readLines(endless(), 2 ** 20)) events.push(ev);
    expect(events).toEqual([
      { line: 1, text: good },
      { line: 2, error: 'line longer than 1 MiB, skipped' },
      { line: 3, text: good },
    ]);
  });

  it('reports duplicates (same normalised statement) and loads them once', async () => {
    const r = await load([good, '{"question": "  what is 2+3? ", "answer": "5"}', good].join('\n'));
    expect(r.problems).toHaveLength(1);
    expect(r.duplicates).toEqual([
      { line: 2, first: 1 },
      { line: 3, first: 1 },
    ]);
  });
});

describe('format detection', () => {
  it('matches generic field-name variants case-insensitively, puts context first, extracts answers from solutions', async () => {
    const r = await load(
      [
        '{"Question": "How many?", "Final_Answer": 12}',
        '{"PROBLEM": "Area?", "solution": "It is $\\\\boxed{\\\\frac{1}{2}}$."}',
        '{"input": "Sum?", "output": "step one\\n#### 1,200"}',
        '{"prompt": "Count them.", "target": "4", "passage": "There are four cats."}',
        '{"question": "Who?", "context": "Ann met Bo.", "answer": ["Bo"]}',
      ].join('\n'),
    );
    expect(r.errors).toEqual([]);
    expect(r.counts).toEqual({ qa: 4, math: 1 }); // problem + solution with \boxed{} is MATH's layout
    expect(r.problems.map((p) => [p.statement, (p as MathProblem).answer])).toEqual([
      ['How many?', '12'],
      ['Area?', '\\frac{1}{2}'],
      ['Sum?', '1,200'],
      ['There are four cats.\nCount them.', '4'],
      ['Ann met Bo.\nWho?', 'Bo'],
    ]);
    expect(r.problems[1]!.solution).toMatch(/boxed/);
  });

  it('detects MBPP records and counts a mixed file per format', async () => {
    const mbpp = { task_id: 2, text: 'Write a function to add.', code: 'def add(a, b):\n    return a + b', test_list: ['assert add(1, 2) == 3', 'assert add(0, 0) == 0'], test_setup_code: '' };
    const r = await load([JSON.stringify(mbpp), '{"question": "1+1?", "answer": "2"}', '{"id": "c1", "level": 1, "question": "2+2=?", "answer": "4", "expression": "2+2"}'].join('\n'));
    expect(r.counts).toEqual({ mbpp: 1, qa: 1, curriculum: 1 });
    expect((r.problems[0] as CodeProblem).tests).toEqual({ style: 'asserts', entryPoint: 'add', asserts: mbpp.test_list, setup: undefined });
    expect(r.problems[0]!.id).toBe('2');
    expect(r.problems[2]).toMatchObject({ id: 'c1', level: 1, expression: '2+2', answer: '4' });
  });

  it('uses a field mapping instead of detection for layouts nobody foresaw', async () => {
    const text = ['{"q_text": "Twice 4?", "gold": 8, "ref": "r1"}', '{"q_text": "Half of 8?", "work": "so \\\\boxed{4}"}'].join('\n');
    expect((await load(text)).problems).toHaveLength(0);
    const r = await load(text, 1 << 16, 'question=q_text,answer=gold,id=ref');
    expect(r.counts).toEqual({ mapped: 1 });
    expect(r.problems[0]).toMatchObject({ id: 'r1', statement: 'Twice 4?', answer: '8' });
    expect(r.errors).toEqual([{ line: 2, reason: 'no "gold" field' }]);
    const bySolution = await load(text, 1 << 16, 'question=q_text,solution=work');
    expect(bySolution.problems.map((p) => (p as MathProblem).answer)).toEqual(['4']);
    expect(parseFieldMapping('question=a,colour=b')).toMatch(/unknown role "colour"/);
    expect(parseFieldMapping('answer=b')).toMatch(/needs question/);
  });
});
