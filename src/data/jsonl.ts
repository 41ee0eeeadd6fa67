/** One JSON object per line; bad lines are reported with their number and reason, good lines kept. */
export interface JsonlResult<T = Record<string, unknown>> {
  records: { line: number; value: T }[];
  errors: { line: number; reason: string }[];
}

export function parseJsonl(text: string): JsonlResult {
  const out: JsonlResult = { records: [], errors: [] };
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const s = raw.trim();
    if (!s) return;
    let value: unknown;
    try {
      value = JSON.parse(s);
    } catch (e) {
      out.errors.push({ line, reason: `not valid JSON (${(e as Error).message})` });
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      out.errors.push({ line, reason: `expected a JSON object, got ${Array.isArray(value) ? 'an array' : typeof value}` });
      return;
    }
    out.records.push({ line, value: value as Record<string, unknown> });
  });
  return out;
}
