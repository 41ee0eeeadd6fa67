import { flatParamSize, headDim, paramSpecs, type LlamaConfig } from './config';
import { loraSize, loraStageWidth, orderedTargets, stackedAdapterElements, targetGeometry, type LoraConfig } from './lora';

/** Byte sizes of what a training run of this model holds on the GPU. */
export interface MemoryEstimate {
  parameters: number;
  /** Parameters that train: the whole model's, or its LoRA adapter's. */
  trainable: number;
  /** The base weights (and the adapter's, with LoRA). */
  weights: number;
  /**
   * With LoRA, inference's copy of the adapter: on an f32 base the weight blocks it adapts with
   * it merged in (Transformer.mergeAdapterForInference), so generation costs no dispatch more
   * than the base's; on an f16 base, which keeps the adapter apart, its fused blocks stacked
   * (stackedAdapterElements), so each adapted block costs one dispatch more (LoraAdapter.inferTerm).
   */
  inferenceCopies: number;
  gradients: number;
  adamMoments: number;
  activations: number;
  total: number;
  /** The largest single buffer (must fit maxStorageBufferBindingSize). */
  largestBuffer: number;
  /** The largest activation buffer alone (the logits, usually). */
  largestActivation: number;
}

/** How the base model's weights are stored: f32, or f16 (half the memory; frozen, LoRA only). */
export type BaseDtype = 'f32' | 'f16';
/**
 * What a KV cache holds: f32, or IEEE halves (half the memory and half the bytes a decode
 * step's attention reads; each k and v rounded to half once, as it is stored).
 */
export type KvDtype = 'f32' | 'f16';

/** Refuses a KV cache this model cannot hold: f16 stores k pairs a word at a time, so head_dim must be a multiple of 4. */
export function checkKvCache(c: LlamaConfig, dtype: KvDtype): void {
  if (dtype === 'f16' && headDim(c) % 4 !== 0) throw new Error(`an f16 KV cache needs head_dim a multiple of 4 (this model's is ${headDim(c)})`);
}

/** How the model trains: in full (default), or a LoRA adapter on the frozen base, stored in f32 or f16. */
export interface TrainingMode {
  lora?: LoraConfig | null;
  baseDtype?: BaseDtype;
}

function activationElements(c: LlamaConfig, N: number, lora: LoraConfig | null): { total: number; largest: number } {
  const H = c.hidden_size;
  const hd = headDim(c);
  const q = c.num_attention_heads * hd;
  const kv = c.num_key_value_heads * hd;
  const I = c.intermediate_size;
  // An adapter keeps x·Aᵀ per target and layer, and shares one staging area and one d(x·Aᵀ).
  const targets = lora ? orderedTargets(lora) : [];
  const loraPerLayer = lora ? N * lora.rank * targets.length : 0;
  const loraShared = lora ? N * (loraStageWidth(c, lora) + lora.rank) : 0;
  const perLayer = N * (H + 1 + q + 2 * kv + q + c.num_attention_heads + H + H + 1 + 3 * I) + loraPerLayer;
  const residual = (c.num_hidden_layers + 1) * N * H;
  // The final norm and the logits; the loss rows' norms gathered and their tokens' index (see Workspace.headIn).
  const final = N * (H + 1 + c.vocab_size) + N * (H + 3) + 1;
  const scratch = N * (2 * H + 2 * q + 2 * kv + 3 * I + c.num_attention_heads) + 4 * N + loraShared;
  return {
    total: c.num_hidden_layers * perLayer + residual + final + scratch,
    largest: Math.max(N * c.vocab_size, N * I, N * q),
  };
}

