/**
 * LoRA adapters (Hu et al. 2021) on a Llama-family model: W x + (alpha/r) · B A x per targeted
 * projection, with A [r, in] and B [out, r] the only trained weights. Tensor names, shapes and
 * the adapter folder follow PEFT, so an adapter trained here loads with `PeftModel` and one
 * trained with PEFT loads here.
 */
import { headDim, type LlamaConfig, type ParamSpec } from './config';
import { parseSafetensors, serializeSafetensors } from './safetensors';
import { rng } from '../util/random';

export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

export interface LoraConfig {
  rank: number;
  alpha: number;
  /** Projections that carry an adapter, in any order (kept in LORA_TARGETS order). */
  targets: LoraTarget[];
  /** Rank-stabilised scaling alpha/√r (PEFT's use_rslora) instead of alpha/r. */
  rslora?: boolean;
}

/** PEFT's common choice for instruct models: every projection, r 16, alpha 32. */
export const DEFAULT_LORA: LoraConfig = { rank: 16, alpha: 32, targets: [...LORA_TARGETS] };

export function loraScale(l: LoraConfig): number {
  return l.rslora ? l.alpha / Math.sqrt(l.rank) : l.alpha / l.rank;
}

/** Refuses, with the reason, an adapter configuration that cannot be built. */
export function checkLora(l: LoraConfig): void {
  if (!Number.isInteger(l.rank) || l.rank < 1 || l.rank > 1024) throw new Error(`LoRA rank must be an integer in 1..1024 (got ${l.rank})`);
  if (!Number.isFinite(l.alpha) || l.alpha <= 0) throw new Error(`LoRA alpha must be a positive number (got ${l.alpha})`);
  if (l.targets.length === 0) throw new Error(`LoRA needs at least one target module (${LORA_TARGETS.join(', ')})`);
  for (const t of l.targets) {
    if (!(LORA_TARGETS as readonly string[]).includes(t)) throw new Error(`unknown LoRA target "${t}" (known: ${LORA_TARGETS.join(', ')})`);
  }
  if (new Set(l.targets).size !== l.targets.length) throw new Error(`LoRA targets repeat a module (${l.targets.join(', ')})`);
}

/** Where a target's output lands: its fused projection block and first column there, and its widths. */
export interface TargetGeometry {
  module: 'self_attn' | 'mlp';
  /** The fused weight block the base computes it in (q|k|v, o, gate|up, down). */
  block: 'qkv' | 'o' | 'gate_up' | 'down';
  col: number;
  in: number;
  out: number;
}

export function targetGeometry(c: LlamaConfig, t: LoraTarget): TargetGeometry {
  const H = c.hidden_size;
  const q = c.num_attention_heads * headDim(c);
  const kv = c.num_key_value_heads * headDim(c);
  const I = c.intermediate_size;
  switch (t) {
    case 'q_proj': return { module: 'self_attn', block: 'qkv', col: 0, in: H, out: q };
    case 'k_proj': return { module: 'self_attn', block: 'qkv', col: q, in: H, out: kv };
    case 'v_proj': return { module: 'self_attn', block: 'qkv', col: q + kv, in: H, out: kv };
    case 'o_proj': return { module: 'self_attn', block: 'o', col: 0, in: q, out: H };
    case 'gate_proj': return { module: 'mlp', block: 'gate_up', col: 0, in: H, out: I };
    case 'up_proj': return { module: 'mlp', block: 'gate_up', col: I, in: H, out: I };
    case 'down_proj': return { module: 'mlp', block: 'down', col: 0, in: I, out: H };
  }
}

/** The targets in the model's order. */
export function orderedTargets(l: LoraConfig): LoraTarget[] {
  return LORA_TARGETS.filter((t) => l.targets.includes(t));
}

/** A fused block (q|k|v, gate|up) with adapted projections: its targets in order, its rows and its input width. */
export interface FusedBlock {
  block: 'qkv' | 'gate_up';
  targets: LoraTarget[];
  rows: number;
  in: number;
}

/** The fused blocks an adapter adapts projections of, in the model's order. */
export function fusedBlocks(c: LlamaConfig, l: LoraConfig): FusedBlock[] {
  const rows = { qkv: (c.num_attention_heads + 2 * c.num_key_value_heads) * headDim(c), gate_up: 2 * c.intermediate_size };
  return (['qkv', 'gate_up'] as const).flatMap((block) => {
    const targets = orderedTargets(l).filter((t) => targetGeometry(c, t).block === block);
    return targets.length ? [{ block, targets, rows: rows[block], in: c.hidden_size }] : [];
  });
}

/**
 * Columns of the staging area an adapter's fused blocks share: training stages a target's
 * B·A·x there before it joins its block's rows, inference a block's x·[A_t; …]ᵀ.
 */
