import type { Tokenizer } from './tokenizer';

/**
 * The text of a growing list of token ids, decoding a short window per new token instead of
 * the whole list (the approach of vLLM's incremental detokenizer). A token that ends inside a
 * multi-byte character decodes to U+FFFD; its text waits until a later token completes it.
 * The window starts one token before the new ones, so that tokenizers whose decoders look at
 * the previous token (leading spaces of SentencePiece pieces) decode as they would in full.
 */
export class IncrementalText {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  text = '';

  constructor(private readonly tokenizer: Tokenizer) {}

  /** Adds a token; returns the text it completed ('' while a character is incomplete). */
  push(id: number): string {
    this.ids.push(id);
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset));
    if (full.length <= prefix.length || full.endsWith('\uFFFD')) return '';
    const added = full.slice(prefix.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    this.text += added;
    return added;
  }
}

/**
 * The end of the earliest stop string in `text` that ends within its last `fresh`
 * characters (those added since the previous check), or −1. A stop string may span tokens.
 */
export function findStop(text: string, fresh: number, stops: readonly string[]): number {
  let end = -1;
  for (const s of stops) {
    if (!s) continue;
    const i = text.indexOf(s, Math.max(0, text.length - fresh - s.length + 1));
    if (i >= 0 && (end < 0 || i + s.length < end)) end = i + s.length;
  }
  return end;
}
