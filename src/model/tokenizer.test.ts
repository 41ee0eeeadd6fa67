import { describe, expect, it } from 'vitest';
import { BYTE_VOCAB_SIZE } from './config';
import { ByteTokenizer, HFTokenizer, bytesToUnicode } from './tokenizer';
import { encodePair } from '../train/sft';

const SAMPLES = [
  '',
  'Hello, world!',
  '  leading and trailing spaces  ',
  'naïve café, Straße, Ελληνικά, русский',
  '日本語のテキストと中文',
  'emoji 👍🏽 family 👨‍👩‍👧 flag 🇫🇷',
  'combining: e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937',
  '\uFEFFstarts with a BOM',
  'def f(x):\n\tif x:\n\t\treturn "a\\tb"\r\n  # comment\n',
  'null\u0000byte and \u007f delete',
  'specials <|im_start|>user\nhi<|im_end|>\n<|eos|><|pad|><|bos|><|reserved_2|>',
  'almost special <|im_start| and <|im_end|>>',
];

describe('ByteTokenizer', () => {
  const tok = new ByteTokenizer();

  it('maps bytes to ids 0..255 and knows the specials', () => {
    expect(tok.vocabSize).toBe(BYTE_VOCAB_SIZE);
    expect(tok.encode('A\n')).toEqual([65, 10]);
    expect(tok.encode('é')).toEqual([0xc3, 0xa9]);
    expect(tok.specials).toMatchObject({ pad: 256, bos: 257, eos: 258, im_start: 259, im_end: 260 });
    expect(tok.tokenToId('<|im_start|>')).toBe(259);
    expect(tok.tokenToId('<|reserved_2|>')).toBe(263);
    expect(tok.tokenToId('a')).toBe(97);
    // GPT-2's printable stand-in for the space byte.
    expect(tok.tokenToId('Ġ')).toBe(32);
    expect(tok.tokenToId('<|nope|>')).toBeUndefined();
  });

  it('recognises special tokens in text', () => {
    expect(tok.encode('<|im_start|>hi<|im_end|>')).toEqual([259, 104, 105, 260]);
    expect(tok.encode('<|eos|>')).toEqual([258]);
    expect(tok.encode('<|im_start|')).toEqual(Array.from(new TextEncoder().encode('<|im_start|')));
  });

  it.each(SAMPLES)('round-trips %j', (s) => {
    const ids = tok.encode(s);
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < BYTE_VOCAB_SIZE)).toBe(true);
    expect(tok.decode(ids)).toBe(s);
  });

  it('decodes invalid UTF-8 to U+FFFD without throwing', () => {
    expect(tok.decode([0xff, 65, 0xc3])).toBe('\uFFFDA\uFFFD');
    // A multi-byte character cut by a special token does not swallow the special.
    expect(tok.decode([0xe6, 0x97, 259, 0xa5])).toBe('\uFFFD<|im_start|>\uFFFD');
    expect(tok.decode([])).toBe('');
  });

  it('refuses ids outside the vocabulary', () => {
    expect(() => tok.decode([264])).toThrow('token id 264 is outside the byte vocabulary (0..263)');
    expect(() => tok.decode([-1])).toThrow(RangeError);
  });

  it('uses the GPT-2 byte-to-unicode table', () => {
    const table = bytesToUnicode();
    expect(new Set(table).size).toBe(256);
    expect(table[33]).toBe('!');
    expect(table[32]).toBe('Ġ');
    expect(table[10]).toBe('Ċ');
    expect(table[0]).toBe('Ā');
    expect(table[0xad]).toBe('Ń');
  });

  it('exports tokenizer files that describe the same vocabulary', () => {
    const files = new ByteTokenizer({ modelMaxLength: 512 }).files();
    expect([...files.keys()].sort()).toEqual(['special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']);
    const tj = JSON.parse(files.get('tokenizer.json')!);
    expect(Object.keys(tj.model.vocab)).toHaveLength(256);
    expect(tj.model.merges).toEqual([]);
    expect(tj.added_tokens.map((t: { id: number }) => t.id)).toEqual([256, 257, 258, 259, 260, 261, 262, 263]);
    const tc = JSON.parse(files.get('tokenizer_config.json')!);
    expect(tc).toMatchObject({
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: '<|bos|>',
      eos_token: '<|eos|>',
      pad_token: '<|pad|>',
      model_max_length: 512,
    });
  });
});

