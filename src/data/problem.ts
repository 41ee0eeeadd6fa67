/**
 * The one Problem type every seed format becomes, and the per-record format detection:
 * GSM8K, MATH / MATH-500, HumanEval, MBPP, MBPP+, the demo curriculum, and generic
 * question/answer records with their common field-name variants, or a field mapping that
 * overrides detection.
 */
import { extractAnswer } from '../verify/math';
import type { CodeTests } from '../verify/python/verdict';

export type Format = 'curriculum' | 'gsm8k' | 'math' | 'humaneval' | 'mbpp' | 'mbppplus' | 'qa' | 'question' | 'mapped';

interface ProblemBase {
  id: string;
  /** File (or set) the problem came from. */
  source: string;
  format: Format;
  /** What the solver is given: a question, or a code prompt. */
  statement: string;
  /** A worked solution (math) or the canonical code (code), when the record has one. */
  solution?: string;
  /** Difficulty: the curriculum's level, MATH's "Level N". */
  level?: number;
  /** The record as read, kept for export. */
  raw: Record<string, unknown>;
}

export interface MathProblem extends ProblemBase {
  kind: 'math';
  /**
   * The reference final answer; absent for a question alone (format 'question'), which only a
   * validator-free method (MAE, whose Judge scores the answers) can train on.
   */
  answer?: string;
  /** The curriculum's checkable form: an integer expression whose value is the answer. */
  expression?: string;
}

export interface CodeProblem extends ProblemBase {
  kind: 'code';
  tests: CodeTests;
}

export type Problem = MathProblem | CodeProblem;

/** Which record fields play which part, for layouts detection does not know. */
export interface FieldMapping {
  question: string;
  answer?: string;
  solution?: string;
  context?: string;
  id?: string;
}

export const MAPPING_KEYS: readonly (keyof FieldMapping)[] = ['question', 'answer', 'solution', 'context', 'id'];

/** Parses `question=q,answer=a` into a mapping, or says what is wrong with it. */
export function parseFieldMapping(spec: string): FieldMapping | string {
  const out: Record<string, string> = {};
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const field = part.slice(eq + 1).trim();
    if (eq < 0 || !field) return `"${part}" is not ROLE=FIELD`;
    if (!(MAPPING_KEYS as readonly string[]).includes(key)) return `unknown role "${key}" (roles: ${MAPPING_KEYS.join(', ')})`;
    out[key] = field;
  }
  if (!out.question) return 'a mapping needs question=FIELD';
  if (!out.answer && !out.solution) return 'a mapping needs answer=FIELD or solution=FIELD';
  return out as unknown as FieldMapping;
}

const QUESTION_FIELDS = ['question', 'problem', 'prompt', 'input'] as const;
const ANSWER_FIELDS = ['answer', 'final_answer', 'solution', 'output', 'target'] as const;
const CONTEXT_FIELDS = ['body', 'context', 'passage'] as const;
const ID_FIELDS = ['id', 'task_id', 'unique_id'] as const;

/** Field lookup by lower-cased name ("Question" and "QUESTION" are "question"). */
class Fields {
  private readonly byName = new Map<string, string>();

  constructor(readonly record: Record<string, unknown>) {
    for (const k of Object.keys(record)) if (!this.byName.has(k.toLowerCase())) this.byName.set(k.toLowerCase(), k);
  }

  has(name: string): boolean {
    return this.byName.has(name.toLowerCase());
  }

  get(name: string): unknown {
    const k = this.byName.get(name.toLowerCase());
    return k === undefined ? undefined : this.record[k];
  }

  /** The first of `names` present, with its name. */
  first(names: readonly string[]): { name: string; value: unknown } | null {
    for (const name of names) if (this.has(name)) return { name, value: this.get(name) };
    return null;
  }

