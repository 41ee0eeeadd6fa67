/**
 * A checkpoint of a real model's shape with random weights, for measuring what a run on that
 * shape costs where the model itself cannot travel (a GPU machine without a registry). It
 * loads as an imported Hugging Face checkpoint does, through a tokenizer.json with a chat
 * template, so a loop step runs on it as on a pretrained model: the byte-level vocabulary
 * (prompts encode one token a byte) padded with filler tokens up to the model's vocabulary, so
 * that every id the LM head can sample decodes to text. The fillers are strings of 2-3 bytes
 * never produced by encoding (the vocabulary has no merges).
 */
import type { ImportedCheckpoint } from '../src/model/checkpoint';
import { flatParamSize, paramSpecs, type LlamaConfig } from '../src/model/config';
import { BYTE_SPECIAL_TOKENS, ByteTokenizer } from '../src/model/tokenizer';
import { rng, uniform } from '../src/util/random';

/** ChatML, as Qwen2.5's instruction-tuned models wrap a user turn. */
const CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/** Scale of the random matrices (Hugging Face's initializer_range); norms are ones. */
const INIT_SCALE = 0.02;

/** The byte tokenizer's files, its vocabulary padded to `vocab` ids and ChatML as its chat template. */
export function paddedByteTokenizer(vocab: number): { tokenizerJson: string; tokenizerConfigJson: string } {
  const files = new ByteTokenizer().files();
  const json = JSON.parse(files.get('tokenizer.json')!) as { model: { vocab: Record<string, number> } };
  const bytes = Object.keys(json.model.vocab);
  function* fillers(): Generator<string> {
    for (const a of bytes) for (const b of bytes) yield a + b;
    for (const a of bytes) for (const b of bytes) for (const c of bytes) yield a + b + c;
  }
  let id = bytes.length + BYTE_SPECIAL_TOKENS.length;
  for (const filler of fillers()) {
    if (id >= vocab) break;
    json.model.vocab[filler] = id++;
  }
  const config = JSON.parse(files.get('tokenizer_config.json')!) as Record<string, unknown>;
  config.chat_template = CHATML;
  config.eos_token = '<|im_end|>';
  return { tokenizerJson: JSON.stringify(json), tokenizerConfigJson: JSON.stringify(config) };
}

/**
 * A checkpoint of `config`'s shape: matrices uniform in ±0.02 (seeded), norms ones, the
 * tokenizer above. Each tensor is made when the model loads it; nothing is held.
 */
export function randomCheckpoint(config: LlamaConfig, seed = 1): ImportedCheckpoint {
  const specs = paramSpecs(config);
  const byName = new Map(specs.map((s) => [s.name, s]));
  const size = (name: string) => {
    const s = byName.get(name);
    if (!s) throw new Error(`random checkpoint: no tensor ${name}`);
    return s.size;
  };
  // One stream per tensor, so a tensor's values do not depend on the order tensors are read in.
  const read = (name: string) => {
    if (name.endsWith('norm.weight')) return new Float32Array(size(name)).fill(1);
    let h = seed >>> 0;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
    return uniform(size(name), rng(h), INIT_SCALE);
  };
  const total = flatParamSize(config);
  return {
    config,
    weights: {
      shards: [{ file: 'random', bytes: 4 * total }],
      where: (name) => ({ file: 'random', bytes: 4 * size(name) }),
      read,
      flat: () => {
        const out = new Float32Array(total);
        for (const s of specs) out.set(read(s.name), s.offset);
        return out;
      },
      largest: { name: specs.find((s) => !s.name.endsWith('norm.weight'))!.name, value: INIT_SCALE },
    },
    ...paddedByteTokenizer(config.vocab_size),
    rolesTaught: true,
  };
}
