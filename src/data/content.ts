/**
 * What makes two problems the same problem, whatever their ids, names or wording: a held-out
 * problem that shares its content with a seed measures recall, not generalisation. A problem
 * has one or more content keys, and two problems overlap when they share any:
 * - the curriculum: its expression (`Jo adds 4 to 3: 3+4=?` is `3+4`), and any statement that
 *   reads back in a curriculum style has that expression too, whatever its file's format;
 * - every other problem: its statement normalised, names aside and case aside (`normaliseContent`);
 * - code: also its function, the entry point with the canonical solution, where there is one.
 */
import { readStatement } from './curriculum';
import type { Problem } from './problem';
import { shuffle } from '../util/random';

const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const NUMBER_WORD = new Map<string, number>([...UNITS.map((w, i) => [w, i] as const), ...TENS.map((w, i) => [w, 20 + 10 * i] as const)]);
/** "twenty-five", "twenty five": one number. */
const COMPOUND = new RegExp(`\\b(${TENS.join('|')})(?:-|\\s+)(${UNITS.slice(1, 10).join('|')})\\b`, 'gi');
const SINGLE = new RegExp(`\\b(${[...NUMBER_WORD.keys()].join('|')})\\b`, 'gi');
/**
 * Tokens: a LaTeX command, a word, a number (thousands separators allowed), or any other
 * single character. Whitespace separates tokens and is otherwise ignored.
 */
const TOKEN = /\\[A-Za-z]+|[A-Za-z]+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\S/g;
/** Sentence punctuation and quotes: wording, not content. Operators, brackets and `$` are content. */
const PUNCTUATION = new Set([...'.,;:!?"\'`']);
/** What ends a sentence (or opens a clause that reads as one: "… more: how many?"). */
const SENTENCE_END = new Set([...'.;:!?']);
/**
 * A capitalised word (not a LaTeX command, not an acronym): a person's or place's name.
 * Variables ($A$, $ABC$) and `List` in code are kept: one capital, or none after it, is no name.
 */
const NAME = /^[A-Z][a-z]+$/;
/** Stands for every name and sentence opener; not a token any text can produce. */
const NAME_TOKEN = '<name>';

/**
 * A statement's content, insensitive to spacing, sentence punctuation and numbers written in
 * words, and either to names or to case:
 * - with `names`, a name and any word opening a sentence are one placeholder: "Janet’s ducks lay
 *   sixteen eggs. How many…" is "Maria's ducks lay 16 eggs: how many…" (a name opening a
 *   sentence looks like any opener, and which word opens a sentence is wording);
 * - without, every word is lower-cased: "What is 3+4?" is "what is 3+4" (text re-cased as a
 *   whole, names and all).
 * A capitalised word cannot be told from a lower-case one without losing one or the other, so
 * a statement has both keys.
 */
