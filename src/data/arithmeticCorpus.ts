/**
 * The arithmetic pretraining corpus: arithmetic of every level and kind of the curriculum, and beyond it
 * (more operands, larger numbers), as raw text, one document a line, reproducible from a seed.
 * A base model learns from it what the seeds do not show (levels 3-5), so that self-posed
 * problems have knowledge to draw out. Its text is in none of the roles' templates: bare
 * expressions with their values, worked steps, and statements with their answers in prose.
 *
 * Held-out problems stay held out by content: no document states an expression that is a
 * held-out problem's, whole or as a part of a larger one (`(7+8)*5 = 75` states `7+8`), in
 * digits or in words. A model may then need a fact it has never seen alone to solve a
 * held-out problem: that is the generalisation the held-out split measures.
 */
import { expressionOf } from './content';
import { drawValues, fill, KINDS, type Kind, type Level } from './curriculum';
import type { Problem } from './problem';
import { rng } from '../util/random';

type Op = '+' | '-' | '*' | '/';
/** An arithmetic expression over non-negative integers. */
export type Expr = { n: number } | { op: Op; l: Expr; r: Expr };

const PRECEDENCE: Record<Op, number> = { '+': 1, '-': 1, '*': 2, '/': 2 };

/**
 * Parses integers, `+ - * /` and parentheses (no unary minus: the corpus writes none), spaces
 * aside. Throws on anything else.
 */
export function parseArithmetic(src: string): Expr {
  const s = src.replace(/\s+/g, '');
  let pos = 0;
  const fail = (what: string): never => {
    throw new Error(`not arithmetic: ${what} at ${pos + 1} of "${src}"`);
  };
  const binary = (level: number): Expr => {
    let left = level === 1 ? binary(2) : atom();
    for (;;) {
      const op = s[pos] as Op | undefined;
      if (op === undefined || !(op in PRECEDENCE) || PRECEDENCE[op] !== level) return left;
      pos++;
      left = { op, l: left, r: level === 1 ? binary(2) : atom() };
    }
  };
  const atom = (): Expr => {
    if (s[pos] === '(') {
      pos++;
      const e = binary(1);
      if (s[pos] !== ')') fail('missing ")"');
      pos++;
      return e;
    }
    const m = /^\d{1,15}/.exec(s.slice(pos));
    if (!m) return fail(s[pos] === undefined ? 'unexpected end' : `unexpected "${s[pos]}"`);
    pos += m[0].length;
    return { n: Number(m[0]) };
  };
  const e = binary(1);
  if (pos < s.length) fail(`unexpected "${s[pos]}"`);
  return e;
}

/**
 * The expression with the fewest parentheses that keep its structure: one expression has one
 * form, so `(3*4)+2` and `3*4+2` are one content.
 */
export function show(e: Expr): string {
  if ('n' in e) return String(e.n);
  const side = (c: Expr, right: boolean) => {
    const text = show(c);
    if ('n' in c) return text;
    const tighter = PRECEDENCE[c.op] > PRECEDENCE[e.op] || (!right && PRECEDENCE[c.op] === PRECEDENCE[e.op]);
    return tighter ? text : `(${text})`;
  };
  return `${side(e.l, false)}${e.op}${side(e.r, true)}`;
}

/** An expression in its one form (see show); spacing and redundant parentheses aside. */
export function canonicalExpression(src: string): string {
  return show(parseArithmetic(src));
}

/** The canonical expressions of the problems that have one (content.ts expressionOf): what no document may state. */
export function canonicalExpressions(problems: readonly Problem[]): Set<string> {
  const out = new Set<string>();
  for (const p of problems) {
    const e = expressionOf(p);
    if (e) out.add(canonicalExpression(e));
  }
  return out;
}

function apply(op: Op, a: number, b: number): number | null {
  if (op === '+') return a + b;
  if (op === '-') return a - b;
  if (op === '*') return a * b;
  return b !== 0 && a % b === 0 ? a / b : null;
}

/** Largest value the corpus writes: keeps answers short for a byte-level model, as the curriculum does. */
const MAX_VALUE = 999;