/** What training this config at B×T needs in the given mode; pure arithmetic, no GPU. */
export function memoryEstimate(c: LlamaConfig, B: number, T: number, mode: TrainingMode = {}): MemoryEstimate {
  const lora = mode.lora ?? null;
  const baseBytes = mode.baseDtype === 'f16' ? 2 : 4;
  if (baseBytes === 2 && !lora) throw new Error('a base stored in f16 is frozen: it trains only with a LoRA adapter');
  const P = flatParamSize(c);
  const trainable = lora ? loraSize(c, lora) : P;
  const acts = activationElements(c, B * T, lora);
  const est = {
    parameters: paramSpecs(c).reduce((n, p) => n + p.size, 0),
    trainable,
    weights: P * baseBytes + (lora ? trainable * 4 : 0),
    inferenceCopies: lora ? (baseBytes === 4 ? adaptedBlockElements(c, lora) : stackedAdapterElements(c, lora)) * 4 : 0,
    gradients: trainable * 4,
    adamMoments: 2 * trainable * 4,
    activations: acts.total * 4,
    total: 0,
    // Trained in full, the weights, gradients and moments are each one flat buffer; a frozen base
    // is split across buffers a layer at a time (see paramChunks).
    largestBuffer: Math.max(lora ? largestUnit(c) * baseBytes : P * 4, acts.largest * 4),
    largestActivation: acts.largest * 4,
  };
  est.total = est.weights + est.inferenceCopies + est.gradients + est.adamMoments + est.activations;
  return est;
}

/** Elements of the fused weight blocks (q|k|v, o, gate|up, down) that the adapter adapts, over all layers. */
export function adaptedBlockElements(c: LlamaConfig, lora: LoraConfig): number {
  const H = c.hidden_size;
  const q = c.num_attention_heads * headDim(c);
  const kv = c.num_key_value_heads * headDim(c);
  const I = c.intermediate_size;
  const size = { qkv: (q + 2 * kv) * H, o: H * q, gate_up: 2 * I * H, down: H * I };
  const blocks = new Set(orderedTargets(lora).map((t) => targetGeometry(c, t).block));
  return c.num_hidden_layers * [...blocks].reduce((n, b) => n + size[b], 0);
}

const MiB = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** Refuses, with the numbers, training this configuration at B×T in `mode` where the adapter cannot hold it. */
export function checkFits(c: LlamaConfig, B: number, T: number, maxBinding: number, mode: TrainingMode = {}): MemoryEstimate {
  const est = memoryEstimate(c, B, T, mode);
  if (est.largestBuffer > maxBinding) {
    throw new Error(
      `model does not fit this GPU: its largest buffer needs ${MiB(est.largestBuffer)} but the adapter binds at most ` +
        `${MiB(maxBinding)} (weights ${MiB(est.weights)}, activations ${MiB(est.activations)} at batch ${B}×${T}); ` +
        (mode.lora ? 'use a smaller batch or sequence length' : 'train a LoRA adapter instead, or use a smaller preset, batch or sequence length'),
    );
  }
  return checkContext(c, T, est);
}

/** Refuses, with the numbers, activations for B×T the adapter cannot bind (the weights are placed at load). */
export function checkActivationsFit(c: LlamaConfig, B: number, T: number, maxBinding: number, lora: LoraConfig | null): MemoryEstimate {
  const est = memoryEstimate(c, B, T, { lora });
  if (est.largestActivation > maxBinding) {
    throw new Error(
      `batch ${B}×${T} does not fit this GPU: its largest activation (the logits, ${B * T} × ${c.vocab_size}) needs ` +
        `${MiB(est.largestActivation)} but the adapter binds at most ${MiB(maxBinding)}; use a smaller batch or sequence length`,
    );
  }
  return checkContext(c, T, est);
}

function checkContext(c: LlamaConfig, T: number, est: MemoryEstimate): MemoryEstimate {
  if (T > c.max_position_embeddings) {
    throw new Error(`sequence length ${T} exceeds max_position_embeddings ${c.max_position_embeddings}`);
  }
  return est;
}

/**
 * The parameter layout cut into runs that each fit `maxElements` (one GPU buffer), never
 * inside a unit: the embedding, a decoder layer (its fused q|k|v and gate|up blocks stay
 * together), the final norm, the LM head. Returns each run's first flat offset; refuses, with
 * the numbers, a unit larger than a buffer.
 */
export function paramChunks(c: LlamaConfig, maxElements: number, bytesPerElement = 4): number[] {
  const starts = [0];
  let used = 0;
  for (const unit of paramUnits(c)) {
    if (unit.size > maxElements) {
      throw new Error(
        `model does not fit this GPU: ${unit.name} holds ${MiB(unit.size * bytesPerElement)} of weights but the adapter binds at most ` +
          `${MiB(maxElements * bytesPerElement)} per buffer`,
      );
    }
    if (used > 0 && used + unit.size > maxElements) {
      starts.push(unit.offset);
      used = 0;
    }
    used += unit.size;
  }
  return starts;
}