export function normaliseContent(statement: string, names = true): string {
  const text = statement
    .normalize('NFKC')
    .replace(/[‘’]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(COMPOUND, (_, tens: string, unit: string) => String(NUMBER_WORD.get(tens.toLowerCase())! + NUMBER_WORD.get(unit.toLowerCase())!))
    .replace(SINGLE, (w: string) => String(NUMBER_WORD.get(w.toLowerCase())));
  const tokens: string[] = [];
  let opening = true;
  for (const [t] of text.matchAll(TOKEN)) {
    const opens = opening;
    opening = SENTENCE_END.has(t);
    if (PUNCTUATION.has(t)) continue;
    if (t.startsWith('\\')) tokens.push(t);
    else if (names && (NAME.test(t) || (opens && /^[A-Za-z]/.test(t)))) tokens.push(NAME_TOKEN);
    else tokens.push(/\d/.test(t[0]!) ? t.replace(/,/g, '') : t.toLowerCase());
  }
  return tokens.join(' ');
}

/** Code compared for identity: spacing and blank lines do not make a solution new. */
function normaliseCode(code: string): string {
  return code.replace(/\s+/g, ' ').trim();
}

/** The curriculum's content: its expression, spacing aside. */
export function expressionOf(p: Problem): string | null {
  const e = p.kind === 'math' && p.format === 'curriculum' ? p.expression : readStatement(p.statement)?.expression;
  return e ? e.replace(/\s+/g, '') : null;
}

/** Every key of a problem's content; two problems overlap when they share one. */
export function contentKeys(p: Problem): string[] {
  const keys: string[] = [];
  const expression = expressionOf(p);
  if (expression) keys.push(`expression ${expression}`);
  // A curriculum problem is its expression: its wording is the generator's choice.
  if (p.format !== 'curriculum') keys.push(...new Set([true, false].map((names) => `statement ${normaliseContent(p.statement, names)}`)));
  if (p.kind === 'code' && p.solution?.trim()) keys.push(`function ${p.tests.entryPoint} ${normaliseCode(p.solution)}`);
  return keys;
}

/** A validation problem whose content is a seed's, with the first such seed. */
export interface Overlap {
  problem: Problem;
  seed: Problem;
}

/** The validation problems that share content with a seed, in the validation's order. */
export function findOverlap(seeds: readonly Problem[], validation: readonly Problem[]): Overlap[] {
  const byKey = new Map<string, Problem>();
  for (const s of seeds) for (const k of contentKeys(s)) if (!byKey.has(k)) byKey.set(k, s);
  const out: Overlap[] = [];
  for (const problem of validation) {
    const seed = contentKeys(problem).map((k) => byKey.get(k)).find((s) => s !== undefined);
    if (seed) out.push({ problem, seed });
  }
  return out;
}

/** Why an overlap matters, said wherever one is reported. */
export const OVERLAP_REASON = 'a score on them measures recall, not generalisation';

const clip = (s: string, n: number) => {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > n ? `${line.slice(0, n - 1)}…` : line;
};

/** One overlap as a line: `validation-id "statement" ↔ seed seed-id`. */
export function describeOverlap(o: Overlap): string {
  return `${o.problem.id} "${clip(o.problem.statement, 80)}" ↔ seed ${o.seed.id}`;
}

/** "12 of 400 validation problems share their content with a seed (…)": the count in one line, with why it matters. */
export function overlapSummary(count: number, validationCount: number): string {
  return `${count} of ${validationCount} validation problems share their content with a seed (${OVERLAP_REASON})`;
}

/** The overlap as the lab shows it before a run: the count and the first few, each as a line. */
export interface OverlapReport {
  count: number;
  /** Validation problems held in all. */
  validation: number;
  examples: string[];
}

export function overlapReport(overlap: readonly Overlap[], validationCount: number, examples = 3): OverlapReport {
  return { count: overlap.length, validation: validationCount, examples: overlap.slice(0, examples).map(describeOverlap) };
}

/** Refuses a validation split that shares content with the seeds: a score on it would be false. */
export function checkHeldOut(seeds: readonly Problem[], validation: readonly Problem[]): void {
  const overlap = findOverlap(seeds, validation);
  if (overlap.length) throw new Error(`${overlapSummary(overlap.length, validation.length)}; first: ${describeOverlap(overlap[0]!)}`);
}

/** The validation problems left when the overlapping ones are dropped. */
export function withoutOverlap(validation: readonly Problem[], overlap: readonly Overlap[]): Problem[] {
  const shared = new Set(overlap.map((o) => o.problem));
  return validation.filter((p) => !shared.has(p));
}

/**
 * A held-out split taken from the seeds themselves: about `fraction` of them, drawn
 * reproducibly from `random`, become validation problems and leave the seeds. Problems that
 * share content go together (on one side or the other), so the split shares none: whole
 * groups are drawn while they fit in the count.
 */
export function holdOut(problems: readonly Problem[], fraction: number, random: () => number): { seeds: Problem[]; validation: Problem[] } {
  if (!(fraction > 0 && fraction < 1)) throw new Error(`the held-out fraction must be between 0 and 1 (got ${fraction})`);
  const count = Math.round(problems.length * fraction);
  // Union-find over shared keys: each group is a set of problems linked by content.
  const parent = problems.map((_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  const owner = new Map<string, number>();
  problems.forEach((p, i) => {
    for (const k of contentKeys(p)) {
      const j = owner.get(k);
      if (j === undefined) owner.set(k, i);
      else parent[root(i)] = root(j);
    }
  });
  const groups = new Map<number, number[]>();
  problems.forEach((_, i) => groups.set(root(i), [...(groups.get(root(i)) ?? []), i]));
  const picked = new Set<number>();
  for (const group of shuffle([...groups.values()], random)) {
    if (picked.size + group.length <= count) for (const i of group) picked.add(i);
    if (picked.size === count) break;
  }
  if (count < 1 || count >= problems.length || picked.size === 0) {
    throw new Error(`holding out ${fraction} of ${problems.length} problems leaves no seeds or no validation problems (problems that share content stay together)`);
  }
  return { seeds: problems.filter((_, i) => !picked.has(i)), validation: problems.filter((_, i) => picked.has(i)) };
}
