/**
 * Math answers: the final answer extracted from a response or worked solution, normalised
 * (LaTeX, units, separators, mixed numbers), and judged equal to a reference numerically
 * within a relative tolerance or symbolically through mathjs. Expressions are parsed into a
 * whitelisted tree (numbers, arithmetic, a few functions, free variables) before anything
 * is evaluated, so no input runs code; every stage is bounded in size, so a hostile input
 * costs linear time at most.
 */
import { parse, type MathNode } from 'mathjs';
import { rng } from '../util/random';

export interface MathOptions {
  /** Take the last number in the text when no marked answer is found (default true). */
  lastNumber?: boolean;
  /** Relative tolerance of numeric equality (default 1e-6). */
  rtol?: number;
}

/** Text longer than this is cut to its end before extraction: a final answer is at the end. */
const MAX_TEXT = 100_000;
/** An extracted answer longer than this is compared as text only. */
const MAX_ANSWER = 500;
/** Nodes allowed in a parsed expression. */
const MAX_NODES = 300;

/** The contents of the `{…}` group starting at `open`, or null when it is not closed. */
function braceGroup(s: string, open: number): { body: string; end: number } | null {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '{') depth++;
    else if (s[i] === '}' && --depth === 0) return { body: s.slice(open + 1, i), end: i + 1 };
  }
  return null;
}

/** The last `\boxed{…}` (or `\fbox{…}`), nested braces included. */
export function lastBoxed(text: string): string | null {
  const at = Math.max(text.lastIndexOf('\\boxed'), text.lastIndexOf('\\fbox'));
  if (at < 0) return null;
  let i = text.indexOf(text.startsWith('\\boxed', at) ? '\\boxed' : '\\fbox', at);
  i += text.startsWith('\\boxed', at) ? 6 : 5;
  while (text[i] === ' ') i++;
  if (text[i] === '{') return braceGroup(text, i)?.body.trim() ?? null;
  // `\boxed 5`: the argument is the next token.
  return /^\S+/.exec(text.slice(i, i + MAX_ANSWER))?.[0] ?? null;
}

const NUMBER = /-?\d[\d,]*(?:\.\d+)?|-?\.\d+/g;

/**
 * The final answer of a response or worked solution: `<answer>…</answer>`, the last
 * `\boxed{}`, `#### N`, "the answer is …", or (unless disabled) the last number.
 */
export function extractAnswer(text: string, options: MathOptions = {}): string | null {
  const t = text.length > MAX_TEXT ? text.slice(-MAX_TEXT) : text;
  const tagAt = t.lastIndexOf('<answer>');
  if (tagAt >= 0) {
    const end = t.indexOf('</answer>', tagAt);
    const inner = t.slice(tagAt + 8, end < 0 ? undefined : end).trim();
    return lastBoxed(inner) ?? inner;
  }
  const boxed = lastBoxed(t);
  if (boxed !== null) return boxed;
  const hashes = t.lastIndexOf('####');
  if (hashes >= 0) {
    const rest = t.slice(hashes + 4).trim().split('\n')[0]!.trim();
    if (rest) return rest;
  }
  const said = t.toLowerCase().lastIndexOf('the answer is');
  if (said >= 0) {
    const rest = t.slice(said + 13, said + 13 + MAX_ANSWER).replace(/^[\s:]+/, '');
    // Up to the end of the sentence: a full stop followed by a space or the end, or a newline.
    const m = /^(.*?)(?:\.\s|\.?$|\n)/s.exec(rest);
    const answer = m?.[1]?.trim().replace(/^\$(.*)\$$/, '$1');
    if (answer) return answer;
  }
  if (options.lastNumber === false) return null;
  const numbers = t.slice(-10_000).match(NUMBER);
  return numbers ? numbers[numbers.length - 1]!.replace(/,/g, '') : null;
}

