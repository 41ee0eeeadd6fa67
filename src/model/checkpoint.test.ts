import { describe, expect, it } from 'vitest';
import { importCheckpoint, LAB_RECORD, parseLabRecord, PROMPT_SETS } from './checkpoint';
import { memorySink } from '../platform/fileSink';
import { exportCheckpoint, writeCheckpoint } from './checkpointExport';
import { configToJson, readConfigJson } from './configJson';
import { PRESETS, flatParamSize, paramSpecs, ropeInvFreq, stopTokenIds, type LlamaConfig } from './config';
import { parseSafetensors, serializeSafetensors, type TensorToWrite } from './safetensors';
import { ByteTokenizer } from './tokenizer';

const TINY: LlamaConfig = {
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 4,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  attention_bias: false,
  bos_token_id: 1,
  eos_token_id: 2,
  pad_token_id: 0,
};

/** Grouped-query attention, q/k/v biases, untied head and a head_dim that is not hidden/heads. */
const GQA_BIAS: LlamaConfig = {
  vocab_size: 37,
  hidden_size: 24,
  intermediate_size: 40,
  num_hidden_layers: 3,
  num_attention_heads: 6,
  num_key_value_heads: 2,
  head_dim: 6,
  max_position_embeddings: 32,
  rms_norm_eps: 1e-6,
  rope_theta: 500000,
  tie_word_embeddings: false,
  attention_bias: true,
  eos_token_id: 3,
};

function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** Random values in every parameter, zeros in the alignment padding (as the trainer keeps it). */
function randomParams(c: LlamaConfig, seed: number): Float32Array {
  const rand = seeded(seed);
  const flat = new Float32Array(flatParamSize(c));
  for (const s of paramSpecs(c)) for (let i = 0; i < s.size; i++) flat[s.offset + i] = rand();
  return flat;
}

function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function tokenizerFiles() {
  return new ByteTokenizer().files();
}

/** Rewrites model.safetensors of an exported folder through `edit`. */
function withWeights(files: Map<string, Uint8Array>, edit: (t: TensorToWrite[]) => TensorToWrite[]) {
  const parsed = parseSafetensors(files.get('model.safetensors')!);
  const list = [...parsed.tensors].map(([name, t]) => ({ name, shape: t.shape, data: t.data }));
  const out = new Map(files);
  out.set('model.safetensors', serializeSafetensors(edit(list)));
  return out;
}

