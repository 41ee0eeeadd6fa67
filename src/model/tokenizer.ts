import { Tokenizer as HFTokenizerImpl } from '@huggingface/tokenizers';
import { BYTE_VOCAB_SIZE } from './config';

/**
 * Text <-> token ids. `encode` never adds BOS/EOS itself: callers frame sequences with
 * `specials`, so the same code path works for the byte tokenizer and imported ones.
 */
import { readChatTemplate, type ChatTemplate } from './chatTemplate';

export interface Tokenizer {
  vocabSize: number;
  encode(text: string): number[];
  decode(ids: number[]): string;
  readonly specials: { pad: number; bos: number; eos: number; [name: string]: number };
  /** The checkpoint's chat template (tokenizer_config.json), null for none. */
  readonly chatTemplate: ChatTemplate | null;
  /**
   * A prompt as the model is trained and sampled on it: through the chat template as one user
   * turn with the assistant's turn opened where there is one, else BOS then its tokens. A
   * response follows it and ends with EOS.
   */
  encodePrompt(text: string): number[];
  tokenToId(token: string): number | undefined;
  /** Hugging Face tokenizer files (name -> JSON text) to ship with an exported checkpoint. */
  files(): Map<string, string>;
}

/** Special tokens of the byte vocabulary, ids 256..263 in order. */
export const BYTE_SPECIAL_TOKENS = [
  { key: 'pad', content: '<|pad|>' },
  { key: 'bos', content: '<|bos|>' },
  { key: 'eos', content: '<|eos|>' },
  { key: 'im_start', content: '<|im_start|>' },
  { key: 'im_end', content: '<|im_end|>' },
  { key: 'reserved_0', content: '<|reserved_0|>' },
  { key: 'reserved_1', content: '<|reserved_1|>' },
  { key: 'reserved_2', content: '<|reserved_2|>' },
] as const;

/**
 * GPT-2's reversible byte -> printable character map, used by Hugging Face byte-level
 * tokenizers so that every byte is a visible vocabulary entry.
 */
export function bytesToUnicode(): string[] {
  const direct: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) direct.push(b);
  for (let b = 0xa1; b <= 0xac; b++) direct.push(b);
  for (let b = 0xae; b <= 0xff; b++) direct.push(b);
  const map: string[] = new Array(256);
  let next = 0;
  for (let b = 0; b < 256; b++) {
    map[b] = String.fromCodePoint(direct.includes(b) ? b : 256 + next++);
  }
  return map;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Splits text around special-token strings, longest match first, like HF's added-token pass. */
