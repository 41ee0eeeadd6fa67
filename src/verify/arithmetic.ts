/**
 * Exact integer arithmetic over `+ - * /`, parentheses and unary minus: the checkable form of
 * the curriculum's problems. A hand-written parser, so a model-written expression is never
 * run as code; length and nesting are bounded, results must stay safe integers and division
 * must be exact.
 */
export type Evaluation = { value: number } | { error: string };

/** Longest expression accepted, in characters. */
export const MAX_EXPRESSION_LENGTH = 200;
/** Deepest nesting of parentheses and unary minus accepted. */
const MAX_DEPTH = 32;

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly src: string) {}

  parse(): number {
    const v = this.sum();
    this.skip();
    if (this.pos < this.src.length) throw new Error(`unexpected "${this.src[this.pos]}" at ${this.pos + 1}`);
    return v;
  }

  private skip(): void {
    while (this.src[this.pos] === ' ') this.pos++;
  }

  private peek(): string | undefined {
    this.skip();
    return this.src[this.pos];
  }

  private sum(): number {
    let v = this.product();
    for (let op = this.peek(); op === '+' || op === '-'; op = this.peek()) {
      this.pos++;
      const r = this.product();
      v = checked(op === '+' ? v + r : v - r);
    }
    return v;
  }

  private product(): number {
    let v = this.unary();
    for (let op = this.peek(); op === '*' || op === '/'; op = this.peek()) {
      this.pos++;
      const r = this.unary();
      if (op === '*') v = checked(v * r);
      else {
        if (r === 0) throw new Error('division by zero');
        if (v % r !== 0) throw new Error(`${v}/${r} is not an integer`);
        v = checked(v / r);
      }
    }
    return v;
  }

  private unary(): number {
    const c = this.peek();
    if (c === '-' || c === '(') {
      if (++this.depth > MAX_DEPTH) throw new Error(`nested deeper than ${MAX_DEPTH}`);
      this.pos++;
      let v: number;
      if (c === '-') v = checked(-this.unary());
      else {
        v = this.sum();
        if (this.peek() !== ')') throw new Error(`missing ")" at ${this.pos + 1}`);
        this.pos++;
      }
      this.depth--;
      return v;
    }
    const m = /^\d{1,15}/.exec(this.src.slice(this.pos, this.pos + 16));
    if (!m) throw new Error(c === undefined ? 'unexpected end' : `unexpected "${c}" at ${this.pos + 1}`);
    this.pos += m[0].length;
    return Number(m[0]);
  }
}

function checked(v: number): number {
  if (!Number.isSafeInteger(v)) throw new Error('result out of the safe integer range');
  return v === 0 ? 0 : v; // no -0
}

/** The exact integer value of `expr`, or why it has none. Never throws. */
export function evaluateExpression(expr: string): Evaluation {
  if (expr.length > MAX_EXPRESSION_LENGTH) return { error: `longer than ${MAX_EXPRESSION_LENGTH} characters` };
  // `×` and `÷` are how people (and models imitating them) write these operators.
  const src = expr.replace(/×/g, '*').replace(/÷/g, '/').trim();
  if (!src) return { error: 'empty expression' };
  try {
    return { value: new Parser(src).parse() };
  } catch (e) {
    return { error: (e as Error).message };
  }
}
