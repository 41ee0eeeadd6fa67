/**
 * Output parsers of the roles: the content of expected tags and a format score in [0, 1].
 * Linear scans with indexOf (no backtracking regular expressions), so junk, unclosed and
 * nested tags and megabytes of output cost time proportional to their length and never throw.
 */

export interface TagSpec {
  name: string;
  /** Absent → format 0 for the whole output. */
  required: boolean;
}

export interface OutputSpec {
  tags: readonly TagSpec[];
  /** Free text (reasoning) allowed outside the tags; otherwise it costs format. */
  textOutside: boolean;
}

export interface Parsed {
  /** Content of the first well-formed occurrence of each tag found, trimmed. */
  fields: Record<string, string>;
  /** 1 for a clean output; each defect takes a share away; 0 when a required tag is missing. */
  format: number;
  /** What cost format, for transcripts. */
  defects: string[];
}

/** Every `<name>` … `</name>` pair, in order, without nesting; unclosed openings counted. */
function occurrences(text: string, name: string): { spans: [number, number, number, number][]; unclosed: number; nested: boolean } {
  const open = `<${name}>`;
  const close = `</${name}>`;
  const spans: [number, number, number, number][] = [];
  let unclosed = 0;
  let nested = false;
  let at = text.indexOf(open);
  while (at >= 0) {
    const contentStart = at + open.length;
    const end = text.indexOf(close, contentStart);
    if (end < 0) {
      unclosed++;
      break;
    }
    const inner = text.indexOf(open, contentStart);
    if (inner >= 0 && inner < end) nested = true;
    spans.push([at, contentStart, end, end + close.length]);
    at = text.indexOf(open, end + close.length);
  }
  return { spans, unclosed, nested };
}

/** Share of the format score each kind of defect costs. */
const PENALTY = { repeated: 0.25, malformed: 0.25, outside: 0.25, empty: 0.25 } as const;

export function parseOutput(text: string, spec: OutputSpec): Parsed {
  const fields: Record<string, string> = {};
  const defects: string[] = [];
  let format = 1;
  const covered: [number, number][] = [];
  let missingRequired = false;
  for (const tag of spec.tags) {
    const { spans, unclosed, nested } = occurrences(text, tag.name);
    if (!spans.length) {
      if (tag.required) {
        missingRequired = true;
        defects.push(unclosed ? `<${tag.name}> never closed` : `no <${tag.name}>`);
      }
      continue;
    }
    const [, start, end] = spans[0]!;
    fields[tag.name] = text.slice(start, end).trim();
    for (const [a, , , b] of spans) covered.push([a, b]);
    if (spans.length > 1) {
      format -= PENALTY.repeated;
      defects.push(`<${tag.name}> ${spans.length} times`);
    }
    if (unclosed || nested) {
      format -= PENALTY.malformed;
      defects.push(`<${tag.name}> ${nested ? 'nested' : 'left open'}`);
    }
    if (!fields[tag.name]) {
      format -= PENALTY.empty;
      defects.push(`<${tag.name}> empty`);
    }
  }
  if (missingRequired) return { fields, format: 0, defects };
  if (!spec.textOutside) {
    covered.sort((x, y) => x[0] - y[0]);
    let pos = 0;
    let outside = false;
    for (const [a, b] of covered) {
      if (a > pos && text.slice(pos, a).trim()) outside = true;
      pos = Math.max(pos, b);
    }
    if (text.slice(pos).trim()) outside = true;
    if (outside) {
      format -= PENALTY.outside;
      defects.push('text outside the tags');
    }
  }
  return { fields, format: Math.max(0, format), defects };
}

/**
 * A Critic's `<score>N</score>` with N from 1 to 10, normalised to s = (N − 1) / 9 and
 * clamped to [0, 1]; null when there is no number to read.
 */
export function criticScore(content: string | undefined): number | null {
  if (content === undefined) return null;
  const m = /^\s*([+-]?\d{1,3}(?:\.\d{1,4})?)\s*(?:\/\s*10)?\s*$/.exec(content.length > 64 ? '' : content);
  if (!m) return null;
  return Math.min(1, Math.max(0, (Number(m[1]) - 1) / 9));
}
