/**
 * Prompt → response pairs for supervised fine-tuning: the pair itself, a seed file's records
 * read as pairs (with a reason for every record that is not one), and a Problem as a pair.
 */
import { readJsonl } from './jsonl';
import type { Problem } from './problem';

/** One supervised example: the loss covers only the response (and its closing EOS). */
export interface SftPair {
  prompt: string;
  response: string;
}

const PROMPT_FIELDS = ['question', 'problem', 'prompt', 'instruction', 'input', 'text'] as const;
const RESPONSE_FIELDS = ['answer', 'solution', 'canonical_solution', 'response', 'output', 'completion', 'code', 'final_answer'] as const;

function text(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return null;
}

/**
 * A prompt → response pair from a seed record (GSM8K question/answer, MATH problem/solution,
 * HumanEval and MBPP+ prompt/canonical_solution, generic question/answer), or the reason it
 * has none.
 */
export function recordToPair(r: Record<string, unknown>): SftPair | string {
  const promptKey = PROMPT_FIELDS.find((k) => text(r[k]));
  const responseKey = RESPONSE_FIELDS.find((k) => text(r[k]));
  if (!promptKey) return `no prompt field (looked for ${PROMPT_FIELDS.join(', ')})`;
  if (!responseKey) return `no response field (looked for ${RESPONSE_FIELDS.join(', ')})`;
  const prompt = text(r[promptKey])!;
  const response = text(r[responseKey])!;
  if (!prompt.trim()) return `empty "${promptKey}"`;
  if (!response.trim()) return `empty "${responseKey}"`;
  // Code seeds give a function header as the prompt and its body as the solution.
  return { prompt, response };
}

export interface SftPairsReport {
  pairs: SftPair[];
  errors: { line: number; reason: string }[];
  /** Set when the file is not text: nothing was read. */
  refused?: string;
}

/** Prompt → response pairs of a JSONL file read in chunks (the seed importer's reader). */
export async function readSftPairs(chunks: AsyncIterable<Uint8Array>): Promise<SftPairsReport> {
  const out: SftPairsReport = { pairs: [], errors: [] };
  for await (const ev of readJsonl(chunks)) {
    if ('refused' in ev) return { ...out, refused: ev.refused };
    if ('error' in ev) {
      out.errors.push({ line: ev.line, reason: ev.error });
      continue;
    }
    const p = recordToPair(ev.value);
    if (typeof p === 'string') out.errors.push({ line: ev.line, reason: p });
    else out.pairs.push(p);
  }
  return out;
}

/** A problem read with a field mapping (which always gives an answer or a solution), as a pair: its statement → its worked solution, or its answer. */
export function problemToPair(p: Problem): SftPair {
  return { prompt: p.statement, response: p.solution ?? (p.kind === 'math' ? (p.answer ?? '') : '') };
}
