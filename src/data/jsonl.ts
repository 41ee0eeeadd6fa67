/**
 * One JSON object per line, read in chunks: each line is a record or a numbered reason;
 * nothing throws. The one reader behind seed import, SFT pairs and the CLIs.
 */
import { readLines } from './lines';

export type JsonlEvent =
  | { line: number; value: Record<string, unknown> }
  | { line: number; error: string }
  | { refused: string };

/** Python's `json.dumps` writes these for float('inf') and float('nan'); MBPP+ inputs hold them. */
const PY_NUMBER = /-?Infinity|NaN/y;
const PY_VALUES: Record<string, number> = { Infinity: Infinity, '-Infinity': -Infinity, NaN: NaN };
/** Stands for a Python number while JSON.parse runs; no JSON text yields a string starting with NUL. */
const MARK = '\u0000py:';

/**
 * Rewrites bare Infinity/NaN outside strings as marked strings, or returns null when there
 * are none (the line's JSON error stands).
 */
function markPythonNumbers(s: string): string | null {
  let out = '';
  let last = 0;
  let found = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"') {
      // Skip the string, honouring escapes.
      for (i++; i < s.length && s[i] !== '"'; i++) if (s[i] === '\\') i++;
      continue;
    }
    if (c !== '-' && c !== 'I' && c !== 'N') continue;
    PY_NUMBER.lastIndex = i;
    const m = PY_NUMBER.exec(s);
    if (!m) continue;
    out += `${s.slice(last, i)}"\\u0000py:${m[0]}"`; // JSON text spells MARK's NUL as an escape
    i += m[0].length - 1;
    last = i + 1;
    found = true;
  }
  return found ? out + s.slice(last) : null;
}

function revive(_key: string, v: unknown): unknown {
  return typeof v === 'string' && v.startsWith(MARK) ? PY_VALUES[v.slice(MARK.length)] : v;
}

/** A line's JSON object, or why it is not one. */
export function parseJsonLine(text: string): { value: Record<string, unknown> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const marked = markPythonNumbers(text);
    try {
      if (marked === null) throw e;
      value = JSON.parse(marked, revive);
    } catch {
      return { error: `not valid JSON (${(e as Error).message})` };
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: `expected a JSON object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}` };
  }
  return { value: value as Record<string, unknown> };
}

/** The records of a JSONL file; blank lines are skipped silently. */
export async function* readJsonl(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<JsonlEvent> {
  for await (const ev of readLines(chunks)) {
    if (!('text' in ev)) {
      yield ev;
      continue;
    }
    const s = ev.text.trim();
    if (!s) continue;
    yield { line: ev.line, ...parseJsonLine(s) };
  }
}
