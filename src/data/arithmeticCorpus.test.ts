import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { freshSeed } from '../gpu/testUtils';
import { COMPACT_TEMPLATES, INSTRUCT_TEMPLATES } from '../sage/templates';
import { evaluateExpression } from '../verify/arithmetic';
import { corpusCli } from '../cli/corpus';
import { expectEveryOptionChecked, runCliProcess } from '../cli/testUtils';
import {
  canonicalExpression,
  canonicalExpressions,
  corpusDocuments,
  generateCorpus,
  MAX_DOCUMENT_BYTES,
  parseArithmetic,
  reductions,
  show,
  statesHeldOut,
  subExpressions,
  valueOf,
  type CorpusDocument,
  type Expr,
} from './arithmeticCorpus';
import { readStatement, SHIPPED_SPLITS } from './curriculum';
import { readProblemFile } from './nodeFile';

/** The held-out split's content (content.ts expressionOf), in canonical form. */
let heldOut: Set<string>;
/** Its problems' statements, for the control that the scan finds a held-out one. */
let heldOutStatements: string[];

beforeAll(async () => {
  const { problems } = await readProblemFile(SHIPPED_SPLITS.validation.file);
  heldOut = canonicalExpressions(problems);
  heldOutStatements = problems.map((p) => p.statement);
});

/** Every arithmetic run in a text (`(3+4)*5`, `35`), as written. */
function arithmeticRuns(text: string): string[] {
  return [...text.matchAll(/[(\d][\d()+\-*/]*/g)].map((m) => m[0].replace(/[^\d)]+$/, ''));
}

/** Every span of a text between sentence or clause marks, for reading back curriculum styles. */
function spans(text: string): string[] {
  const cuts = spanCuts(text);
  const out: string[] = [];
  for (let i = 0; i < cuts.length; i++) for (let j = i + 1; j < cuts.length; j++) out.push(text.slice(cuts[i], cuts[j]));
  return out;
}

/** The spans that end where `text` ends, by position: a span that ends earlier with the same text (the `3+18=?` of a `5-3+18=?` after it) is not one. */
function endingSpans(text: string): string[] {
  return spanCuts(text).slice(0, -1).map((c) => text.slice(c));
}

/** Where spans start and end: the text's ends and after each punctuation mark. */
function spanCuts(text: string): number[] {
  return [0, ...[...text.matchAll(/[.?!:,;]/g)].map((m) => m.index + 1), text.length];
}

/**
 * What a document states that is held out, found from its text alone: a part of an arithmetic
 * run (any operation of its parse), or a span that reads back in a curriculum style.
 */
function heldOutIn(text: string): string[] {
  const found: string[] = [];
  for (const run of arithmeticRuns(text)) {
    for (const s of subExpressions(parseArithmetic(run))) if (heldOut.has(show(s))) found.push(`${show(s)} in "${run}"`);
  }
  for (const span of spans(text)) {
    const read = readStatement(span);
    if (read && heldOut.has(canonicalExpression(read.expression))) found.push(`"${span.trim()}" reads back as ${read.expression}`);
  }
  return found;
}

/** Literal text of the roles' templates (the parts around the placeholders, line by line), which no document may contain. */
const TEMPLATE_TEXT = [...new Set(
  [COMPACT_TEMPLATES, INSTRUCT_TEMPLATES].flatMap((set) =>
    Object.values(set).flatMap((t) => t.split(/\{\{\w+\}\}/).flatMap((part) => part.split('\n').map((s) => s.trim()).filter((s) => s.length >= 4))),
  ),
)];

function randomExpr(): fc.Arbitrary<Expr> {
  const { tree } = fc.letrec<{ tree: Expr }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.integer({ min: 0, max: 120 }).map((n) => ({ n })),
      fc.record({ op: fc.constantFrom('+', '-', '*', '/' as const), l: tie('tree'), r: tie('tree') }) as fc.Arbitrary<Expr>,
    ),
  }));
  return tree;
}

describe('arithmetic expressions of the corpus', () => {
  it('parse, print in one form and keep their value: any grouping, redundant parentheses aside', () => {
    expect(show(parseArithmetic('(3*4)+2'))).toBe('3*4+2');
    expect(show(parseArithmetic('((3+4))*5 - 2'))).toBe('(3+4)*5-2');
    expect(show(parseArithmetic('8-(3-2)'))).toBe('8-(3-2)');
    expect(show(parseArithmetic('(8-3)-2'))).toBe('8-3-2');
    expect(() => parseArithmetic('3+')).toThrow(/not arithmetic/);
    expect(() => parseArithmetic('-3+4')).toThrow(/not arithmetic/);
    fc.assert(
      fc.property(randomExpr(), (e) => {
        const text = show(e);
        expect(show(parseArithmetic(text))).toBe(text);
        const r = evaluateExpression(text);
        const v = valueOf(e);
        if (v !== null) expect(r).toEqual({ value: v });
      }),
      { numRuns: 300 },
    );
  });

  it('lists every operation as a part, and evaluates one operation at a time', () => {
    expect(subExpressions(parseArithmetic('(3+4)*5-2')).map(show)).toEqual(['(3+4)*5-2', '(3+4)*5', '3+4']);
    expect(subExpressions(parseArithmetic('20-7+8')).map(show)).toEqual(['20-7+8', '20-7']);
    const steps = reductions(parseArithmetic('9*2-3*4'));
    expect(steps.map((s) => `${show(s.op)} = ${s.value} → ${show(s.after)}`)).toEqual(['9*2 = 18 → 18-3*4', '3*4 = 12 → 18-12', '18-12 = 6 → 6']);
    expect(statesHeldOut(['20-7+8'], new Set(['7+8']))).toBe(false);
    expect(statesHeldOut(['(7+8)*5'], new Set(['7+8']))).toBe(true);
  });
});