/** LaTeX commands dropped outright: spacing, sizing, degrees, percent and currency marks. */
const DROPPED = /\\[!,;: ]|\\(?:left|right|displaystyle|big|Big|bigl|bigr)\b|\^\s*\{?\\circ\}?|\\circ|°|\\%|%|\\\$|\$|~/g;
const TEXT_COMMANDS = /\\(?:text|textbf|textit|mbox|mathrm|mathbf|operatorname)\s*\{([^{}]*)\}/g;
/** Words after a number ("18 dollars", "5 cm^2", "270 degrees"): units, dropped. */
const TRAILING_UNITS = /(?<=[\d}.)])\s*(?:[a-zA-Z]{2,}\s*)+(?:\^\s*\{?\d\}?)?$/;
const FUNCTIONS = ['sqrt', 'nthRoot', 'cbrt', 'abs', 'sin', 'cos', 'tan', 'cot', 'sec', 'csc', 'log', 'exp'];
const CONSTANTS = new Set(['pi', 'e', 'i', 'Infinity']);

/** `\frac` and `\sqrt` take a `{group}` or one character as each argument. */
function latexArg(s: string, i: number): { body: string; end: number } | null {
  while (s[i] === ' ') i++;
  if (s[i] === '{') return braceGroup(s, i);
  return i < s.length ? { body: s[i]!, end: i + 1 } : null;
}

/** `\frac{a}{b}` → ((a)/(b)), `\sqrt{x}` → sqrt(x), `\sqrt[n]{x}` → nthRoot(x, n), innermost first. */
function expandFracSqrt(s: string): string {
  for (let guard = 0; guard < 100; guard++) {
    const m = /\\(frac|sqrt)(?![a-zA-Z])/.exec(s);
    if (!m) return s;
    let i = m.index + m[0].length;
    let out: string | null = null;
    let end = i;
    if (m[1] === 'frac') {
      const a = latexArg(s, i);
      const b = a && latexArg(s, a.end);
      if (a && b) {
        out = `((${a.body})/(${b.body}))`;
        end = b.end;
      }
    } else {
      while (s[i] === ' ') i++;
      let root: string | null = null;
      if (s[i] === '[') {
        const close = s.indexOf(']', i);
        if (close > 0) {
          root = s.slice(i + 1, close);
          i = close + 1;
        }
      }
      const x = latexArg(s, i);
      if (x) {
        out = root ? `nthRoot(${x.body}, ${root})` : `sqrt(${x.body})`;
        end = x.end;
      }
    }
    if (out === null) return s; // malformed: leave as text
    s = s.slice(0, m.index) + out + s.slice(end);
  }
  return s;
}

/**
 * A canonical text form of an answer: LaTeX turned into mathjs syntax where it can be,
 * units, separators and decorations removed. Equal answers often become equal strings;
 * the rest is left to `mathEqual`.
 */
export function normaliseAnswer(answer: string): string {
  let s = answer.trim();
  if (s.length > MAX_ANSWER) return s;
  // Matrix rows end in "\\", which must not be read as the spacing command "\ ".
  s = s.replace(/\\[dt]frac/g, '\\frac').replace(/\\\\/g, ' ;; ').replace(DROPPED, ' ');
  for (let i = 0; i < 5 && TEXT_COMMANDS.test(s); i++) s = s.replace(TEXT_COMMANDS, ' $1 ');
  s = s.replace(/\s+/g, ' ').trim();
  // "x = 5", "x \in [a, b]": the value of a single named unknown.
  s = s.replace(/^[a-zA-Z]\s*(?:=|\\in)\s*(?=[^=]*$)/, '');
  s = s.replace(TRAILING_UNITS, '').trim();
  // Thousands separators, where the whole answer is one grouped number.
  if (/^-?\d{1,3}(?:, ?\d{3})+(?:\.\d+)?$/.test(s)) s = s.replace(/, ?/g, '');
  // Mixed numbers: 2\frac{1}{2} and 3 1/2 are 2 + 1/2 and 3 + 1/2.
  s = s.replace(/(^|[^\d.\w])(\d+)\s*\\frac\s*\{?(\d+)\}?\s*\{?(\d+)\}?/g, '$1($2+$3/$4)');
  s = s.replace(/^(\d+) (\d+)\/(\d+)$/, '($1+$2/$3)');
  s = s.replace(/_\{(\w+)\}/g, '_$1'); // number bases: 4210_{5}
  s = expandFracSqrt(s);
  s = s
    .replace(/\\(?:cdot|times)/g, '*')
    .replace(/\\div/g, '/')
    .replace(/\\infty/g, 'Infinity')
    .replace(/\\(pi|sin|cos|tan|cot|sec|csc|log|ln|exp)(?![a-zA-Z])/g, (_, f: string) => (f === 'ln' ? 'log' : f))
    .replace(/\^\s*\{([^{}]*)\}/g, '^($1)');
  // Trailing ".0" and leading zeros of decimals are spelling, not value.
  s = s
    .replace(/(\d\.\d*?[1-9])0+(?!\d)/g, '$1')
    .replace(/(\d)\.0+(?!\d)/g, '$1')
    .replace(/(^|[^\d])\.(\d)/g, '$10.$2');
  return s.replace(/\s+/g, ' ').trim();
}

