/**
 * What a Challenger proposes before the loop rewards anything: math proposals sampled from
 * prompts drawn as the loop's first step draws them (reference seeds from the bank), read as
 * the environment reads them — the tags parsed, the question's expression and its curriculum
 * level, the claimed answer against the expression's value, and whether the expression is
 * one the seeds already hold. A warm-up that taught "harder means another seed" shows here as
 * seeds' expressions at the seeds' levels.
 */
import type { Problem } from '../data/problem';
import { judgeMath } from '../verify/math';
import { ProblemBank } from '../sage/bank';
import { parseOutput } from '../sage/parse';
import { OUTPUTS, referenceList, render, type Templates } from '../sage/templates';
import { computedAnswer } from '../sage/validators';

/** One proposal as the environment reads it. */
export interface ProposalReading {
  text: string;
  /** The output holds the Challenger's tags (a question and an answer). */
  parsed: boolean;
  question: string | null;
  claimed: string | null;
  /** The expression read from the question (a curriculum style, or a trailing `…=?`), when there is one. */
  expression: string | null;
  /** The curriculum level of the question's style; null when it is in none. */
  level: number | null;
  /** The expression's value; null when it does not evaluate (with `error`) or there is none. */
  value: string | null;
  error: string | null;
  /** The claimed answer equals the value (null without a value). */
  right: boolean | null;
  /** The expression is none of the seeds' (null without an expression). */
  novel: boolean | null;
  /** Operations in the expression (+ − × ÷): the seeds' have one; levels 3-5 two to four. */
  operations: number | null;
}

/** An expression as a key: spacing aside. */
export const expressionKey = (expression: string): string => expression.replace(/\s+/g, '');

/** How many operations an expression holds (+, -, *, /), whatever its style. */
export const countOperations = (expression: string): number => (expression.match(/[+\-*/]/g) ?? []).length;

/** A Challenger's math output read; `seedExpressions` holds the seeds' expression keys. */
export function readProposal(text: string, seedExpressions: ReadonlySet<string>): ProposalReading {
  const p = parseOutput(text, OUTPUTS.challenger);
  const question = p.format > 0 ? (p.fields.question?.trim() ?? null) : null;
  const claimed = p.format > 0 ? (p.fields.answer?.trim() ?? null) : null;
  const none = { expression: null, level: null, value: null, error: null, right: null, novel: null, operations: null };
  if (!question) return { text, parsed: p.format > 0, question, claimed, ...none };
  const read = computedAnswer(question);
  if (!read) return { text, parsed: true, question, claimed, ...none };
  if ('error' in read) {
    // The expression is read but does not evaluate (negative, a fraction): its text is in the error.
    return { text, parsed: true, question, claimed, ...none, error: read.error };
  }
  const right = claimed !== null && claimed !== '' && judgeMath(`<answer>${claimed}</answer>`, read.answer, { lastNumber: false }).correct;
  return {
    text, parsed: true, question, claimed,
    expression: read.expression, level: read.level ?? null, value: read.answer, error: null, right,
    novel: !seedExpressions.has(expressionKey(read.expression)),
    operations: countOperations(read.expression),
  };
}

export interface LevelTally {
  proposals: number;
  right: number;
  novel: number;
}

export interface ProbeTally {
  proposals: number;
  /** With the Challenger's tags. */
  parsed: number;
  /** With an expression that evaluates. */
  evaluated: number;
  /** Read but not evaluating (negative, not whole). */
  unusable: number;
  right: number;
  novel: number;
  /** Per curriculum level of the question's style; `other` for an expression in no curriculum style. */
  perLevel: Record<string, LevelTally>;
  /** Evaluated proposals per number of operations in their expression, whatever their style. */
  perOperations: Record<string, number>;
}