describe('exportCheckpoint / importCheckpoint', () => {
  it('round-trips a tiny tied model bit-identically', () => {
    const flat = randomParams(TINY, 1);
    const files = exportCheckpoint(TINY, flat, tokenizerFiles());
    expect([...files.keys()].sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'special_tokens_map.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const weights = parseSafetensors(files.get('model.safetensors')!);
    expect(weights.metadata.format).toBe('pt');
    expect(weights.tensors.has('lm_head.weight')).toBe(false);
    expect(weights.tensors.get('model.layers.1.mlp.up_proj.weight')!.shape).toEqual([32, 16]);

    const back = importCheckpoint(files);
    expect(back.config).toEqual(TINY);
    expect(bits(back.weights.flat())).toEqual(bits(flat));
    expect(back.tokenizerJson).toBe(tokenizerFiles().get('tokenizer.json'));
    expect(back.optimizer).toBeUndefined();
    expect(back.runState).toBeUndefined();
    expect(JSON.parse(back.tokenizerConfigJson!).model_max_length).toBe(TINY.max_position_embeddings);
  });

  it('round-trips a GQA + bias model with optimizer state and run state', () => {
    const flat = randomParams(GQA_BIAS, 2);
    const m = randomParams(GQA_BIAS, 3);
    const v = randomParams(GQA_BIAS, 4).map(Math.abs);
    const runState = { lr: 3e-4, dataCursor: [1, 2, 3], note: 'warmup done' };
    const files = exportCheckpoint(GQA_BIAS, flat, tokenizerFiles(), { optimizer: { m, v, step: 1234 }, runState });

    const cfg = JSON.parse(dec.decode(files.get('config.json')!));
    expect(cfg.model_type).toBe('llama');
    expect(cfg.architectures).toEqual(['LlamaForCausalLM']);
    expect(cfg.attention_bias).toBe(true);
    expect(cfg.head_dim).toBe(6);
    const weights = parseSafetensors(files.get('model.safetensors')!).tensors;
    // transformers' Llama gives o_proj a bias whenever attention_bias is set; it is written as zeros.
    expect(Array.from(weights.get('model.layers.1.self_attn.o_proj.bias')!.data)).toEqual(new Array(24).fill(0));
    expect(weights.get('model.layers.2.self_attn.k_proj.bias')!.shape).toEqual([12]);
    expect(weights.get('model.layers.0.self_attn.q_proj.weight')!.shape).toEqual([36, 24]);
    expect(weights.get('lm_head.weight')!.shape).toEqual([37, 24]);
    const opt = parseSafetensors(files.get('optimizer.safetensors')!);
    expect(opt.metadata.step).toBe('1234');
    expect(opt.tensors.get('exp_avg_sq.model.norm.weight')!.shape).toEqual([24]);

    const back = importCheckpoint(files);
    expect(back.config).toEqual(GQA_BIAS);
    expect(bits(back.weights.flat())).toEqual(bits(flat));
    expect(bits(back.optimizer!.m)).toEqual(bits(m));
    expect(bits(back.optimizer!.v)).toEqual(bits(v));
    expect(back.optimizer!.step).toBe(1234);
    expect(back.runState).toEqual(runState);
  });

  it('records the role prompts the model was trained with beside config.json, and reads them back; a bad record is refused by name', async () => {
    const flat = randomParams(TINY, 5);
    for (const templates of PROMPT_SETS) {
      const files = exportCheckpoint(TINY, flat, tokenizerFiles(), { templates });
      expect(JSON.parse(dec.decode(files.get(LAB_RECORD)!))).toEqual({ templates });
      // config.json stays the architecture alone, as transformers reads it.
      expect(JSON.parse(dec.decode(files.get('config.json')!)).templates).toBeUndefined();
      expect(importCheckpoint(files).templates).toBe(templates);
      // The streamed export writes the same record.
      const sink = memorySink();
      await writeCheckpoint(TINY, (name) => importCheckpoint(files).weights.read(name), tokenizerFiles(), { templates }, sink);
      expect(importCheckpoint(sink.files).templates).toBe(templates);
      expect(importCheckpoint(files).rolesTaught).toBe(true);
    }
    // A base not warmed up yet keeps saying so through an export and an import (the next run warms it up); taught is the default, left out.
    const base = exportCheckpoint(TINY, flat, tokenizerFiles(), { templates: 'compact', rolesTaught: false });
    expect(JSON.parse(dec.decode(base.get(LAB_RECORD)!))).toEqual({ templates: 'compact', rolesTaught: false });
    expect(importCheckpoint(base).rolesTaught).toBe(false);
    expect(JSON.parse(dec.decode(exportCheckpoint(TINY, flat, tokenizerFiles(), { templates: 'compact', rolesTaught: true }).get(LAB_RECORD)!))).toEqual({ templates: 'compact' });
    // A plain Hugging Face folder records nothing: its roles count as taught (an instruction-tuned model follows the prompts).
    const plain = exportCheckpoint(TINY, flat, tokenizerFiles());
    expect(plain.has(LAB_RECORD)).toBe(false);
    expect(importCheckpoint(plain).templates).toBeUndefined();
    expect(importCheckpoint(plain).rolesTaught).toBe(true);
    const bad = new Map(plain).set(LAB_RECORD, new TextEncoder().encode('{"templates": "chat"}'));
    expect(() => importCheckpoint(bad)).toThrow('sage_lab.json: "templates" must be one of compact, instruct (got "chat")');
    expect(() => importCheckpoint(new Map(plain).set(LAB_RECORD, new TextEncoder().encode('{')))).toThrow(/^sage_lab\.json is not valid JSON/);
    // A base pretrained for the compact prompts says its roles are untaught; anything but a boolean is refused.
    expect(parseLabRecord('{"templates": "compact", "rolesTaught": false}')).toEqual({ templates: 'compact', rolesTaught: false });
    expect(parseLabRecord(new TextEncoder().encode('{"templates": "instruct"}'))).toEqual({ templates: 'instruct' });
    expect(() => parseLabRecord('{"rolesTaught": "no"}')).toThrow('sage_lab.json: "rolesTaught" must be true or false (got "no")');
    // The settings a testbed's model is meant for travel through an export and an import; a record's settings must be an object.
    const settings = { maxNewTokens: { solver: 96 }, advantage: 'grpo', lr: Math.random() };
    const testbed = exportCheckpoint(TINY, flat, tokenizerFiles(), { templates: 'compact', labSettings: settings });
    expect(JSON.parse(dec.decode(testbed.get(LAB_RECORD)!))).toEqual({ templates: 'compact', settings });
    expect(importCheckpoint(testbed).labSettings).toEqual(settings);
    expect(importCheckpoint(plain).labSettings).toBeUndefined();
    expect(() => parseLabRecord('{"settings": [96]}')).toThrow('sage_lab.json: "settings" must be a JSON object of run settings (got [96])');
  });

  it('exports BF16 or F16 weights, sharded with an index above the size limit, and imports them back', () => {
    const flat = randomParams(GQA_BIAS, 8);
    const m = randomParams(GQA_BIAS, 9);
    for (const dtype of ['BF16', 'F16'] as const) {
      const whole = exportCheckpoint(GQA_BIAS, flat, tokenizerFiles(), { dtype });
      expect(JSON.parse(dec.decode(whole.get('config.json')!)).torch_dtype).toBe(dtype === 'BF16' ? 'bfloat16' : 'float16');
      const single = parseSafetensors(whole.get('model.safetensors')!);
      expect(single.tensors.get('model.norm.weight')!.dtype).toBe(dtype);
      const rounded = importCheckpoint(whole).weights.flat();

      // A limit below the weights' size: shards of at most that many bytes, each tensor in one of them.
      const limit = 4000;
      const files = exportCheckpoint(GQA_BIAS, flat, tokenizerFiles(), { dtype, maxShardBytes: limit, optimizer: { m, v: m.map(Math.abs), step: 3 } });
      expect(files.has('model.safetensors')).toBe(false);
      const index = JSON.parse(dec.decode(files.get('model.safetensors.index.json')!)) as { metadata: { total_size: number }; weight_map: Record<string, string> };
      const shards = [...files.keys()].filter((n) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(n));
      expect(shards.length).toBeGreaterThan(2);
      expect(new Set(Object.values(index.weight_map))).toEqual(new Set(shards));
      let total = 0;
      for (const shard of shards) {
        const parsed = parseSafetensors(files.get(shard)!);
        const bytes = [...parsed.tensors.values()].reduce((n, t) => n + t.data.length * 2, 0);
        total += bytes;
        // Only a tensor larger than the limit by itself may exceed it.
        if (parsed.tensors.size > 1) expect(bytes).toBeLessThanOrEqual(limit);
        for (const name of parsed.tensors.keys()) expect(index.weight_map[name]).toBe(shard);
      }
      expect(index.metadata.total_size).toBe(total);
      const back = importCheckpoint(files);
      expect(bits(back.weights.flat())).toEqual(bits(rounded));
      // The optimizer state stays F32 whatever the weights' dtype.
      expect(bits(back.optimizer!.m)).toEqual(bits(m));
    }
    expect(() => exportCheckpoint(TINY, randomParams(TINY, 5), tokenizerFiles(), { maxShardBytes: 0 })).toThrow('maxShardBytes must be > 0');
  });

  it('streamed through a sink a tensor at a time: the same files, each weight asked for once, in shard order', async () => {
    const flat = randomParams(GQA_BIAS, 4);
    const m = randomParams(GQA_BIAS, 5);
    const specs = new Map(paramSpecs(GQA_BIAS).map((s) => [s.name, s]));
    for (const extra of [{}, { dtype: 'BF16' as const, maxShardBytes: 4000, optimizer: { m, v: m.map(Math.abs), step: 2 } }]) {
      const asked: string[] = [];
      const sink = memorySink();
      const opened: string[] = [];
      await writeCheckpoint(GQA_BIAS, async (name) => {
        asked.push(name);
        const s = specs.get(name)!;
        return flat.slice(s.offset, s.offset + s.size);
      }, tokenizerFiles(), extra, { file: (name, chunks) => (opened.push(name), sink.file(name, chunks)) });
      const want = exportCheckpoint(GQA_BIAS, flat, tokenizerFiles(), extra);
      expect(new Set(sink.files.keys())).toEqual(new Set(want.keys()));
      for (const [name, bytes] of want) expect(Buffer.from(sink.files.get(name)!).equals(Buffer.from(bytes)), name).toBe(true);
      expect([...asked].sort()).toEqual([...specs.keys()].sort());
      // Shards are written one after another: no tensor is asked for before its shard is opened.
      const shardOf = (n: string) => opened.findIndex((f) => f.endsWith('.safetensors') && parseSafetensors(want.get(f)!).tensors.has(n));
      expect(asked.map(shardOf)).toEqual([...asked.map(shardOf)].sort((a, b) => a - b));
    }
    const failing = writeCheckpoint(TINY, () => new Float32Array(3), tokenizerFiles(), {}, memorySink());
    await expect(failing).rejects.toThrow(/model\.embed_tokens\.weight: 3 values for a tensor of \d+/);
  });

  it('writes config.json and generation_config.json transformers understands', () => {
    const files = exportCheckpoint(TINY, randomParams(TINY, 5), tokenizerFiles());
    const cfg = JSON.parse(dec.decode(files.get('config.json')!));
    expect(cfg).toMatchObject({
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      hidden_act: 'silu',
      torch_dtype: 'float32',
      attention_bias: false,
      mlp_bias: false,
      tie_word_embeddings: true,
      head_dim: 4,
      bos_token_id: 1,
      eos_token_id: 2,
      pad_token_id: 0,
    });
    expect(JSON.parse(dec.decode(files.get('generation_config.json')!))).toMatchObject({ bos_token_id: 1, eos_token_id: 2, pad_token_id: 0 });
  });

  it('refuses a flat buffer of the wrong size', () => {
    expect(() => exportCheckpoint(TINY, new Float32Array(10), tokenizerFiles())).toThrow(
      `flatParams has 10 elements but the config's flat parameter layout has ${flatParamSize(TINY)}`,
    );
  });

  it('imports sharded checkpoints through model.safetensors.index.json', () => {
    const flat = randomParams(GQA_BIAS, 6);
    const files = exportCheckpoint(GQA_BIAS, flat, tokenizerFiles());
    const tensors = [...parseSafetensors(files.get('model.safetensors')!).tensors].map(([name, t]) => ({ name, shape: t.shape, data: t.data }));
    const shardA = tensors.filter((t) => t.name < 'model.layers.1');
    const shardB = tensors.filter((t) => t.name >= 'model.layers.1');
    const weightMap: Record<string, string> = {};
    for (const t of shardA) weightMap[t.name] = 'model-00001-of-00002.safetensors';
    for (const t of shardB) weightMap[t.name] = 'model-00002-of-00002.safetensors';
    const sharded = new Map(files);
    sharded.delete('model.safetensors');
    sharded.set('model-00001-of-00002.safetensors', serializeSafetensors(shardA));
    sharded.set('model-00002-of-00002.safetensors', serializeSafetensors(shardB));
    sharded.set('model.safetensors.index.json', enc.encode(JSON.stringify({ metadata: {}, weight_map: weightMap })));
    expect(bits(importCheckpoint(sharded).weights.flat())).toEqual(bits(flat));

    const missingShard = new Map(sharded);
    missingShard.delete('model-00002-of-00002.safetensors');
    expect(() => importCheckpoint(missingShard)).toThrow(
      'model.safetensors.index.json lists shard files that are missing: model-00002-of-00002.safetensors',
    );

    const incomplete = new Map(sharded);
    incomplete.set('model-00002-of-00002.safetensors', serializeSafetensors(shardB.slice(1)));
    expect(() => importCheckpoint(incomplete)).toThrow(`tensor "${shardB[0]!.name}" is not in model-00002-of-00002.safetensors`);
  });

  it('accepts known-ignorable tensors and an lm_head stored with a tied model', () => {
    const flat = randomParams(TINY, 7);
    const files = withWeights(exportCheckpoint(TINY, flat, tokenizerFiles()), (t) => [
      ...t,
      { name: 'model.layers.0.self_attn.rotary_emb.inv_freq', shape: [2], data: new Float32Array([1, 0.01]) },
      { name: 'lm_head.weight', shape: [40, 16], data: new Float32Array(640) },
    ]);
    expect(bits(importCheckpoint(files).weights.flat())).toEqual(bits(flat));
  });
});

describe('importCheckpoint refusals', () => {
  const good = () => exportCheckpoint(TINY, randomParams(TINY, 8), tokenizerFiles());
  const replace = (name: string, shape: number[]) => (t: TensorToWrite[]) =>
    t.map((x) => (x.name === name ? { name, shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) } : x));

  it('refuses a tensor with the wrong shape, naming file, tensor and both shapes', () => {
    const files = withWeights(good(), replace('model.layers.0.mlp.up_proj.weight', [24, 16]));
    expect(() => importCheckpoint(files)).toThrow(
      'model.safetensors: tensor "model.layers.0.mlp.up_proj.weight" has shape [24, 16] but config.json implies [32, 16]',
    );
  });

  it('reports the first mismatch in parameter order', () => {
    const files = withWeights(good(), (t) =>
      replace('model.layers.1.mlp.down_proj.weight', [1])(replace('model.layers.0.input_layernorm.weight', [15])(t)),
    );
    expect(() => importCheckpoint(files)).toThrow('tensor "model.layers.0.input_layernorm.weight" has shape [15]');
  });

  it('refuses a missing tensor', () => {
    const files = withWeights(good(), (t) => t.filter((x) => x.name !== 'model.layers.1.self_attn.v_proj.weight'));
    expect(() => importCheckpoint(files)).toThrow(
      'model.safetensors: tensor "model.layers.1.self_attn.v_proj.weight" is missing (config.json implies shape [16, 16])',
    );
  });

  it('refuses an untied model without lm_head.weight', () => {
    const untied = { ...TINY, tie_word_embeddings: false };
    const files = withWeights(exportCheckpoint(untied, randomParams(untied, 9), tokenizerFiles()), (t) =>
      t.filter((x) => x.name !== 'lm_head.weight'),
    );
    expect(() => importCheckpoint(files)).toThrow('tensor "lm_head.weight" is missing (config.json implies shape [40, 16])');
  });

  it('refuses a tied model whose stored lm_head has the wrong shape', () => {
    const files = withWeights(good(), (t) => [...t, { name: 'lm_head.weight', shape: [41, 16], data: new Float32Array(41 * 16) }]);
    expect(() => importCheckpoint(files)).toThrow('tensor "lm_head.weight" has shape [41, 16] but config.json implies [40, 16]');
  });

  it('refuses unexpected tensors', () => {
    const files = withWeights(good(), (t) => [...t, { name: 'model.layers.2.mlp.up_proj.weight', shape: [32, 16], data: new Float32Array(512) }]);
    expect(() => importCheckpoint(files)).toThrow(
      'model.safetensors: unexpected tensor "model.layers.2.mlp.up_proj.weight" (not part of the model config.json describes)',
    );
    const bias = withWeights(good(), (t) => [...t, { name: 'model.layers.0.self_attn.o_proj.bias', shape: [16], data: new Float32Array(16) }]);
    expect(() => importCheckpoint(bias)).toThrow('unexpected tensor "model.layers.0.self_attn.o_proj.bias"');
  });

  it('refuses a non-zero o_proj bias', () => {
    const files = withWeights(exportCheckpoint(GQA_BIAS, randomParams(GQA_BIAS, 13), tokenizerFiles()), (t) =>
      t.map((x) => (x.name === 'model.layers.2.self_attn.o_proj.bias' ? { ...x, data: new Float32Array(24).fill(0.5) } : x)),
    );
    expect(() => importCheckpoint(files)).toThrow(
      'model.safetensors: tensor "model.layers.2.self_attn.o_proj.bias" is not zero; o_proj biases are not supported (only q/k/v biases)',
    );
  });

  it('refuses non-finite weights', () => {
    const files = withWeights(good(), (t) =>
      t.map((x) => (x.name === 'model.norm.weight' ? { ...x, data: new Float32Array(16).fill(1).fill(NaN, 5, 6) } : x)),
    );
    expect(() => importCheckpoint(files)).toThrow('model.safetensors: tensor "model.norm.weight" has a non-finite value (NaN) at element 5');
  });

  it('refuses a truncated or corrupt weights file, naming it', () => {
    const files = good();
    const bytes = files.get('model.safetensors')!;
    files.set('model.safetensors', bytes.subarray(0, bytes.length - 100));
    expect(() => importCheckpoint(files)).toThrow(/^model\.safetensors: invalid safetensors file: tensor ".*" data_offsets .* \(truncated file\?\)$/);
  });

  it('refuses missing files', () => {
    const noConfig = good();
    noConfig.delete('config.json');
    expect(() => importCheckpoint(noConfig)).toThrow('config.json is missing');
    const noWeights = good();
    noWeights.delete('model.safetensors');
    expect(() => importCheckpoint(noWeights)).toThrow('no model weights: expected model.safetensors or model.safetensors.index.json');
    noWeights.set('pytorch_model.bin', new Uint8Array(4));
    expect(() => importCheckpoint(noWeights)).toThrow('this checkpoint has PyTorch .bin weights');
  });

  it('refuses an invalid config through validateConfig', () => {
    const files = good();
    const cfg = JSON.parse(dec.decode(files.get('config.json')!));
    cfg.num_key_value_heads = 3;
    files.set('config.json', enc.encode(JSON.stringify(cfg)));
    expect(() => importCheckpoint(files)).toThrow('config.json: invalid model config: num_attention_heads (4) must be a multiple of num_key_value_heads (3)');
  });

  it('refuses incomplete optimizer state', () => {
    const files = exportCheckpoint(TINY, randomParams(TINY, 10), tokenizerFiles(), {
      optimizer: { m: randomParams(TINY, 11), v: randomParams(TINY, 12), step: 5 },
    });
    const opt = parseSafetensors(files.get('optimizer.safetensors')!);
    const list = [...opt.tensors]
      .filter(([name]) => name !== 'exp_avg_sq.model.norm.weight')
      .map(([name, t]) => ({ name, shape: t.shape, data: t.data }));
    files.set('optimizer.safetensors', serializeSafetensors(list, { step: '5' }));
    expect(() => importCheckpoint(files)).toThrow(
      'optimizer.safetensors: tensor "exp_avg_sq.model.norm.weight" is missing (config.json implies shape [16])',
    );
    const full = [...opt.tensors].map(([name, t]) => ({ name, shape: t.shape, data: t.data }));
    files.set('optimizer.safetensors', serializeSafetensors(full));
    expect(() => importCheckpoint(files)).toThrow('optimizer.safetensors: metadata "step" must be a non-negative integer (got undefined)');
  });
});