describe('HFTokenizer', () => {
  const byteTok = new ByteTokenizer();
  const files = byteTok.files();
  const hf = HFTokenizer.fromJson(files.get('tokenizer.json')!, files.get('tokenizer_config.json'));

  it.each(SAMPLES)('loads the exported byte tokenizer and encodes %j identically', (s) => {
    expect(hf.encode(s)).toEqual(byteTok.encode(s));
    expect(hf.decode(hf.encode(s))).toBe(s);
  });

  it('agrees on specials, vocabulary size and lookups', () => {
    expect(hf.vocabSize).toBe(BYTE_VOCAB_SIZE);
    expect(hf.specials).toMatchObject({ pad: 256, bos: 257, eos: 258, '<|im_start|>': 259, '<|im_end|>': 260 });
    expect(hf.tokenToId('<|im_end|>')).toBe(260);
    expect(hf.tokenToId('Ġ')).toBe(32);
    for (let b = 0; b < 256; b++) expect(hf.decode([b])).toBe(byteTok.decode([b]));
    expect(hf.decode([])).toBe('');
  });

  it('re-exports its files', () => {
    const out = hf.files();
    expect(out.get('tokenizer.json')).toBe(files.get('tokenizer.json'));
    expect(out.get('tokenizer_config.json')).toBe(files.get('tokenizer_config.json'));
    expect(JSON.parse(out.get('special_tokens_map.json')!)).toEqual({
      bos_token: '<|bos|>',
      eos_token: '<|eos|>',
      pad_token: '<|pad|>',
    });
  });

  it('falls back to model config ids, and EOS for missing BOS/PAD', () => {
    const t = HFTokenizer.fromJson(files.get('tokenizer.json')!, undefined, { eos_token_id: 260 });
    expect(t.specials).toMatchObject({ eos: 260, bos: 260, pad: 260 });
    expect(JSON.parse(t.files().get('tokenizer_config.json')!)).toEqual({
      tokenizer_class: 'PreTrainedTokenizerFast',
      eos_token: '<|im_end|>',
    });
  });

  it('frames prompts through the chat template when the config has one, for sampling and SFT alike', () => {
    expect(hf.chatTemplate).toBeNull();
    expect(hf.encodePrompt('1+1=')).toEqual([257, ...hf.encode('1+1=')]);
    const chatml =
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + eos_token + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    const config = { ...JSON.parse(files.get('tokenizer_config.json')!), eos_token: '<|im_end|>', chat_template: chatml };
    const chat = HFTokenizer.fromJson(files.get('tokenizer.json')!, JSON.stringify(config));
    const framed = [259, ...chat.encode('user\n1+1='), 260, ...chat.encode('\n'), 259, ...chat.encode('assistant\n')];
    expect(chat.encodePrompt('1+1=')).toEqual(framed);
    // The pair's response closes with EOS (<|im_end|>, the end of the assistant's turn); only it is trained on.
    const seq = encodePair(chat, { prompt: '1+1=', response: '2' }, 64);
    expect(seq.ids).toEqual([...framed, 50, 260]);
    expect(seq.lossMask).toEqual([...framed.map(() => 0), 1, 1]);
    // Too long: the template's opening token and the prompt's end are kept.
    const cut = encodePair(chat, { prompt: 'x'.repeat(100), response: '2' }, 16);
    expect(cut.ids.length).toBe(16);
    expect(cut.ids[0]).toBe(259);
    expect(cut.ids.slice(-2)).toEqual([50, 260]);
    expect(() => HFTokenizer.fromJson(files.get('tokenizer.json')!, JSON.stringify({ ...config, chat_template: '{% if %}' }))).toThrow('chat_template does not parse');
  });

  it('refuses broken input with a reason', () => {
    expect(() => HFTokenizer.fromJson('{')).toThrow('tokenizer.json is not valid JSON');
    expect(() => HFTokenizer.fromJson('[]')).toThrow('tokenizer.json is not a JSON object');
    expect(() => HFTokenizer.fromJson(files.get('tokenizer.json')!)).toThrow('tokenizer has no eos token');
    expect(() => HFTokenizer.fromJson(files.get('tokenizer.json')!, 'nope')).toThrow('tokenizer_config.json is not valid JSON');
  });
});