/** The value, when every operation on the way gives an integer in 0..MAX_VALUE; else null. */
export function valueOf(e: Expr): number | null {
  if ('n' in e) return e.n;
  const a = valueOf(e.l);
  const b = a === null ? null : valueOf(e.r);
  const v = a === null || b === null ? null : apply(e.op, a, b);
  return v !== null && v >= 0 && v <= MAX_VALUE ? v : null;
}

/** Every operation of the expression as an expression of its own, the whole first. */
export function subExpressions(e: Expr): Expr[] {
  return 'n' in e ? [] : [e, ...subExpressions(e.l), ...subExpressions(e.r)];
}

/**
 * Evaluation one operation at a time, leftmost innermost first: the expression after each
 * step (`(3+4)*5-2` → `7*5-2`, `35-2`, `33`) and the operation the step did (`3+4 = 7`).
 * Needs a value (valueOf).
 */
export function reductions(e: Expr): { after: Expr; op: Expr; value: number }[] {
  const out: { after: Expr; op: Expr; value: number }[] = [];
  let cur = e;
  while (!('n' in cur)) {
    let done: { op: Expr; value: number } | null = null;
    const reduce = (x: Expr): Expr => {
      if ('n' in x || done) return x;
      if ('n' in x.l && 'n' in x.r) {
        done = { op: x, value: apply(x.op, x.l.n, x.r.n)! };
        return { n: done.value };
      }
      const l = reduce(x.l);
      return { op: x.op, l, r: reduce(x.r) };
    };
    cur = reduce(cur);
    out.push({ after: cur, ...done! });
  }
  return out;
}

/** One statement of a fact in the corpus: its text and every expression it states, in digits or in words. */
export interface Written {
  text: string;
  expressions: string[];
}

/**
 * An expression worked one operation at a time (`(3+4)*5: 3+4 = 7, 7*5 = 35.`): two operations
 * or more, every step in 0..MAX_VALUE (not `3-5+4`); else null.
 */
export function workedSteps(e: Expr): Written | null {
  if (valueOf(e) === null || subExpressions(e).length < 2) return null;
  const steps = reductions(e);
  return {
    text: `${show(e)}: ${steps.map((s) => `${show(s.op)} = ${s.value}`).join(', ')}.`,
    expressions: [show(e), ...steps.map((s) => show(s.op))],
  };
}

/** A fact: an expression with its value, and the curriculum kind it was drawn from, if any. */
interface Fact {
  expr: Expr;
  value: number;
  kind?: { kind: Kind; level: Level; values: Readonly<Record<string, string | number>> };
}

/**
 * Each curriculum kind stated in prose with its answer (`{v}`), in words no curriculum style
 * uses, so that what a word problem means is learned beside the question it is asked as.
 */
const PROSE: Readonly<Record<string, readonly string[]>> = {
  '{a}+{b}': ['{name} has {a} {items} and gets {b} more, so {name} has {v} {items}.', '{a} {items} and {b} {items} make {v} {items}.', 'The sum of {a} and {b} is {v}.'],
  '{a}-{b}': ['{name} has {a} {items} and loses {b}, so {v} are left.', 'Taking {b} from {a} leaves {v}.', 'The difference of {a} and {b} is {v}.'],
  '{a}*{b}': ['{a} bags of {b} {items} hold {v} {items}.', '{a} rows of {b} {items} make {v} {items}.', 'The product of {a} and {b} is {v}.'],
  '{a}+{b}-{c}': ['{name} has {a} {items}, gets {b} more and gives away {c}, so {name} has {v} now.'],
  '{a}-{b}+{c}': ['{name} has {a} {items}, loses {b} and then finds {c}, so {name} has {v} {items}.'],
  '{a}*{b}+{c}': ['{name} buys {a} packs of {b} {items} and finds {c} more, so {name} has {v} {items}.'],
  '({a}+{b})*{c}': ['{a} red bags and {b} blue bags with {c} {items} in each hold {v} {items}.'],
  '{a}*({b}-{c})': ['{a} boxes held {b} {items} each, and {c} were taken from each box, so {v} {items} remain.'],
  '{a}*{b}-{c}*{d}': ['{name} buys {a} boxes of {b} {items} and sells {c} boxes of {d}, so {v} {items} are left.'],
  '({a}+{b})*{c}-{d}': ['{name} fills {a} bags and then {b} more with {c} {items} in each and gives {d} away, so {v} {items} are left.'],
  '({a}*{b}+{c})/{d}': ['{a} bags of {b} {items} and {c} loose {items} shared equally by {d} friends give each {v} {items}.'],
  '{a}*({b}+{c})-{d}*{e}': ['{name} packs {a} boxes with {b} red and {c} blue {items} each, then takes out {d} rows of {e}, leaving {v} {items}.'],
};