/** Top-level split on `sep` (outside brackets). */
function splitTop(s: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (depth === 0 && s.startsWith(sep, i)) {
      parts.push(s.slice(last, i).trim());
      last = i + sep.length;
    }
  }
  parts.push(s.slice(last).trim());
  return parts;
}

/** A tuple, interval, set, list or matrix: its brackets and items; null for one value. */
function structure(s: string): { open: string; close: string; items: string[]; ordered: boolean } | null {
  const matrix = /^\\begin\{([pbv]?matrix)\}(.*)\\end\{\1\}$/s.exec(s);
  if (matrix) return { open: 'matrix', close: '', items: matrix[2]!.split(/;;|&/).map((x) => x.trim()), ordered: true };
  const set = /^\\\{(.*)\\\}$/s.exec(s);
  if (set) return { open: '{', close: '}', items: splitTop(set[1]!, ',').flatMap(expandPm), ordered: false };
  const open = s[0];
  const close = s[s.length - 1];
  if (open && close && '([{'.includes(open) && ')]}'.includes(close)) {
    const inner = s.slice(1, -1);
    const items = splitTop(inner, ',');
    // "(x+1)" is one value in parentheses; a balanced inner text with a comma is a tuple.
    if (items.length > 1 && balanced(inner)) return { open, close, items, ordered: true };
    return null;
  }
  const items = splitTop(s, ',');
  if (items.length > 1) return { open: '', close: '', items: items.flatMap(expandPm), ordered: false };
  if (/\\pm/.test(s)) return { open: '', close: '', items: expandPm(s), ordered: false };
  return null;
}

function balanced(s: string): boolean {
  let depth = 0;
  for (const c of s) {
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c) && --depth < 0) return false;
  }
  return depth === 0;
}

/** `a \pm b` is the two values a + b and a - b. */
function expandPm(s: string): string[] {
  const parts = s.split('\\pm');
  if (parts.length !== 2) return [s];
  return [`${parts[0]}+(${parts[1]})`, `${parts[0]}-(${parts[1]})`];
}

