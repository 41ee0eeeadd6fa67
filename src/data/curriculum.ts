/**
 * The demo curriculum: arithmetic and word problems with exact non-negative integer
 * answers in five levels, generated from a seed. Every problem carries its expression, and
 * every statement style is a template that also reads back: a problem a model writes in
 * one of these styles yields its expression, whose value decides the right answer whatever
 * answer the model claims.
 */
import { evaluateExpression } from '../verify/arithmetic';
import { normaliseStatement } from './problem';
import { rng } from '../util/random';

export type Level = 1 | 2 | 3 | 4 | 5;
export const LEVELS: readonly Level[] = [1, 2, 3, 4, 5];

/** One curriculum problem as a JSONL record (the importer reads it as a Problem). */
export interface CurriculumRecord {
  id: string;
  level: Level;
  question: string;
  answer: string;
  expression: string;
}

/** Operands a slot may take, inclusive. */
type Range = readonly [number, number];

/**
 * One kind of problem: an expression over number slots `a`…`e`, their ranges, and the
 * statement styles that render it. In a style, `{a}` is a number, `{name}` a first name and
 * `{items}` a plural noun; a slot may appear twice (the same value both times).
 */
export interface Kind {
  expr: string;
  slots: Readonly<Record<string, Range>>;
  styles: readonly string[];
  /** Largest answer accepted: keeps answers short for a byte-level model. */
  max?: number;
}

export const NAMES = ['Ann', 'Bo', 'Cy', 'Di', 'Ed', 'Flo', 'Gus', 'Hal', 'Ivy', 'Jo', 'Kai', 'Lu'] as const;
export const ITEMS = ['apples', 'pens', 'cards', 'eggs', 'coins', 'books', 'cups', 'toys', 'shells', 'stamps'] as const;

const DIGIT: Range = [0, 9];
const SMALL: Range = [0, 20];

/**
 * Level 1 is one operation on the numbers 0-9: 155 sums and differences. Every style ends with
 * the bare sum ("… 3+2=?"), so the answer always follows the same few bytes: a 1M-parameter
 * byte-level model learns the level in minutes (docs/problems.md, *The demo curriculum*). The shipped seeds show only
 * its operands 0-4 (`operandCap`), so the held-out split has sums no seed shows. Each level
 * after adds numbers, operations, parentheses or words.
 */
export const KINDS: Readonly<Record<Level, readonly Kind[]>> = {
  1: [
    {
      expr: '{a}+{b}',
      slots: { a: DIGIT, b: DIGIT },
      styles: ['{a}+{b}=?', 'Add {a} and {b}: {a}+{b}=?', '{a} plus {b}: {a}+{b}=?', 'Sum: {a}+{b}=?', '{name} adds {b} to {a}: {a}+{b}=?'],
    },
    {
      expr: '{a}-{b}',
      slots: { a: DIGIT, b: DIGIT },
      styles: ['{a}-{b}=?', 'Take {b} from {a}: {a}-{b}=?', '{a} minus {b}: {a}-{b}=?', 'Difference: {a}-{b}=?', '{name} takes {b} from {a}: {a}-{b}=?'],
    },
  ],
  2: [
    { expr: '{a}+{b}', slots: { a: SMALL, b: SMALL }, styles: ['{a}+{b}=?', '{name} has {a} {items} and gets {b} more. How many?'] },
    { expr: '{a}-{b}', slots: { a: SMALL, b: SMALL }, styles: ['{a}-{b}=?', '{name} has {a} {items} and loses {b}. How many left?'] },
    { expr: '{a}*{b}', slots: { a: [2, 9], b: [2, 9] }, styles: ['{a}*{b}=?', '{a} times {b}?', '{a} bags of {b} {items}. How many {items}?'] },
  ],
  3: [
    {
      expr: '{a}+{b}-{c}',
      slots: { a: SMALL, b: SMALL, c: SMALL },
      styles: ['{a}+{b}-{c}=?', '{name} has {a} {items}, gets {b} more and gives away {c}. How many now?'],
    },
    { expr: '{a}-{b}+{c}', slots: { a: SMALL, b: SMALL, c: SMALL }, styles: ['{a}-{b}+{c}=?'] },
    {
      expr: '{a}*{b}+{c}',
      slots: { a: [2, 9], b: [2, 9], c: SMALL },
      styles: ['{a}*{b}+{c}=?', '{name} buys {a} packs of {b} {items} and finds {c} more. How many {items}?'],
    },
  ],
  4: [
    {
      expr: '({a}+{b})*{c}',
      slots: { a: [1, 12], b: [1, 12], c: [2, 9] },
      styles: ['({a}+{b})*{c}=?', '{name} has {a} red and {b} blue bags with {c} {items} in each. How many {items}?'],
    },
    { expr: '{a}*({b}-{c})', slots: { a: [2, 9], b: SMALL, c: SMALL }, styles: ['{a}*({b}-{c})=?'] },
    {
      expr: '{a}*{b}-{c}*{d}',
      slots: { a: [2, 9], b: [2, 9], c: [2, 9], d: [2, 9] },
      styles: ['{a}*{b}-{c}*{d}=?', '{name} buys {a} boxes of {b} {items} and sells {c} boxes of {d}. How many {items} are left?'],
    },
  ],
  5: [
    {
      expr: '({a}+{b})*{c}-{d}',
      slots: { a: [1, 12], b: [1, 12], c: [2, 9], d: SMALL },
      styles: [
        '({a}+{b})*{c}-{d}=?',
        '{name} fills {a} bags and then {b} more, with {c} {items} in each bag, and gives {d} {items} away. How many {items} are left?',
      ],
    },
    {
      expr: '({a}*{b}+{c})/{d}',
      slots: { a: [2, 9], b: [2, 9], c: SMALL, d: [2, 6] },
      styles: [
        '({a}*{b}+{c})/{d}=?',
        '{name} has {a} bags of {b} {items} and {c} loose {items}, shared equally by {d} friends. How many {items} does each get?',
      ],
    },
    {
      expr: '{a}*({b}+{c})-{d}*{e}',
      slots: { a: [2, 9], b: [1, 9], c: [1, 9], d: [2, 9], e: [2, 9] },
      styles: ['{a}*({b}+{c})-{d}*{e}=?'],
    },
  ],
};

