import type { SftPair } from '../train/sft';
import { parseJsonl } from './jsonl';

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

export function sftPairsFromJsonl(jsonl: string): { pairs: SftPair[]; errors: { line: number; reason: string }[] } {
  const { records, errors } = parseJsonl(jsonl);
  const pairs: SftPair[] = [];
  for (const { line, value } of records) {
    const p = recordToPair(value);
    if (typeof p === 'string') errors.push({ line, reason: p });
    else pairs.push(p);
  }
  errors.sort((a, b) => a.line - b.line);
  return { pairs, errors };
}