export function loraStageWidth(c: LlamaConfig, l: LoraConfig): number {
  const blocks = fusedBlocks(c, l);
  return Math.max(1, ...blocks.flatMap((b) => [b.targets.length * l.rank, ...b.targets.map((t) => targetGeometry(c, t).out)]));
}

/**
 * Elements of inference's stacked copy of an adapter kept apart (LoraAdapter.inferTerm), over
 * all layers: each fused block's A_t stacked [n·r, in] and its B_t on a block diagonal [rows, n·r].
 */
export function stackedAdapterElements(c: LlamaConfig, l: LoraConfig): number {
  return c.num_hidden_layers * fusedBlocks(c, l).reduce((n, b) => n + b.targets.length * l.rank * (b.in + b.rows), 0);
}

/** The base weight a target adapts, e.g. model.layers.3.self_attn.q_proj.weight. */
export function targetWeightName(c: LlamaConfig, layer: number, t: LoraTarget): string {
  return `model.layers.${layer}.${targetGeometry(c, t).module}.${t}.weight`;
}

/** The layer and target of a base weight the adapter adapts, or null. */
export function adaptedTarget(c: LlamaConfig, weightName: string, lora: LoraConfig): { layer: number; target: LoraTarget } | null {
  const m = /^model\.layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.weight$/.exec(weightName);
  if (!m || !lora.targets.includes(m[2] as LoraTarget)) return null;
  const target = m[2] as LoraTarget;
  return targetWeightName(c, Number(m[1]), target) === weightName ? { layer: Number(m[1]), target } : null;
}

export function loraName(c: LlamaConfig, layer: number, t: LoraTarget, which: 'A' | 'B'): string {
  return `model.layers.${layer}.${targetGeometry(c, t).module}.${t}.lora_${which}.weight`;
}

/** The adapter's flat layout: per layer, per target, lora_A [r, in] then lora_B [out, r]. */
export function loraSpecs(c: LlamaConfig, l: LoraConfig): ParamSpec[] {
  checkLora(l);
  const specs: ParamSpec[] = [];
  let offset = 0;
  for (let layer = 0; layer < c.num_hidden_layers; layer++) {
    for (const t of orderedTargets(l)) {
      const g = targetGeometry(c, t);
      for (const [which, shape] of [['A', [l.rank, g.in]], ['B', [g.out, l.rank]]] as const) {
        const size = shape[0] * shape[1];
        specs.push({ name: loraName(c, layer, t, which), shape: [...shape], offset, size, decay: true });
        offset += size;
      }
    }
  }
  return specs;
}

export function loraSize(c: LlamaConfig, l: LoraConfig): number {
  return loraSpecs(c, l).reduce((n, s) => n + s.size, 0);
}

/** PEFT's initialisation: A ~ U(±1/√in) (Kaiming-uniform with a = √5), B = 0, so training starts at the base model. */
export function initialLora(c: LlamaConfig, l: LoraConfig, seed: number): Float32Array {
  const specs = loraSpecs(c, l);
  const flat = new Float32Array(specs.reduce((n, s) => n + s.size, 0));
  const random = rng(seed);
  for (const s of specs) {
    if (!s.name.endsWith('lora_A.weight')) continue;
    const bound = 1 / Math.sqrt(s.shape[1]!);
    for (let i = s.offset; i < s.offset + s.size; i++) flat[i] = (2 * random() - 1) * bound;
  }
  return flat;
}

const PEFT_PREFIX = 'base_model.model.';

/** The adapter alone as PEFT writes it: adapter_model.safetensors and adapter_config.json. */
export function peftAdapterFiles(c: LlamaConfig, l: LoraConfig, flat: Float32Array, baseModel: string): Map<string, Uint8Array> {
  const specs = loraSpecs(c, l);
  const size = specs.reduce((n, s) => n + s.size, 0);
  if (flat.length !== size) throw new Error(`the adapter holds ${flat.length} values; rank ${l.rank} on ${l.targets.join(', ')} needs ${size}`);
  const tensors = specs.map((s) => ({ name: PEFT_PREFIX + s.name, shape: [...s.shape], data: flat.subarray(s.offset, s.offset + s.size) }));
  const config = {
    alpha_pattern: {},
    base_model_name_or_path: baseModel,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    lora_alpha: l.alpha,
    lora_dropout: 0,
    modules_to_save: null,
    peft_type: 'LORA',
    r: l.rank,
    rank_pattern: {},
    target_modules: orderedTargets(l),
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: l.rslora ?? false,
  };
  return new Map([
    ['adapter_model.safetensors', serializeSafetensors(tensors)],
    ['adapter_config.json', new TextEncoder().encode(JSON.stringify(config, null, 2))],
  ]);
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === false || (typeof v === 'object' && Object.keys(v).length === 0);
}