const PLACEHOLDER = /\{(\w+)\}/g;

export function fill(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(PLACEHOLDER, (_, k: string) => String(values[k]));
}

/**
 * One problem of `level`, drawn with `random`. `operandCap` lowers every operand's upper bound
 * to it (an easier slice of the level: the same draws, from a narrower range).
 */
export function generateProblem(level: Level, random: () => number, operandCap = Infinity): Omit<CurriculumRecord, 'id'> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const kind = pick(KINDS[level]);
  const style = pick(kind.styles);
  const { values, expression, value } = drawValues(kind, random, operandCap);
  return { level, question: fill(style, values), answer: String(value), expression };
}

/** A draw of one kind: its slots' numbers, a name and items, its expression and value. */
export interface KindDraw {
  values: Record<string, string | number>;
  expression: string;
  value: number;
}

/** Draws `kind`'s slots (see generateProblem's `operandCap`), a name and items. */
export function drawValues(kind: Kind, random: () => number, operandCap = Infinity): KindDraw {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  // Rejection sampling: a draw whose answer is negative, fractional or too long is redrawn.
  for (;;) {
    const values: Record<string, string | number> = { name: pick(NAMES), items: pick(ITEMS) };
    for (const [slot, [lo, hi]] of Object.entries(kind.slots)) {
      const top = Math.max(lo, Math.min(hi, operandCap));
      values[slot] = lo + Math.floor(random() * (top - lo + 1));
    }
    const expression = fill(kind.expr, values);
    const r = evaluateExpression(expression);
    if ('value' in r && r.value >= 0 && r.value <= (kind.max ?? 999)) return { values, expression, value: r.value };
  }
}

/** How a set is drawn beyond its levels and seed. */
export interface SetOptions {
  /** Expressions no problem may have: a held-out split's, or the seeds' for a split held out from them. */
  exclude?: ReadonlySet<string>;
  /** Per level, the largest operand drawn (see generateProblem): seeds that show only the easy problems. */
  operandCap?: Readonly<Partial<Record<Level, number>>>;
}

/**
 * `count` problems of each given level with distinct statements, none with an expression in
 * `exclude` (content, not wording: `Jo adds 4 to 3` is `3+4`), reproducible from `seed`.
 */
export function generateSet(levels: Readonly<Partial<Record<Level, number>>>, seed: number, options: SetOptions = {}): CurriculumRecord[] {
  const random = rng(seed);
  const out: CurriculumRecord[] = [];
  const seen = new Set<string>();
  const exclude = options.exclude ?? new Set();
  for (const level of LEVELS) {
    const count = levels[level] ?? 0;
    let made = 0;
    for (let tries = 0; made < count; tries++) {
      if (tries > count * 200) throw new Error(`level ${level} has fewer than ${count} distinct statements left`);
      const p = generateProblem(level, random, options.operandCap?.[level]);
      const key = normaliseStatement(p.question);
      if (seen.has(key) || exclude.has(p.expression)) continue;
      seen.add(key);
      out.push({ id: `curriculum/L${level}/${seed}-${String(++made).padStart(4, '0')}`, ...p });
    }
  }
  return out;
}