export function tallyProposals(readings: readonly ProposalReading[]): ProbeTally {
  const t: ProbeTally = { proposals: readings.length, parsed: 0, evaluated: 0, unusable: 0, right: 0, novel: 0, perLevel: {}, perOperations: {} };
  for (const r of readings) {
    if (r.parsed) t.parsed++;
    if (r.error) t.unusable++;
    if (r.value === null) continue;
    t.evaluated++;
    t.perOperations[String(r.operations)] = (t.perOperations[String(r.operations)] ?? 0) + 1;
    const level = (t.perLevel[r.level === null ? 'other' : String(r.level)] ??= { proposals: 0, right: 0, novel: 0 });
    level.proposals++;
    if (r.right) (t.right++, level.right++);
    if (r.novel) (t.novel++, level.novel++);
  }
  return t;
}

/**
 * `n` Challenger prompts drawn as the loop's first step draws them: each proposal's kind from a
 * problem drawn from the bank (the seeds), its references drawn uniformly among that kind. Math only.
 */
export function probePrompts(seeds: readonly Problem[], n: number, o: { templates: Templates; references: number }, random: () => number): string[] {
  const math = seeds.filter((p) => p.kind === 'math');
  if (!math.length) throw new Error('the Challenger probe reads math proposals: the seeds hold no math problem');
  const { bank } = ProblemBank.fromSeeds(math, { alpha: 0, nearDuplicate: 1 });
  return Array.from({ length: n }, () =>
    render(o.templates.challenger, { references: referenceList(bank.sample(o.references, random).map((e) => e.problem), o.templates), kind: 'math' }),
  );
}

/** The tally as lines: counts and shares, then a row per level. */
export function probeTable(t: ProbeTally): string {
  const share = (k: number, n: number) => (n ? `${((100 * k) / n).toFixed(1)}%` : '-');
  const lines = [
    `proposals ${t.proposals} · parsed ${t.parsed} (${share(t.parsed, t.proposals)}) · an expression that evaluates ${t.evaluated} (${share(t.evaluated, t.proposals)}) · read but unusable ${t.unusable}`,
    `of those evaluated: right answer ${t.right} (${share(t.right, t.evaluated)}) · an expression no seed holds ${t.novel} (${share(t.novel, t.evaluated)})`,
    'level  proposals  share  right answer  novel expression',
  ];
  const order = (k: string) => (k === 'other' ? Infinity : Number(k));
  for (const [level, l] of Object.entries(t.perLevel).sort(([a], [b]) => order(a) - order(b))) {
    lines.push(`${(level === 'other' ? 'other' : `L${level}`).padEnd(5)}  ${String(l.proposals).padStart(9)}  ${share(l.proposals, t.evaluated).padStart(5)}  ${`${l.right} (${share(l.right, l.proposals)})`.padStart(12)}  ${`${l.novel} (${share(l.novel, l.proposals)})`.padStart(16)}`);
  }
  const ops = Object.entries(t.perOperations).sort(([a], [b]) => Number(a) - Number(b));
  if (ops.length) lines.push(`operations in the expression (any style): ${ops.map(([k, n]) => `${k}: ${n} (${share(n, t.evaluated)})`).join(', ')}`);
  return lines.join('\n');
}

/** The loop's verdict on a proposal as a class: admitted, or the reason it was refused ("claims 9, but 3+9 = 12" → wrong claim). */
export function verdictClass(verdict: string | undefined): string {
  if (!verdict) return 'no verdict';
  const m = /^rejected: (.*)$/.exec(verdict);
  if (!m) return verdict.split(':')[0]!.trim();
  const reason = m[1]!;
  if (/^claims /.test(reason)) return 'refused: wrong claim';
  if (/^the answer .* does not parse$/.test(reason)) return 'refused: answer does not parse';
  // The environment's evaluation names the expression first ("5*(1+0)-3*5 is negative", "9*(4/19)+14: 4/19 is not an integer").
  if (/^[\d(]/.test(reason)) return 'refused: does not evaluate';
  return `refused: ${reason.split(/[:(,]/)[0]!.trim()}`;
}