/** Shaped like TinyLlama-1.1B's config.json. */
const HUB_LLAMA = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 5632,
  max_position_embeddings: 2048,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 22,
  num_key_value_heads: 4,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: null,
  rope_theta: 10000.0,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  transformers_version: '4.35.0',
  use_cache: true,
  vocab_size: 32000,
};

/** Shaped like Qwen2.5-0.5B's config.json. */
const HUB_QWEN2 = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151643,
  hidden_act: 'silu',
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 24,
  model_type: 'qwen2',
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

describe('readConfigJson', () => {
  const read = (o: object) => readConfigJson(JSON.stringify(o));

  it('reads a Hub Llama config', () => {
    expect(read(HUB_LLAMA)).toEqual({
      vocab_size: 32000,
      hidden_size: 2048,
      intermediate_size: 5632,
      num_hidden_layers: 22,
      num_attention_heads: 32,
      num_key_value_heads: 4,
      max_position_embeddings: 2048,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      tie_word_embeddings: false,
      attention_bias: false,
      bos_token_id: 1,
      eos_token_id: 2,
    });
  });

  it('reads a Qwen2 config as q/k/v-biased attention', () => {
    const c = read(HUB_QWEN2);
    expect(c).toMatchObject({ attention_bias: true, rope_theta: 1e6, tie_word_embeddings: true, num_key_value_heads: 2 });
    expect(c.head_dim).toBeUndefined();
  });

  it('reads transformers 5 rope_parameters and dtype', () => {
    const { rope_theta: _theta, rope_scaling: _scaling, torch_dtype: _dtype, ...rest } = HUB_LLAMA;
    const c = read({ ...rest, dtype: 'bfloat16', rope_parameters: { rope_theta: 500000.0, rope_type: 'default' } });
    expect(c.rope_theta).toBe(500000);
  });

  it('reads Llama 3.x, linear and dynamic RoPE scaling, and writes it back', () => {
    const llama3 = { rope_type: 'llama3', factor: 32.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_max_position_embeddings: 8192 } as const;
    const c = read({ ...HUB_LLAMA, rope_theta: 500000.0, rope_scaling: llama3 });
    expect(c.rope_scaling).toEqual(llama3);
    expect(readConfigJson(configToJson(c))).toEqual(c);
    const { rope_theta: _theta, rope_scaling: _scaling, ...rest } = HUB_LLAMA;
    expect(read({ ...rest, rope_parameters: { rope_theta: 500000.0, ...llama3 } }).rope_scaling).toEqual(llama3);
    expect(read({ ...HUB_LLAMA, rope_scaling: { type: 'linear', factor: 2.0 } }).rope_scaling).toEqual({ rope_type: 'linear', factor: 2 });
    expect(read({ ...HUB_LLAMA, rope_scaling: { rope_type: 'dynamic', factor: 2.0 } }).rope_scaling).toEqual({ rope_type: 'dynamic', factor: 2 });
    expect(read({ ...HUB_LLAMA, rope_scaling: { rope_type: 'default' } }).rope_scaling).toBeUndefined();
  });

  it('scales RoPE frequencies as transformers does: linear, dynamic (within the context), llama3 in its three bands', () => {
    const base = { ...PRESETS.tiny, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 4, rope_theta: 10000 };
    // head_dim 8: inv_freq 1, 0.1, 0.01, 0.001, wavelengths 2π·(1, 10, 100, 1000).
    expect([...ropeInvFreq(base)]).toEqual([0, 1, 2, 3].map((i) => 1 / 10000 ** ((2 * i) / 8)));
    expect([...ropeInvFreq({ ...base, rope_scaling: { rope_type: 'linear', factor: 4 } })]).toEqual([...ropeInvFreq(base)].map((f) => f / 4));
    expect(ropeInvFreq({ ...base, rope_scaling: { rope_type: 'dynamic', factor: 4 } })).toEqual(ropeInvFreq(base));
    // Bands: wavelength < 64/4 kept, > 64/1 divided by 8, between blended.
    const inv = [...ropeInvFreq(base)];
    const scaled = ropeInvFreq({ ...base, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 } });
    const smooth = (64 / ((2 * Math.PI) / inv[1]!) - 1) / 3;
    const expected = [inv[0]!, (1 - smooth) * (inv[1]! / 8) + smooth * inv[1]!, inv[2]! / 8, inv[3]! / 8];
    for (let i = 0; i < 4; i++) expect(scaled[i]).toBeCloseTo(expected[i]!, 15);
    expect(smooth).toBeGreaterThan(0);
  });

  it('reads Llama attention_bias as q/k/v biases', () => {
    expect(read({ ...HUB_LLAMA, attention_bias: true }).attention_bias).toBe(true);
    expect(read({ ...HUB_LLAMA, model_type: 'mistral' }).attention_bias).toBe(false);
  });

  it('reads Mistral without a sliding window, keeping an explicit head_dim', () => {
    const c = read({ ...HUB_LLAMA, model_type: 'mistral', sliding_window: null, head_dim: 128 });
    expect(c.head_dim).toBe(128);
  });

  it('applies transformers defaults and takes the first of several EOS ids', () => {
    const { num_key_value_heads: _kv, rms_norm_eps: _eps, rope_theta: _theta, tie_word_embeddings: _tie, ...rest } = HUB_LLAMA;
    const c = read({ ...rest, eos_token_id: [128001, 128008, 128009], num_key_value_heads: null, pad_token_id: null });
    expect(c).toMatchObject({ num_key_value_heads: 32, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: false, eos_token_id: 128001 });
    expect(c.pad_token_id).toBeUndefined();
    // All of them end generation, and they are written back as the list.
    expect(c.eos_token_ids).toEqual([128001, 128008, 128009]);
    expect(stopTokenIds(c, 128009)).toEqual([128009, 128001, 128008]);
    expect(JSON.parse(configToJson(c)).eos_token_id).toEqual([128001, 128008, 128009]);
    expect(readConfigJson(configToJson(c))).toEqual(c);
    expect(() => read({ ...HUB_LLAMA, eos_token_id: [] })).toThrow('eos_token_id must be a non-negative integer or a list of them (got [])');
  });

  it('round-trips configToJson for every preset and for GQA + bias', () => {
    for (const p of Object.values(PRESETS)) expect(readConfigJson(configToJson(p))).toEqual(p);
    expect(readConfigJson(configToJson(GQA_BIAS))).toEqual(GQA_BIAS);
  });

  const refusals: [string, object | string, string][] = [
    ['not JSON', '{', 'config.json is not valid JSON'],
    ['not an object', '[1]', 'config.json is not a JSON object'],
    ['other model type', { ...HUB_LLAMA, model_type: 'gpt2' }, 'config.json: model_type "gpt2" is not supported (supported: llama, qwen2, mistral)'],
    ['no model type', { ...HUB_LLAMA, model_type: undefined }, 'config.json: missing required field model_type'],
    [
      'missing fields',
      { ...HUB_LLAMA, hidden_size: undefined, num_hidden_layers: undefined },
      'config.json: missing required fields hidden_size, num_hidden_layers',
    ],
    [
      'llama3 rope scaling without its fields',
      { ...HUB_LLAMA, rope_scaling: { rope_type: 'llama3', factor: 8.0 } },
      'config.json: rope_scaling.low_freq_factor must be a number for type "llama3" (got undefined)',
    ],
    ['linear rope scaling without a factor', { ...HUB_LLAMA, rope_scaling: { type: 'linear' } }, 'config.json: rope_scaling.factor must be a number for type "linear"'],
    [
      'yarn rope_parameters',
      { ...HUB_LLAMA, rope_parameters: { rope_theta: 1e6, rope_type: 'yarn', factor: 4 } },
      'config.json: rope_parameters type "yarn" is not supported (supported: default, linear, dynamic, llama3)',
    ],
    [
      'llama3 bands the wrong way round',
      { ...HUB_LLAMA, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 4, high_freq_factor: 1, original_max_position_embeddings: 8192 } },
      'rope_scaling needs 0 < low_freq_factor < high_freq_factor (got 4, 1)',
    ],
    ['other activation', { ...HUB_LLAMA, hidden_act: 'gelu' }, 'config.json: hidden_act "gelu" is not supported (only silu)'],
    ['MLP bias', { ...HUB_LLAMA, mlp_bias: true }, 'config.json: mlp_bias true is not supported'],
    ['mistral sliding window', { ...HUB_LLAMA, model_type: 'mistral', sliding_window: 1024 }, 'sliding-window attention is not supported'],
    ['qwen2 sliding window', { ...HUB_QWEN2, use_sliding_window: true }, 'sliding-window attention is not supported'],
    ['wrong type', { ...HUB_LLAMA, hidden_size: '2048' }, 'config.json: hidden_size must be a number (got "2048")'],
    ['bad eos', { ...HUB_LLAMA, eos_token_id: -1 }, 'eos_token_id must be a non-negative integer or a list of them (got -1)'],
    ['invalid head split', { ...HUB_LLAMA, num_key_value_heads: 3 }, 'config.json: invalid model config: num_attention_heads (32) must be a multiple of num_key_value_heads (3)'],
  ];
  for (const [what, input, message] of refusals) {
    it(`refuses: ${what}`, () => {
      expect(() => readConfigJson(typeof input === 'string' ? input : JSON.stringify(input))).toThrow(message);
    });
  }
});