/**
 * What the lab and the CLIs ship: 500 seeds (levels 1-2, level 1's operands 0-4 only), a
 * held-out split over all five levels at their full ranges, and the ceiling's seeds: the 500
 * seeds and as many problems of levels 3-5 (`npm run compare`'s rlvr-ceiling, what a perfect
 * Challenger could give). As many: SAGE draws half of each Solver batch from the newest
 * generated problems (the loop's newest-mix sampling), so a Challenger that wrote only right
 * problems of the levels the seeds lack would give the Solver half its practice there, as the
 * ceiling's uniform draw over its seeds does; levels 3-5 in equal shares, as the held-out split
 * weighs them.
 */
export const SHIPPED_SPLITS = {
  seeds: { file: 'data/seeds/curriculum-500.jsonl', levels: { 1: 400, 2: 100 }, seed: 1, operandCap: { 1: 4 } },
  validation: { file: 'data/validation/curriculum-1000.jsonl', levels: { 1: 200, 2: 200, 3: 200, 4: 200, 5: 200 }, seed: 2 },
  ceiling: { file: 'data/seeds/curriculum-all-levels-1000.jsonl', levels: { 3: 167, 4: 167, 5: 166 }, seed: 3 },
} as const;

/**
 * The shipped splits, as generated: no validation problem has a seed's expression, and the
 * ceiling's seeds are the seeds followed by levels 3-5 drawn without any validation expression.
 */
export function shippedSplits(): { seeds: CurriculumRecord[]; validation: CurriculumRecord[]; ceiling: CurriculumRecord[] } {
  const { seeds: s, validation: v, ceiling: c } = SHIPPED_SPLITS;
  const seeds = generateSet(s.levels, s.seed, { operandCap: s.operandCap });
  const validation = generateSet(v.levels, v.seed, { exclude: new Set(seeds.map((p) => p.expression)) });
  const ceiling = [...seeds, ...generateSet(c.levels, c.seed, { exclude: new Set(validation.map((p) => p.expression)) })];
  return { seeds, validation, ceiling };
}

interface Reader {
  level: Level;
  kind: Kind;
  pattern: RegExp;
  slots: string[];
}

/** Every style as a regular expression that captures its slots (a repeated slot must repeat its value). */
const READERS: Reader[] = LEVELS.flatMap((level) =>
  KINDS[level].flatMap((kind) =>
    kind.styles.map((style) => {
      const slots: string[] = [];
      let source = '';
      let last = 0;
      for (const m of style.matchAll(PLACEHOLDER)) {
        source += escapeRegExp(style.slice(last, m.index)).replace(/ /g, '\\s+');
        const slot = m[1]!;
        const seen = slots.indexOf(slot);
        if (seen >= 0) source += `\\${seen + 1}`;
        else {
          slots.push(slot);
          source += slot === 'name' ? '([A-Z][a-z]{0,15})' : slot === 'items' ? '([a-z]{1,20})' : '(\\d{1,6})';
        }
        last = m.index + m[0].length;
      }
      source += escapeRegExp(style.slice(last)).replace(/ /g, '\\s+');
      return { level, kind, pattern: new RegExp(`^\\s*${source}\\s*$`), slots };
    }),
  ),
);

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Reads a statement written in one of the curriculum's styles (by the generator or by a
 * model imitating it): its expression and the level of its style, or null for any other
 * text. The patterns are anchored with bounded classes, so a hostile string costs linear time.
 */
export function readStatement(statement: string): { expression: string; level: Level } | null {
  if (statement.length > 400) return null;
  let outOfRange: { expression: string; level: Level } | null = null;
  for (const r of READERS) {
    const m = r.pattern.exec(statement);
    if (!m) continue;
    const values: Record<string, number> = {};
    r.slots.forEach((slot, i) => (values[slot] = Number(m[i + 1])));
    const read = { expression: fill(r.kind.expr, values), level: r.level };
    // A style several levels share ("a-b=?") belongs to the first whose ranges hold the numbers.
    const fits = Object.entries(r.kind.slots).every(([slot, [lo, hi]]) => values[slot]! >= lo && values[slot]! <= hi);
    if (fits) return read;
    outOfRange ??= read;
  }
  return outOfRange;
}

/**
 * The right answer to a statement in a curriculum style, from its expression alone (the
 * answer a writer claims plays no part), or why there is none.
 */
export function answerStatement(statement: string): { answer: string; expression: string; level: Level } | { error: string } {
  const read = readStatement(statement);
  if (!read) return { error: 'not in a curriculum style' };
  const r = evaluateExpression(read.expression);
  if ('error' in r) return { error: `${read.expression}: ${r.error}` };
  if (r.value < 0) return { error: `${read.expression} is negative` };
  return { answer: String(r.value), ...read };
}