function splitOnSpecials(text: string, pattern: RegExp, ids: Map<string, number>): (string | number)[] {
  const parts: (string | number)[] = [];
  let last = 0;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    parts.push(ids.get(m[0])!);
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

export interface ByteTokenizerOptions {
  /** Written to tokenizer_config.json; transformers warns when inputs exceed it. */
  modelMaxLength?: number;
}

/** UTF-8 bytes are ids 0..255; ids 256..263 are the special tokens above. */
export class ByteTokenizer implements Tokenizer {
  readonly vocabSize = BYTE_VOCAB_SIZE;
  readonly specials: { pad: number; bos: number; eos: number; [name: string]: number };
  private readonly specialIds = new Map<string, number>();
  private readonly specialById = new Map<number, string>();
  private readonly specialPattern: RegExp;
  private readonly byteChars = bytesToUnicode();
  private readonly byteCharIds = new Map<string, number>();
  private readonly encoder = new TextEncoder();
  // ignoreBOM keeps a leading U+FEFF as text instead of silently dropping it.
  private readonly decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

  constructor(private readonly options: ByteTokenizerOptions = {}) {
    const specials: Record<string, number> = {};
    BYTE_SPECIAL_TOKENS.forEach((t, i) => {
      specials[t.key] = 256 + i;
      this.specialIds.set(t.content, 256 + i);
      this.specialById.set(256 + i, t.content);
    });
    this.specials = specials as ByteTokenizer['specials'];
    const alternatives = [...this.specialIds.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.specialPattern = new RegExp(alternatives.join('|'), 'g');
    this.byteChars.forEach((c, b) => this.byteCharIds.set(c, b));
  }

  readonly chatTemplate = null;

  encodePrompt(text: string): number[] {
    return [this.specials.bos, ...this.encode(text)];
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    for (const part of splitOnSpecials(text, this.specialPattern, this.specialIds)) {
      if (typeof part === 'number') ids.push(part);
      else for (const b of this.encoder.encode(part)) ids.push(b);
    }
    return ids;
  }

  decode(ids: number[]): string {
    let out = '';
    let run: number[] = [];
    const flush = () => {
      if (run.length) out += this.decoder.decode(Uint8Array.from(run));
      run = [];
    };
    for (const id of ids) {
      if (Number.isInteger(id) && id >= 0 && id < 256) {
        run.push(id);
        continue;
      }
      const special = this.specialById.get(id);
      if (special === undefined) throw new RangeError(`token id ${id} is outside the byte vocabulary (0..${BYTE_VOCAB_SIZE - 1})`);
      flush();
      out += special;
    }
    flush();
    return out;
  }

  tokenToId(token: string): number | undefined {
    return this.specialIds.get(token) ?? this.byteCharIds.get(token);
  }

  files(): Map<string, string> {
    const addedTokens = BYTE_SPECIAL_TOKENS.map((t, i) => ({
      id: 256 + i,
      content: t.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    }));
    const vocab: Record<string, number> = {};
    this.byteChars.forEach((c, b) => (vocab[c] = b));
    // Byte-level BPE without merges and without the GPT-2 split regex: each byte becomes
    // exactly one token, which is what encode() does.
    const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false };
    const tokenizerJson = {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: null,
      pre_tokenizer: byteLevel,
      post_processor: null,
      decoder: byteLevel,
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges: [],
      },
    };
    const name = (key: string) => BYTE_SPECIAL_TOKENS.find((t) => t.key === key)!.content;
    const additional = BYTE_SPECIAL_TOKENS.filter((t) => !['pad', 'bos', 'eos'].includes(t.key)).map((t) => t.content);
    const tokenizerConfig: Record<string, unknown> = {
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: name('bos'),
      eos_token: name('eos'),
      pad_token: name('pad'),
      additional_special_tokens: additional,
      // Byte decoding is exact; the default cleanup would alter spaces before punctuation.
      clean_up_tokenization_spaces: false,
      added_tokens_decoder: Object.fromEntries(addedTokens.map(({ id, ...rest }) => [String(id), rest])),
    };
    if (this.options.modelMaxLength !== undefined) tokenizerConfig.model_max_length = this.options.modelMaxLength;
    const specialTokensMap = {
      bos_token: name('bos'),
      eos_token: name('eos'),
      pad_token: name('pad'),
      additional_special_tokens: additional,
    };
    return new Map([
      ['tokenizer.json', JSON.stringify(tokenizerJson, null, 2)],
      ['tokenizer_config.json', JSON.stringify(tokenizerConfig, null, 2)],
      ['special_tokens_map.json', JSON.stringify(specialTokensMap, null, 2)],
    ]);
  }
}

/** Ids the model config knows, used when tokenizer_config.json does not name a token. */
export interface SpecialIdFallback {
  bos_token_id?: number;
  eos_token_id?: number;
  pad_token_id?: number;
}

function tokenContent(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string') {
    return (v as { content: string }).content;
  }
  return undefined;
}

