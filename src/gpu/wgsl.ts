/**
 * A minimal WGSL preprocessor for what `override` cannot express:
 *  - `#if NAME` / `#if !NAME` / `#else` / `#endif` (nestable): binding types, optional code.
 *  - `#for NAME in A..B` / `#endfor` (nestable): repeats the lines with `{{NAME}}` replaced
 *    by A, A+1, ..., B-1; A and B are integers or the names of numeric defines. Register
 *    tiles must be unrolled in the source: SwiftShader keeps arrays indexed inside loops in
 *    memory, which measured 9x slower than unrolled code.
 *  - `#include NAME`: the text of shaders/NAME.wgsl, for helpers shared between modules.
 *  - `{{NAME}}` outside a `#for` over NAME: the value of the numeric define NAME, for what must
 *    be a const-expression (a subgroup matrix's dimensions, which `override` cannot give).
 * Other numeric compile-time constants use WGSL `override` instead.
 */
export type Defines = Readonly<Record<string, boolean | number>>;

const FOR = /^\s*#for\s+(\w+)\s+in\s+(\w+)\.\.(\w+)\s*$/;
const ENDFOR = /^\s*#endfor\s*$/;

function bound(token: string, defines: Defines): number {
  if (/^\d+$/.test(token)) return Number(token);
  const v = defines[token];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`wgsl preprocess: #for bound "${token}" is not an integer define`);
  return v;
}

function expandLoops(lines: readonly string[], defines: Defines): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = FOR.exec(lines[i]!);
    if (!m) {
      if (ENDFOR.test(lines[i]!)) throw new Error('wgsl preprocess: #endfor without #for');
      out.push(lines[i]!);
      continue;
    }
    let depth = 1;
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (FOR.test(lines[j]!)) depth++;
      else if (ENDFOR.test(lines[j]!) && --depth === 0) break;
    }
    if (depth !== 0) throw new Error(`wgsl preprocess: unterminated #for ${m[1]}`);
    const body = expandLoops(lines.slice(i + 1, j), defines);
    const token = new RegExp(`\\{\\{${m[1]}\\}\\}`, 'g');
    for (let v = bound(m[2]!, defines); v < bound(m[3]!, defines); v++) {
      for (const line of body) out.push(line.replace(token, String(v)));
    }
    i = j;
  }
  return out;
}

const INCLUDE = /^\s*#include\s+(\w+)\s*$/;

function expandIncludes(lines: readonly string[], include: (name: string) => string, seen: string[]): string[] {
  return lines.flatMap((line) => {
    const m = INCLUDE.exec(line);
    if (!m) return [line];
    const name = m[1]!;
    if (seen.includes(name)) throw new Error(`wgsl preprocess: #include cycle ${[...seen, name].join(' -> ')}`);
    return expandIncludes(include(name).split('\n'), include, [...seen, name]);
  });
}

export function preprocess(
  source: string,
  defines: Defines = {},
  include: (name: string) => string = (name) => {
    throw new Error(`wgsl preprocess: #include ${name} without an include source`);
  },
): string {
  // Includes, then #if (its conditions are defines, never loop variables), then #for.
  const lines = expandIncludes(source.split('\n'), include, []);
  return substitute(expandLoops(resolveConditions(lines, defines), defines), defines).join('\n');
}

/** `{{NAME}}` left after the loops: a numeric define's value; any other name is an error. */
function substitute(lines: readonly string[], defines: Defines): string[] {
  return lines.map((line) =>
    line.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
      const v = defines[name];
      if (typeof v !== 'number') throw new Error(`wgsl preprocess: {{${name}}} is neither a #for variable nor a numeric define`);
      return String(v);
    }),
  );
}

function resolveConditions(lines: readonly string[], defines: Defines): string[] {
  const out: string[] = [];
  // Each frame: is this branch active, is the enclosing block active, was a branch taken.
  const stack: { active: boolean; parentActive: boolean; taken: boolean }[] = [];
  const active = () => (stack.length === 0 ? true : stack[stack.length - 1]!.active);
  lines.forEach((line, i) => {
    const directive = /^\s*#(if|else|endif)\b\s*(!?)\s*(\w*)\s*$/.exec(line);
    if (!directive) {
      if (/^\s*#/.test(line) && !FOR.test(line) && !ENDFOR.test(line)) {
        throw new Error(`wgsl preprocess: line ${i + 1}: unknown directive "${line.trim()}"`);
      }
      if (active()) out.push(line);
      return;
    }
    const [, kind, negate, name] = directive;
    if (kind === 'if') {
      if (!name) throw new Error(`wgsl preprocess: line ${i + 1}: #if needs a name`);
      const value = Boolean(defines[name]) !== (negate === '!');
      const parentActive = active();
      stack.push({ active: parentActive && value, parentActive, taken: value });
    } else if (kind === 'else') {
      const top = stack[stack.length - 1];
      if (!top) throw new Error(`wgsl preprocess: line ${i + 1}: #else without #if`);
      top.active = top.parentActive && !top.taken;
      top.taken = true;
    } else if (!stack.pop()) {
      throw new Error(`wgsl preprocess: line ${i + 1}: #endif without #if`);
    }
  });
  if (stack.length) throw new Error('wgsl preprocess: unterminated #if');
  return out;
}
