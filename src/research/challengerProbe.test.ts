import { describe, expect, it } from 'vitest';
import { generateProblem, LEVELS, readStatement, type Level } from '../data/curriculum';
import { rng } from '../util/random';
import { expressionKey, probePrompts, probeTable, readProposal, tallyProposals, verdictClass } from './challengerProbe';
import { COMPACT_TEMPLATES } from '../sage/templates';
import { createValidators } from '../sage/validators';
import { math } from '../sage/testUtils';

describe('Challenger probe', () => {
  it('reads each proposal as the environment does and tallies parse rate, levels, right answers and novel expressions', () => {
    const random = rng(Math.floor(Math.random() * 2 ** 31));
    // Proposals of every kind drawn at random, each with what the tally must say of it.
    type Drawn = { text: string; parsed: boolean; unusable?: boolean; evaluated?: { key: string; right: boolean; expression: string; known: boolean } };
    const drawn: Drawn[] = Array.from({ length: 300 }, (): Drawn => {
      const kind = random();
      if (kind < 0.15) return { text: random() < 0.5 ? 'Harder math: 3+4=?' : '<question>5+5=?</question>', parsed: false };
      if (kind < 0.25) return { text: '<question>Write a story about apples.</question><answer>7</answer>', parsed: true };
      // An expression the environment reads but that is negative: unusable.
      if (kind < 0.3) return { text: '<question>2-9=?</question><answer>7</answer>', parsed: true, unusable: true };
      const level = LEVELS[Math.floor(random() * LEVELS.length)]! as Level;
      const p = generateProblem(level, random);
      const right = random() < 0.5;
      // A bare expression in no curriculum style: level "other".
      const other = random() < 0.1;
      const question = other ? `Compute ${p.expression} =?` : p.question;
      const claimed = right ? p.answer : String(Number(p.answer) + 1 + Math.floor(random() * 5));
      // A bare `a+b=?` of level 2 whose numbers level 1's ranges hold reads as level 1, as the environment reads it.
      const read = readStatement(question)?.level;
      if (!other) expect(read === level || /^[\d+\-*/() ]+=\?$/.test(question), question).toBe(true);
      return { text: `<question>${question}</question><answer>${claimed}</answer>`, parsed: true, evaluated: { key: other ? 'other' : String(read), right, expression: p.expression, known: random() < 0.4 } };
    });
    const seeds = new Set(drawn.flatMap((d) => (d.evaluated?.known ? [expressionKey(d.evaluated.expression)] : [])));
    const evaluated = drawn.flatMap((d) => (d.evaluated ? [{ ...d.evaluated, novel: !seeds.has(expressionKey(d.evaluated.expression)) }] : []));
    const perLevel: Record<string, { proposals: number; right: number; novel: number }> = {};
    const perOperations: Record<string, number> = {};
    for (const e of evaluated) {
      const ops = String(e.expression.replace(/[^-+*/]/g, '').length);
      perOperations[ops] = (perOperations[ops] ?? 0) + 1;
      const l = (perLevel[e.key] ??= { proposals: 0, right: 0, novel: 0 });
      l.proposals++;
      l.right += Number(e.right);
      l.novel += Number(e.novel);
    }
    const want = {
      proposals: drawn.length,
      parsed: drawn.filter((d) => d.parsed).length,
      evaluated: evaluated.length,
      unusable: drawn.filter((d) => d.unusable).length,
      right: evaluated.filter((e) => e.right).length,
      novel: evaluated.filter((e) => e.novel).length,
      perLevel,
      perOperations,
    };
    const tally = tallyProposals(drawn.map((d) => readProposal(d.text, seeds)));
    expect(tally).toEqual(want);
    expect(want.novel).toBeGreaterThan(0);
    expect(want.novel).toBeLessThan(want.evaluated);
    const table = probeTable(tally).split('\n');
    const pct = (k: number) => `${((100 * k) / want.proposals).toFixed(1)}%`;
    expect(table[0]).toBe(`proposals ${want.proposals} · parsed ${want.parsed} (${pct(want.parsed)}) · an expression that evaluates ${want.evaluated} (${pct(want.evaluated)}) · read but unusable ${want.unusable}`);
    const order = (k: string) => (k === 'other' ? Infinity : Number(k));
    expect(table.slice(3, -1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual(
      Object.keys(perLevel).sort((a, b) => order(a) - order(b)).map((k) => [k === 'other' ? 'other' : `L${k}`, String(perLevel[k]!.proposals)]),
    );
  });

  it('reads one proposal whole: its expression, level, value and verdict', () => {
    const r = readProposal('<question>Hal adds 4 to 3: 3+4=?</question><answer>7</answer>', new Set(['3+4']));
    expect(r).toMatchObject({ parsed: true, question: 'Hal adds 4 to 3: 3+4=?', claimed: '7', expression: '3+4', level: 1, value: '7', right: true, novel: false });
    expect(readProposal('<question>(2+3)*4=?</question><answer>21</answer>', new Set())).toMatchObject({ expression: '(2+3)*4', level: 4, value: '20', right: false, novel: true, operations: 2 });
    expect(readProposal('<question>2-9=?</question><answer>-7</answer>', new Set())).toMatchObject({ parsed: true, value: null, error: '2-9 is negative' });
    expect(readProposal('3+4=? 7', new Set())).toMatchObject({ parsed: false, question: null, value: null });
  });

  it('draws each prompt\'s references from the seeds, as many as asked, in the Challenger\'s template', () => {
    const seeds = Array.from({ length: 20 }, (_, i) => math(`s${i}`, `${i}+1=?`, String(i + 1)));
    const prompts = probePrompts(seeds, 50, { templates: COMPACT_TEMPLATES, references: 3 }, rng(Math.floor(Math.random() * 2 ** 31)));
    expect(prompts).toHaveLength(50);
    for (const p of prompts) {
      expect(p.endsWith('\nHarder math:\n')).toBe(true);
      const refs = p.slice(0, -'\nHarder math:\n'.length).split('\n');
      expect(new Set(refs).size).toBe(3);
      for (const r of refs) expect(seeds.map((s) => `${s.statement} ${s.answer}`)).toContain(r);
    }
    expect(new Set(prompts).size).toBeGreaterThan(40);
    expect(() => probePrompts([], 1, { templates: COMPACT_TEMPLATES, references: 3 }, rng(1))).toThrow(/no math problem/);
  });

  it("classes the loop's verdicts as the validators word them: a wrong claim whatever its numbers, an answer that does not parse whatever its text", async () => {
    const v = createValidators();
    const random = rng(Math.floor(Math.random() * 2 ** 31));
    const a = 2 + Math.floor(random() * 50);
    const b = 2 + Math.floor(random() * 50);
    const verdictOf = async (question: string, answer: string, answers?: 'claimed' | 'verified') => {
      const r = await v.propose({ question, answer }, 'math', 'gen/0/0', answers);
      return 'problem' in r ? 'admitted' : `rejected: ${r.unusable}`;
    };
    expect(verdictClass(await verdictOf(`${a}+${b}=?`, String(a + b + 1)))).toBe('refused: wrong claim');
    expect(verdictClass(await verdictOf(`${a}*(${b}+1)=?`, String(a)))).toBe('refused: wrong claim');
    expect(verdictClass(await verdictOf('How many toys?', '\\boxed{}'))).toBe('refused: answer does not parse');
    expect(verdictClass(await verdictOf('How many toys?', String(a), 'verified'))).toBe('refused: not a statement the environment reads whole');
    expect(verdictClass(await verdictOf(`${a}-${a + b}=?`, '0'))).toBe('refused: does not evaluate');
    expect(verdictClass(await verdictOf(`${a}*(1+0)-${a + 1}*${b}=?`, '0'))).toBe('refused: does not evaluate');
    expect(verdictClass(await verdictOf(`9*(${2 * a + 1}/${4 * a})+14=?`, '0'))).toBe('refused: does not evaluate');
    expect(verdictClass(await verdictOf(`${a}+${b}=?`, String(a + b)))).toBe('admitted');
    for (const reason of ['quality', 'duplicate', 'unparsable']) expect(verdictClass(`rejected: ${reason}`)).toBe(`refused: ${reason}`);
    expect(verdictClass(undefined)).toBe('no verdict');
  });
});