describe('the arithmetic pretraining corpus', () => {
  const seed = freshSeed();
  let docs: CorpusDocument[];
  beforeAll(() => {
    docs = generateCorpus(seed, 150_000, heldOut);
  });

  it(`states no held-out expression, whole or as a part, in digits or in words (seed ${seed})`, () => {
    // The scan finds what it looks for: a held-out expression inside a larger one, and a held-out statement.
    const some = [...heldOut].find((e) => e.includes('+'))!;
    expect(heldOutIn(`(${some})*3 = 1.`).length).toBeGreaterThan(0);
    expect(heldOutIn(`Bo counts. ${heldOutStatements[450]!} The answer is 3.`).length).toBeGreaterThan(0);
    const contaminated = docs.flatMap((d) => [...heldOutIn(d.text), ...(statesHeldOut(d.expressions, heldOut) ? [`recorded: ${d.text}`] : [])]);
    expect(contaminated).toEqual([]);
  });

  it('is in none of the roles\' templates', () => {
    expect(TEMPLATE_TEXT).toEqual(expect.arrayContaining(['Solve:', 'Plan:', 'Harder', 'Rate problem:', 'Answer:', 'Examples:']));
    const hits = docs.flatMap((d) => TEMPLATE_TEXT.filter((t) => d.text.includes(t)).map((t) => `${t} in ${d.text}`));
    expect(hits).toEqual([]);
    expect(docs.filter((d) => d.text.includes('<'))).toEqual([]);
  });

  it('holds one-line ASCII documents that fit the context, every value right, every level and form', () => {
    const levels = new Set<number>();
    let worked = 0;
    let long = 0;
    let prose = 0;
    for (const { text } of docs) {
      expect(text.length).toBeLessThanOrEqual(MAX_DOCUMENT_BYTES);
      expect(text).toMatch(/^[\x20-\x7e]+$/);
      // Every `X = Y` (and each link of a chain `X = Y = Z`) is true.
      for (const m of text.matchAll(/(?=(?:^|[ :,])([(\d][\d()+\-*/]*) = ([(\d][\d()+\-*/]*))/g)) {
        const [left, right] = [evaluateExpression(m[1]!), evaluateExpression(m[2]!)];
        expect(left, `${m[1]} = ${m[2]} in ${text}`).toEqual(right);
      }
      // Every `… ? The answer is N.` answers the question before it (a curriculum style, of one sentence or two).
      for (const m of text.matchAll(/ The answer is (\d+)\./g)) {
        const before = text.slice(0, m.index);
        const reads = endingSpans(before).map((s) => readStatement(s)).filter((r) => r !== null);
        expect(reads.length, before).toBeGreaterThan(0);
        for (const r of reads) expect(evaluateExpression(r.expression), before).toEqual({ value: Number(m[1]) });
      }
      for (const span of spans(text)) {
        const read = readStatement(span);
        if (read) levels.add(read.level);
      }
      if (/: [^=]+ = \d+, /.test(text)) worked++;
      if (arithmeticRuns(text).some((r) => (r.match(/[+\-*/]/g) ?? []).length >= 4)) long++;
      if (/ so |leaves|leaving| make | hold | give /.test(text)) prose++;
    }
    expect([...levels].sort()).toEqual([1, 2, 3, 4, 5]);
    for (const count of [worked, long, prose]) expect(count).toBeGreaterThan(docs.length / 50);
  });

  it('is reproducible from its seed, a shorter corpus the prefix of a longer one', () => {
    const short = generateCorpus(seed, 20_000, heldOut).map((d) => d.text);
    expect(docs.slice(0, short.length).map((d) => d.text)).toEqual(short);
    const it = corpusDocuments(seed + 1, heldOut);
    expect(it.next().value).not.toEqual(docs[0]);
  });
});

describe('corpus command line', () => {
  it('refuses every bad option value with one line', () => expectEveryOptionChecked(corpusCli));

  it('writes the corpus the shipped base model was trained on: its first 20,000 tokens, by checksum', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'sage-corpus-')), 'corpus.txt');
    const r = runCliProcess('src/cli/corpus.ts', ['--out', out, '--tokens', '20000', '--seed', '0']);
    expect(r.status, r.stderr).toBe(0);
    const text = readFileSync(out, 'utf8');
    const sha = createHash('sha256').update(text).digest('hex');
    expect(r.stdout).toMatch(new RegExp(`^wrote \\d+ documents, 200\\d\\d tokens, to .*; ${heldOut.size} held-out expressions excluded \\(${SHIPPED_SPLITS.validation.file}\\); sha256 ${sha}\\n$`));
    // The first lines of the corpus the shipped base model was trained on (data/README.md: npm run corpus -- --tokens 12000000 --seed 0).
    expect(sha).toBe(CORPUS_PREFIX_SHA256);
    const bad = runCliProcess('src/cli/corpus.ts', ['--tokens', '10']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('corpus: --out is required');
  });
});

const CORPUS_PREFIX_SHA256 = '925cefb87a0f38781bc8bc45c75fa5825194024eae98161c2a946764c5d482d5';