  /** A text field: a string, or a finite number written out; a reason otherwise. */
  text(name: string): string | { error: string } {
    const v = this.get(name);
    if (typeof v === 'string') return v.trim() ? v : { error: `empty "${name}"` };
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    if (v === undefined) return { error: `no "${name}" field` };
    return { error: `"${name}" is ${describe(v)}, expected text` };
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `a list of ${v.length}`;
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** An answer value: text, a number, or a one-element list of either. */
function answerText(name: string, v: unknown): string | { error: string } {
  if (v === undefined) return { error: `no "${name}" field` };
  if (Array.isArray(v)) {
    if (v.length !== 1) return { error: `"${name}" is a list of ${v.length} values, expected one answer` };
    return answerText(name, v[0]);
  }
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : { error: `"${name}" is not a finite number` };
  if (typeof v === 'string') return v.trim() ? v.trim() : { error: `empty "${name}"` };
  return { error: `"${name}" is ${describe(v)}, expected an answer` };
}

/**
 * The final answer of a solution field: an explicit `\boxed{}` or `#### N`, never a guess
 * (a bare "the last number" of a solution is not a reference answer).
 */
function answerOfSolution(solution: string): string | null {
  if (!/\\boxed|\\fbox|####/.test(solution)) return null;
  return extractAnswer(solution, { lastNumber: false });
}

const fail = (error: string) => ({ error });
type Detected = { problem: Problem } | { error: string };

function idOf(f: Fields, fallback: string): string {
  const found = f.first(ID_FIELDS);
  return found && (typeof found.value === 'string' || typeof found.value === 'number') ? String(found.value) : fallback;
}

function withContext(f: Fields, question: string, contextField?: string): string {
  const c = contextField ? f.get(contextField) : f.first(CONTEXT_FIELDS)?.value;
  return typeof c === 'string' && c.trim() ? `${c.trim()}\n${question}` : question;
}

function levelOf(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  const m = typeof v === 'string' ? /(\d+)/.exec(v) : null; // MATH: "Level 3"
  return m ? Number(m[1]) : undefined;
}

/** The name the first `def` defines, or null. */
function definedFunction(code: string): string | null {
  return /^\s*def\s+([A-Za-z_]\w*)\s*\(/m.exec(code)?.[1] ?? null;
}

function codeProblem(base: Omit<ProblemBase, 'format' | 'statement'>, format: Format, statement: string, tests: CodeTests): Detected {
  return { problem: { ...base, kind: 'code', format, statement, tests } };
}

function mathProblem(base: Omit<ProblemBase, 'format' | 'statement'>, format: Format, statement: string, answer: string | undefined, extra: Partial<MathProblem> = {}): Detected {
  return { problem: { ...base, ...extra, kind: 'math', format, statement, ...(answer === undefined ? {} : { answer }) } };
}

/** Problems that can be checked: code (its tests) and math with a reference answer. */
export function hasReference(p: Problem): boolean {
  return p.kind === 'code' || p.answer !== undefined;
}

function detectCode(f: Fields, base: Omit<ProblemBase, 'format' | 'statement'>): Detected | null {
  const str = (name: string) => (typeof f.get(name) === 'string' ? (f.get(name) as string) : null);
  // HumanEval
  if (f.has('test') && f.has('entry_point') && f.has('prompt')) {
    const prompt = str('prompt');
    const test = str('test');
    const entryPoint = str('entry_point');
    if (!prompt?.trim() || !test?.trim() || !entryPoint?.trim()) return fail('HumanEval record: "prompt", "test" and "entry_point" must be non-empty text');
    if (!/\bdef\s+check\s*\(/.test(test)) return fail('HumanEval record: "test" defines no check(candidate)');
    return codeProblem({ ...base, solution: str('canonical_solution') ?? undefined }, 'humaneval', prompt, { style: 'check', entryPoint, test });
  }
  // MBPP+
  if (f.has('base_input') && f.has('entry_point')) {
    const inputs = f.get('base_input');
    const entryPoint = str('entry_point');
    const solution = str('canonical_solution');
    const prompt = str('prompt');
    if (!Array.isArray(inputs) || !inputs.every(Array.isArray)) return fail('MBPP+ record: "base_input" must be a list of argument lists');
    if (!entryPoint?.trim() || !solution?.trim() || !prompt?.trim()) return fail('MBPP+ record: "prompt", "entry_point" and "canonical_solution" must be non-empty text');
    const atol = f.get('atol') ?? 0;
    if (typeof atol !== 'number' || !(atol >= 0)) return fail('MBPP+ record: "atol" must be a non-negative number');
    return codeProblem({ ...base, solution }, 'mbppplus', prompt, { style: 'io', entryPoint, inputs: inputs as unknown[][], atol });
  }
  // MBPP
  if (f.has('test_list')) {
    const asserts = f.get('test_list');
    const statement = str('text') ?? str('prompt');
    const code = str('code') ?? str('canonical_solution');
    if (!Array.isArray(asserts) || !asserts.length || !asserts.every((a) => typeof a === 'string')) return fail('MBPP record: "test_list" must be a non-empty list of assert statements');
    if (!statement?.trim()) return fail('MBPP record: no "text" or "prompt"');
    const entryPoint = (code && definedFunction(code)) ?? /^\s*assert\s+(?:not\s+)?\(?\s*(?:math\.isclose\()?\s*([A-Za-z_]\w*)\s*\(/.exec(asserts[0] as string)?.[1];
    if (!entryPoint) return fail('MBPP record: cannot tell which function the tests call');
    const setup = str('test_setup_code') ?? undefined;
    return codeProblem({ ...base, solution: code ?? undefined }, 'mbpp', statement, {
      style: 'asserts',
      entryPoint,
      asserts: asserts as string[],
      setup: setup?.trim() ? setup : undefined,
    });
  }
  return null;
}

function detectMath(f: Fields, base: Omit<ProblemBase, 'format' | 'statement'>): Detected | null {
  // The demo curriculum: question, answer and the checkable expression.
  if (f.has('expression') && f.has('question') && f.has('answer')) {
    const q = f.text('question');
    const a = answerText('answer', f.get('answer'));
    const e = f.text('expression');
    for (const r of [q, a, e]) if (typeof r !== 'string') return r;
    return mathProblem({ ...base, level: levelOf(f.get('level')) }, 'curriculum', q as string, a as string, { expression: e as string });
  }
  // GSM8K: the answer is a worked solution ending "#### N".
  if (f.has('question') && typeof f.get('answer') === 'string' && /####/.test(f.get('answer') as string)) {
    const q = f.text('question');
    if (typeof q !== 'string') return q;
    const worked = f.get('answer') as string;
    const answer = extractAnswer(worked, { lastNumber: false });
    if (!answer) return fail('GSM8K record: nothing after "####"');
    return mathProblem({ ...base, solution: worked }, 'gsm8k', withContext(f, q), answer);
  }
  // MATH / MATH-500: problem, solution with \boxed{}, often an explicit answer.
  if (f.has('problem') && typeof f.get('solution') === 'string' && /\\boxed|\\fbox/.test(f.get('solution') as string)) {
    const q = f.text('problem');
    if (typeof q !== 'string') return q;
    const solution = f.get('solution') as string;
    const given = f.has('answer') ? answerText('answer', f.get('answer')) : null;
    const answer = typeof given === 'string' ? given : answerOfSolution(solution);
    if (!answer) return fail('MATH record: no \\boxed{} answer in "solution"');
    return mathProblem({ ...base, solution, level: levelOf(f.get('level')) }, 'math', withContext(f, q), answer);
  }
  // Generic question/answer, with the common field-name variants.
  const qField = f.first(QUESTION_FIELDS);
  const aField = f.first(ANSWER_FIELDS);
  if (!qField) return null;
  const q = f.text(qField.name);
  if (typeof q !== 'string') return q;
  // A question with no answer field: a problem only a validator-free run can use (the run says so).
  if (!aField) return mathProblem(base, 'question', withContext(f, q), undefined);
  return qaProblem(f, base, 'qa', withContext(f, q), aField.name);
}

/** A question/answer record: the answer field may be the answer or a worked solution holding it. */
function qaProblem(f: Fields, base: Omit<ProblemBase, 'format' | 'statement'>, format: Format, statement: string, answerField: string, solutionField?: string): Detected {
  const a = answerText(answerField, f.get(answerField));
  if (typeof a !== 'string') return a;
  const worked = solutionField ? f.text(solutionField) : null;
  if (worked !== null && typeof worked !== 'string') return worked;
  const fromSolution = answerOfSolution(a);
  if (fromSolution) return mathProblem({ ...base, solution: worked ?? a }, format, statement, fromSolution);
  return mathProblem({ ...base, solution: worked ?? undefined }, format, statement, a);
}

function mapped(f: Fields, base: Omit<ProblemBase, 'format' | 'statement'>, m: FieldMapping): Detected {
  const q = f.text(m.question);
  if (typeof q !== 'string') return q;
  const statement = withContext(f, q, m.context);
  if (m.answer) return qaProblem(f, base, 'mapped', statement, m.answer, m.solution);
  const solution = f.text(m.solution!);
  if (typeof solution !== 'string') return solution;
  const answer = answerOfSolution(solution);
  if (!answer) return fail(`no \\boxed{} or #### answer in "${m.solution}"`);
  return mathProblem({ ...base, solution }, 'mapped', statement, answer);
}

/**
 * The Problem a record describes, or the specific reason it describes none. `fallbackId`
 * names it when the record has no id; `mapping` replaces detection.
 */
export function recordToProblem(record: Record<string, unknown>, source: string, fallbackId: string, mapping?: FieldMapping): Detected {
  const f = new Fields(record);
  const base = { id: idOf(f, fallbackId), source, raw: record };
  if (mapping) return mapped(f, { ...base, id: mapping.id && f.has(mapping.id) ? String(f.get(mapping.id)) : base.id }, mapping);
  return detectCode(f, base) ?? detectMath(f, base) ?? fail(`no question field (looked for ${QUESTION_FIELDS.join(', ')}, or a known seed format)`);
}

/**
 * Statements compared for duplicates within a file: case and spacing do not make a problem
 * new. Seeds and validation are compared by content instead (content.ts).
 */
export function normaliseStatement(s: string): string {
  return s.replace(/\s+/g, ' ').trim().toLowerCase();
}