/** Runs of the flat layout that must share a buffer. */
function paramUnits(c: LlamaConfig): { name: string; offset: number; size: number }[] {
  const units: { name: string; offset: number; size: number }[] = [];
  for (const s of paramSpecs(c)) {
    const layer = /^model\.layers\.(\d+)\./.exec(s.name);
    const name = layer ? `layer ${layer[1]}` : s.name;
    const last = units[units.length - 1];
    if (last && last.name === name) last.size += s.size;
    else units.push({ name, offset: s.offset, size: s.size });
  }
  return units;
}

function largestUnit(c: LlamaConfig): number {
  return Math.max(...paramUnits(c).map((u) => u.size));
}


/** Byte sizes of what generation holds on the GPU besides the weights (see src/model/decoder.ts). */
export interface GenerationEstimate {
  /** Cache slots per row: the prompt and every new token but the last (sampled, never fed back). */
  slots: number;
  /** 2 · layers · B · T · kvHeads · head_dim · 4 (2 in f16). */
  kvCache: number;
  /** Activations of the prefill forward over B·promptLen tokens (released after it). */
  prefill: number;
  /** Activations of one decode step over B rows, and the logits. */
  decode: number;
  /** The largest single buffer (must fit maxStorageBufferBindingSize). */
  largestBuffer: number;
}

/** Per-token activation elements of one inference forward: two residual rows and one layer's scratch. */
function inferenceRow(c: LlamaConfig): { total: number; widest: number } {
  const H = c.hidden_size;
  const hd = headDim(c);
  const q = c.num_attention_heads * hd;
  const S = q + 2 * c.num_key_value_heads * hd;
  const I = c.intermediate_size;
  return {
    total: 2 * H + (H + 1 + S + q + c.num_attention_heads + H + H + 1 + 3 * I) + 3,
    widest: Math.max(2 * I, S, H),
  };
}

/**
 * Generation of `newTokens` after B prompts of up to promptLen tokens, of which `prefillRows`
 * are computed by the prefill (rows sharing a prompt share its forward); pure arithmetic.
 */
export function generationEstimate(c: LlamaConfig, B: number, promptLen: number, newTokens: number, kvDtype: KvDtype = 'f32', prefillRows = B): GenerationEstimate {
  const T = promptLen + newTokens - 1;
  const row = inferenceRow(c);
  const kvLayer = 2 * B * T * c.num_key_value_heads * headDim(c) * (kvDtype === 'f16' ? 2 : 4);
  const head = B * (2 * c.hidden_size + 1 + c.vocab_size + 3) * 4;
  return {
    slots: T,
    kvCache: c.num_hidden_layers * kvLayer,
    prefill: prefillRows * promptLen * row.total * 4 + head,
    decode: B * row.total * 4 + head,
    largestBuffer: Math.max(kvLayer, prefillRows * promptLen * row.widest * 4, B * c.vocab_size * 4),
  };
}

/** Refuses, with the numbers and before anything is allocated, a generation the adapter cannot hold. */
export function checkGenerationFits(
  c: LlamaConfig, B: number, promptLen: number, newTokens: number, maxBinding: number, kvDtype: KvDtype = 'f32', prefillRows = B,
): GenerationEstimate {
  const est = generationEstimate(c, B, promptLen, newTokens, kvDtype, prefillRows);
  const T = est.slots;
  if (T > c.max_position_embeddings) {
    throw new Error(
      `a prompt of ${promptLen} tokens and ${newTokens} new tokens need ${T} positions but the model's context is ${c.max_position_embeddings}`,
    );
  }
  if (est.largestBuffer > maxBinding) {
    throw new Error(
      `generation does not fit this GPU: ${B} rows × ${T} positions need a KV cache of ${MiB(est.kvCache)} ` +
        `(2 · ${c.num_hidden_layers} layers · ${B} · ${T} · ${c.num_key_value_heads} kv heads · ${headDim(c)} · ${kvDtype === 'f16' ? 2 : 4} bytes) and a prefill of ` +
        `${MiB(est.prefill)}${prefillRows < B ? ` (${prefillRows} distinct prompts)` : ''}; the largest buffer needs ${MiB(est.largestBuffer)} but the adapter binds at most ${MiB(maxBinding)}; ` +
        'use fewer prompts, shorter prompts or fewer new tokens',
    );
  }
  return est;
}