/** adapter_config.json as a LoraConfig; a feature this engine does not compute is refused with its field named. */
export function readPeftConfig(text: string): LoraConfig {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`adapter_config.json is not valid JSON (${(e as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('adapter_config.json is not a JSON object');
  if (raw.peft_type !== 'LORA') throw new Error(`adapter_config.json: peft_type "${String(raw.peft_type)}" is not supported (only LORA)`);
  // Variants of LoRA this engine does not compute (PEFT writes each as null, false or empty when unused).
  const variants = [
    'use_dora', 'rank_pattern', 'alpha_pattern', 'modules_to_save', 'layers_to_transform', 'fan_in_fan_out', 'megatron_config',
    'lora_bias', 'layer_replication', 'target_parameters', 'trainable_token_indices', 'exclude_modules', 'use_qalora', 'use_bdlora',
    'alora_invocation_tokens',
  ] as const;
  for (const field of variants) {
    if (!isEmpty(raw[field])) throw new Error(`adapter_config.json: ${field} ${JSON.stringify(raw[field])} is not supported`);
  }
  if (raw.bias !== undefined && raw.bias !== 'none') throw new Error(`adapter_config.json: bias "${String(raw.bias)}" is not supported (only "none")`);
  const r = raw.r;
  const alpha = raw.lora_alpha ?? r;
  if (typeof r !== 'number' || typeof alpha !== 'number') throw new Error('adapter_config.json: r and lora_alpha must be numbers');
  let targets = raw.target_modules;
  if (typeof targets === 'string') {
    if (targets !== 'all-linear') throw new Error(`adapter_config.json: target_modules "${targets}" is not supported (a list of module names, or "all-linear")`);
    targets = [...LORA_TARGETS];
  }
  if (!Array.isArray(targets) || !targets.every((t) => typeof t === 'string')) throw new Error('adapter_config.json: target_modules must be a list of module names');
  const config: LoraConfig = { rank: r, alpha, targets: targets as LoraTarget[] };
  if (raw.use_rslora === true) config.rslora = true;
  try {
    checkLora(config);
  } catch (e) {
    throw new Error(`adapter_config.json: ${(e as Error).message}`);
  }
  return config;
}

/**
 * A PEFT adapter folder for this base: its configuration and flat weights, every tensor checked
 * (names with or without PEFT's adapter name, shapes, finite values) before any is used.
 */
export function importPeftAdapter(c: LlamaConfig, files: Map<string, Uint8Array>): { lora: LoraConfig; flat: Float32Array } {
  const configBytes = files.get('adapter_config.json');
  if (!configBytes) throw new Error('adapter_config.json is missing');
  const lora = readPeftConfig(new TextDecoder().decode(configBytes));
  const bytes = files.get('adapter_model.safetensors');
  if (!bytes) {
    throw new Error(files.has('adapter_model.bin') ? 'only safetensors adapters are supported (this one is adapter_model.bin)' : 'adapter_model.safetensors is missing');
  }
  let tensors;
  try {
    tensors = parseSafetensors(bytes).tensors;
  } catch (e) {
    throw new Error(`adapter_model.safetensors: ${(e as Error).message}`);
  }
  // PEFT saves "…q_proj.lora_A.weight"; a state dict taken from a live model has "…lora_A.default.weight".
  const byName = new Map([...tensors].map(([n, t]) => [n.replace(/\.lora_([AB])\.default\.weight$/, '.lora_$1.weight'), t]));
  const specs = loraSpecs(c, lora);
  const flat = new Float32Array(specs.reduce((n, s) => n + s.size, 0));
  for (const s of specs) {
    const name = PEFT_PREFIX + s.name;
    const t = byName.get(name);
    if (!t) throw new Error(`adapter_model.safetensors: tensor "${name}" is missing (rank ${lora.rank} on ${lora.targets.join(', ')} over ${c.num_hidden_layers} layers)`);
    if (t.shape.length !== 2 || t.shape[0] !== s.shape[0] || t.shape[1] !== s.shape[1]) {
      throw new Error(`adapter_model.safetensors: tensor "${name}" has shape [${t.shape.join(', ')}] but the base model and r imply [${s.shape.join(', ')}]`);
    }
    const bad = t.data.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new Error(`adapter_model.safetensors: tensor "${name}" has a non-finite value at element ${bad}`);
    flat.set(t.data, s.offset);
    byName.delete(name);
  }
  const extra = [...byName.keys()];
  if (extra.length) throw new Error(`adapter_model.safetensors: unexpected tensor "${extra[0]}" (not an adapter of this base for ${lora.targets.join(', ')})`);
  return { lora, flat };
}