/** The parsed expression when every node is whitelisted, with its free variables; null otherwise. */
function safeParse(s: string): { node: MathNode; variables: string[] } | null {
  if (s.length > MAX_ANSWER || /[=<>!:;'"`\[\]{}]|\\/.test(s)) return null;
  let node: MathNode;
  try {
    node = parse(s);
  } catch {
    return null;
  }
  const variables = new Set<string>();
  let count = 0;
  const ok = (n: MathNode): boolean => {
    if (++count > MAX_NODES) return false;
    switch (n.type) {
      case 'ConstantNode':
        return typeof (n as unknown as { value: unknown }).value === 'number';
      case 'SymbolNode': {
        const name = (n as unknown as { name: string }).name;
        if (!CONSTANTS.has(name)) {
          if (!/^[a-zA-Z]$/.test(name)) return false; // one-letter unknowns only
          variables.add(name);
        }
        return true;
      }
      case 'ParenthesisNode':
        return ok((n as unknown as { content: MathNode }).content);
      case 'OperatorNode': {
        const op = n as unknown as { fn: string; args: MathNode[] };
        return ['add', 'subtract', 'multiply', 'divide', 'pow', 'unaryMinus', 'unaryPlus'].includes(op.fn) && op.args.every(ok);
      }
      case 'FunctionNode': {
        const f = n as unknown as { fn: { name?: string }; args: MathNode[] };
        return FUNCTIONS.includes(f.fn.name ?? '') && f.args.every(ok);
      }
      default:
        return false;
    }
  };
  return ok(node) ? { node, variables: [...variables] } : null;
}

type Value = { re: number; im: number };

function evaluateAt(node: MathNode, scope: Record<string, number>): Value | null {
  try {
    const v: unknown = node.evaluate(scope);
    if (typeof v === 'number') return { re: v, im: 0 };
    if (v && typeof v === 'object' && 're' in v && 'im' in v) return { re: Number(v.re), im: Number(v.im) };
  } catch {
    // a domain error or the like: not comparable
  }
  return null;
}

function close(a: number, b: number, rtol: number): boolean {
  if (a === b) return true; // infinities
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= rtol * Math.max(Math.abs(a), Math.abs(b)) + 1e-12;
}

/** Probe points for free variables: the same for both sides, from a fixed seed. */
const PROBES = 3;

function scalarEqual(a: string, b: string, rtol: number): boolean {
  if (a.replace(/\s/g, '').toLowerCase() === b.replace(/\s/g, '').toLowerCase()) return true;
  // Whole numbers are exact: a tolerance would make 11111111100 equal to 11111111101.
  const int = /^-?\d+$/;
  if (int.test(a.trim()) && int.test(b.trim())) return BigInt(a.trim()) === BigInt(b.trim());
  const sidesA = a.split('=');
  const sidesB = b.split('=');
  if (sidesA.length === 2 && sidesB.length === 2) return scalarEqual(sidesA[0]!, sidesB[0]!, rtol) && scalarEqual(sidesA[1]!, sidesB[1]!, rtol);
  // "40_9" is a number in base 9: digits, not arithmetic.
  if (/_\w/.test(a) || /_\w/.test(b)) return false;
  const pa = safeParse(a);
  const pb = safeParse(b);
  if (!pa || !pb) return false;
  const variables = [...new Set([...pa.variables, ...pb.variables])];
  const random = rng(12345);
  for (let probe = 0; probe < (variables.length ? PROBES : 1); probe++) {
    const scope = Object.fromEntries(variables.map((v) => [v, 0.5 + 2 * random()]));
    const va = evaluateAt(pa.node, scope);
    const vb = evaluateAt(pb.node, scope);
    if (!va || !vb || !close(va.re, vb.re, rtol) || !close(va.im, vb.im, rtol)) return false;
  }
  return true;
}

function itemsEqual(a: string[], b: string[], ordered: boolean, rtol: number): boolean {
  if (a.length !== b.length) return false;
  if (ordered) return a.every((x, i) => answersEqual(x, b[i]!, rtol));
  const left = [...b];
  return a.every((x) => {
    const j = left.findIndex((y) => answersEqual(x, y, rtol));
    if (j >= 0) left.splice(j, 1);
    return j >= 0;
  });
}

function answersEqual(a: string, b: string, rtol: number): boolean {
  const unionA = splitTop(a, '\\cup');
  const unionB = splitTop(b, '\\cup');
  if (unionA.length > 1 || unionB.length > 1) return itemsEqual(unionA, unionB, true, rtol);
  const sa = structure(a);
  const sb = structure(b);
  if (sa || sb) {
    if (!sa || !sb) return false;
    return sa.open === sb.open && sa.close === sb.close && itemsEqual(sa.items, sb.items, sa.ordered, rtol);
  }
  return scalarEqual(a, b, rtol);
}

/** Whether two final answers are the same value (both are normalised first). */
export function mathEqual(a: string, b: string, options: MathOptions = {}): boolean {
  if (a.length > MAX_ANSWER || b.length > MAX_ANSWER) return a.trim() === b.trim();
  return answersEqual(normaliseAnswer(a), normaliseAnswer(b), options.rtol ?? 1e-6);
}

export interface MathVerdict {
  correct: boolean;
  /** The answer found in the response, or null when there is none. */
  extracted: string | null;
}

/** Judges a response (a model's full output) against a reference final answer. */
export function judgeMath(response: string, reference: string, options: MathOptions = {}): MathVerdict {
  const extracted = extractAnswer(response, options);
  return { correct: extracted !== null && mathEqual(extracted, reference, options), extracted };
}