/** The ways a fact is written: small named functions, chosen by weight (see FORM_WEIGHTS). */
const FORMS = {
  /** `(3+4)*5 = 35.` */
  bare: (f: Fact): Written => ({ text: `${show(f.expr)} = ${f.value}.`, expressions: [show(f.expr)] }),
  /** `(3+4)*5: 3+4 = 7, 7*5 = 35.` */
  worked: (f: Fact): Written | null => workedSteps(f.expr),
  /** `(3+4)*5-2 = 7*5-2 = 35-2 = 33.` */
  chain: (f: Fact): Written | null => {
    if (valueOf(f.expr) === null) return null;
    const shown = [f.expr, ...reductions(f.expr).map((s) => s.after)].map(show);
    return { text: `${shown.join(' = ')}.`, expressions: shown.slice(0, -1) };
  },
  /** `Ann buys 3 packs of 4 pens and finds 2 more, so Ann has 14 pens.` */
  prose: (f: Fact, random: () => number): Written | null => {
    if (!f.kind) return null;
    const text = fill(pick(PROSE[f.kind.kind.expr]!, random), { ...f.kind.values, v: f.value });
    return { text, expressions: [show(f.expr)] };
  },
  /** A question in one of the curriculum's styles, then its answer: `3 times 4? The answer is 12.` */
  question: (f: Fact, random: () => number): Written | null => {
    if (!f.kind) return null;
    const question = fill(pick(f.kind.kind.styles, random), f.kind.values);
    const answer = random() < 0.5 ? `The answer is ${f.value}.` : `${show(f.expr)} = ${f.value}.`;
    return { text: `${question} ${answer}`, expressions: [show(f.expr)] };
  },
} as const;
type FormName = keyof typeof FORMS;

/** How often each form is tried; a form that does not apply to a fact (prose for a random expression) is redrawn. */
const FORM_WEIGHTS: Readonly<Record<FormName, number>> = { bare: 3, worked: 2, chain: 1, prose: 2, question: 2 };

/** How facts are drawn: the curriculum's levels by weight (the harder levels, which the seeds lack, most), or beyond. */
const SOURCE_WEIGHTS: Readonly<Record<Level | 'beyond', number>> = { 1: 1, 2: 2, 3: 3, 4: 3, 5: 3, beyond: 4 };

function pick<T>(xs: readonly T[], random: () => number): T {
  return xs[Math.floor(random() * xs.length)]!;
}

function weighted<K extends string | number>(weights: Readonly<Record<K, number>>, random: () => number): K {
  const entries = Object.entries(weights) as [string, number][];
  let r = random() * entries.reduce((s, [, w]) => s + w, 0);
  for (const [k, w] of entries) if ((r -= w) < 0) return (/^\d+$/.test(k) ? Number(k) : k) as K;
  return entries[entries.length - 1]![0] as K;
}

/** Operand ranges of the expressions beyond the curriculum: digits, small numbers, two digits. */
const BEYOND_RANGES: readonly (readonly [number, number])[] = [
  [0, 9],
  [0, 20],
  [0, 99],
];

