import { describe, expect, it } from 'vitest';
import { findStop, IncrementalText } from './detokenize';
import { ByteTokenizer } from './tokenizer';

describe('incremental text', () => {
  it('holds back a character split across tokens until it is complete, and ends as the whole decode', () => {
    const tok = new ByteTokenizer();
    const ids = tok.encode('a é€ b');
    const text = new IncrementalText(tok);
    const added = ids.map((id) => text.push(id));
    // é is 2 bytes and € 3: their first bytes add nothing yet.
    expect(added).toEqual(['a', ' ', '', 'é', '', '', '€', ' ', 'b']);
    expect(text.text).toBe(tok.decode(ids));
    const special = new IncrementalText(tok);
    expect([tok.specials.im_start!, 104, 105].map((id) => special.push(id)).join('')).toBe('<|im_start|>hi');
  });
});

describe('stop strings', () => {
  it('finds the earliest stop string ending in the fresh characters, across earlier ones', () => {
    expect(findStop('<answer>42</answer> more', 4, ['</answer>'])).toBe(-1);
    expect(findStop('<answer>42</answer>', 2, ['</answer>'])).toBe(19);
    expect(findStop('xy', 1, ['xy'])).toBe(2);
    expect(findStop('abc', 3, ['c', 'ab', ''])).toBe(2);
    expect(findStop('abcabc', 1, ['abc'])).toBe(6);
  });
});