/** A Hugging Face tokenizer.json (BPE, WordPiece, Unigram...) for imported models. */
export class HFTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly specials: { pad: number; bos: number; eos: number; [name: string]: number };

  private constructor(
    private readonly impl: HFTokenizerImpl,
    private readonly tokenizerJson: string,
    private readonly tokenizerConfigJson: string | undefined,
    specials: { pad: number; bos: number; eos: number; [name: string]: number },
    /** bos/eos/pad token strings actually known, not the EOS stand-ins. */
    private readonly namedSpecials: Record<string, string>,
    readonly chatTemplate: ChatTemplate | null,
  ) {
    let maxId = -1;
    for (const id of impl.get_vocab(true).values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    this.specials = specials;
  }

  static fromJson(tokenizerJson: string, tokenizerConfigJson?: string, fallback: SpecialIdFallback = {}): HFTokenizer {
    let json: unknown;
    let config: unknown = {};
    try {
      json = JSON.parse(tokenizerJson);
    } catch (e) {
      throw new Error(`tokenizer.json is not valid JSON (${(e as Error).message})`);
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('tokenizer.json is not a JSON object');
    if (tokenizerConfigJson !== undefined) {
      try {
        config = JSON.parse(tokenizerConfigJson);
      } catch (e) {
        throw new Error(`tokenizer_config.json is not valid JSON (${(e as Error).message})`);
      }
      if (typeof config !== 'object' || config === null || Array.isArray(config)) {
        throw new Error('tokenizer_config.json is not a JSON object');
      }
    }
    const j = json as Record<string, unknown>;
    // The library expects every pipeline stage key to exist, even when null.
    const normalized = {
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      added_tokens: [],
      ...j,
    };
    let impl: HFTokenizerImpl;
    try {
      impl = new HFTokenizerImpl(normalized, config as object);
    } catch (e) {
      throw new Error(`tokenizer.json could not be loaded: ${(e as Error).message}`);
    }

    const cfg = config as Record<string, unknown>;
    const specials: Record<string, number> = {};
    const added = Array.isArray(j.added_tokens) ? (j.added_tokens as { id?: unknown; content?: unknown; special?: unknown }[]) : [];
    for (const t of added) {
      if (t.special === true && typeof t.content === 'string' && typeof t.id === 'number') specials[t.content] = t.id;
    }
    const lookup = (key: 'bos' | 'eos' | 'pad'): number | undefined => {
      const content = tokenContent(cfg[`${key}_token`]);
      const fromConfig = content === undefined ? undefined : impl.token_to_id(content);
      return fromConfig ?? fallback[`${key}_token_id`];
    };
    const eos = lookup('eos');
    if (eos === undefined) {
      throw new Error('tokenizer has no eos token: tokenizer_config.json names none and the model config gives no eos_token_id');
    }
    // Many chat models ship without BOS or PAD; EOS stands in, as transformers users commonly do.
    const named: Record<string, string> = {};
    for (const key of ['bos', 'eos', 'pad'] as const) {
      const id = lookup(key);
      const tok = id === undefined ? undefined : impl.id_to_token(id);
      if (tok !== undefined) named[`${key}_token`] = tok;
    }
    const bos = lookup('bos') ?? eos;
    const pad = lookup('pad') ?? eos;
    return new HFTokenizer(impl, tokenizerJson, tokenizerConfigJson, { ...specials, pad, bos, eos }, named, readChatTemplate(cfg, named));
  }

  encodePrompt(text: string): number[] {
    return this.chatTemplate ? this.encode(this.chatTemplate.wrapPrompt(text)) : [this.specials.bos, ...this.encode(text)];
  }

  encode(text: string): number[] {
    if (text.length === 0) return [];
    return this.impl.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: number[]): string {
    // The library rejects an empty list.
    if (ids.length === 0) return '';
    return this.impl.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  tokenToId(token: string): number | undefined {
    return this.impl.token_to_id(token);
  }

  files(): Map<string, string> {
    const files = new Map<string, string>([['tokenizer.json', this.tokenizerJson]]);
    const map = this.namedSpecials;
    // Without a tokenizer_config.json transformers would pick a tokenizer class from the model
    // type, which may add BOS or change decoding; the generic fast class keeps tokenizer.json as is.
    const config = this.tokenizerConfigJson ?? JSON.stringify({ tokenizer_class: 'PreTrainedTokenizerFast', ...map }, null, 2);
    files.set('tokenizer_config.json', config);
    files.set('special_tokens_map.json', JSON.stringify(map, null, 2));
    return files;
  }
}