/** A random expression of 2-5 operands with + - * / and any grouping, every step an integer in 0..999. */
function beyond(random: () => number): Expr {
  const [lo, hi] = pick(BEYOND_RANGES, random);
  const operands = 2 + Math.floor(random() * 4);
  const tree = (n: number): Expr => {
    if (n === 1) return { n: lo + Math.floor(random() * (hi - lo + 1)) };
    const left = 1 + Math.floor(random() * (n - 1));
    return { op: pick(['+', '-', '*', '*', '/'] as const, random), l: tree(left), r: tree(n - left) };
  };
  for (;;) {
    const e = tree(operands);
    if (valueOf(e) !== null && subExpressions(e).every((s) => valueOf(s) !== null)) return e;
  }
}

function drawFact(random: () => number): Fact {
  const source = weighted(SOURCE_WEIGHTS, random);
  if (source === 'beyond') {
    const expr = beyond(random);
    return { expr, value: valueOf(expr)! };
  }
  const kind = pick(KINDS[source], random);
  const draw = drawValues(kind, random);
  return { expr: parseArithmetic(draw.expression), value: draw.value, kind: { kind, level: source, values: draw.values } };
}

/** Whether any expression stated, or any part of one, is held out (canonical forms, see canonicalExpression). */
export function statesHeldOut(expressions: readonly string[], heldOut: ReadonlySet<string>): boolean {
  return expressions.some((x) => subExpressions(parseArithmetic(x)).some((s) => heldOut.has(show(s))));
}

/** A curriculum problem as the corpus asks it (its question form): a style's statement, its expression and value. */
export interface CorpusQuestion {
  level: Level;
  question: string;
  expression: string;
  value: number;
}

/**
 * The corpus's curriculum facts as questions, endlessly, from `seed`: facts drawn as the corpus
 * draws them (levels 1-5 by SOURCE_WEIGHTS; those beyond the curriculum have no question and
 * are skipped), each in one of its kind's styles, none stating an expression in `heldOut`
 * (canonical forms), whole or as a part.
 */
export function* corpusQuestions(seed: number, heldOut: ReadonlySet<string>): Generator<CorpusQuestion> {
  const random = rng(seed);
  for (;;) {
    const fact = drawFact(random);
    if (!fact.kind || statesHeldOut([show(fact.expr)], heldOut)) continue;
    yield { level: fact.kind.level, question: fill(pick(fact.kind.kind.styles, random), fact.kind.values), expression: fill(fact.kind.kind.expr, fact.kind.values), value: fact.value };
  }
}

/** One document of the corpus: its line and every expression it states. */
export interface CorpusDocument {
  text: string;
  expressions: string[];
}

/** Longest document, in bytes: with BOS and EOS it fits the tiny preset's 256-token context. */
export const MAX_DOCUMENT_BYTES = 250;

/**
 * The corpus's documents, endlessly, from `seed`: each 1-4 facts in their forms, none stating
 * an expression in `heldOut` (canonical forms). A shorter corpus is a prefix of a longer one.
 */
export function* corpusDocuments(seed: number, heldOut: ReadonlySet<string>): Generator<CorpusDocument> {
  const random = rng(seed);
  for (;;) {
    const facts = 1 + Math.floor(random() * 4);
    const parts: Written[] = [];
    let bytes = 0;
    while (parts.length < facts) {
      const fact = drawFact(random);
      const written = FORMS[weighted(FORM_WEIGHTS, random)](fact, random);
      if (!written || statesHeldOut(written.expressions, heldOut)) continue;
      if (bytes + written.text.length + 1 > MAX_DOCUMENT_BYTES) break;
      parts.push(written);
      bytes += written.text.length + 1;
    }
    if (parts.length) yield { text: parts.map((p) => p.text).join(' '), expressions: parts.flatMap((p) => p.expressions) };
  }
}

/** A document's tokens under a byte-level tokenizer: BOS, its bytes (ASCII), EOS. */
export function documentTokens(text: string): number {
  return text.length + 2;
}

/** Documents from `seed` until they hold at least `tokens` tokens (documentTokens). */
export function generateCorpus(seed: number, tokens: number, heldOut: ReadonlySet<string>): CorpusDocument[] {
  const out: CorpusDocument[] = [];
  let total = 0;
  for (const doc of corpusDocuments(seed, heldOut)) {
    if (total >= tokens) break;
    out.push(doc);
    total += documentTokens(doc.text);
  }
  return out;
}
