import type { LlamaConfig } from '../model/config';
import { DEFAULT_LORA, type LoraConfig } from '../model/lora';
import { generationEstimate, memoryEstimate, type KvDtype } from '../model/memory';

/** What a model would hold on the GPU, in bytes: training in each mode, and the loop's KV cache. */
export interface ModelMemory {
  /** Training batch × sequence the estimates are for. */
  batch: number;
  seqLen: number;
  full: number;
  /** With the given adapter, or rank 16 on every projection. */
  lora: number;
  /** The same with the base stored in f16. */
  loraF16: number;
  /** The KV cache of the loop's widest generation (rows × positions), holding kvDtype. */
  kvCache: number;
  kvDtype: KvDtype;
  kvRows: number;
  kvPositions: number;
}

/**
 * The estimates the lab's model card and `npm run evolve` show: training at 8 × up to 512
 * tokens in full, with LoRA and with LoRA on an f16 base; the KV cache of `loopRows` rows
 * (the loop's widest generation: every proposal's difficulty samples) over the same length,
 * holding `kvDtype`.
 */
export function modelMemory(c: LlamaConfig, lora: LoraConfig | null, loopRows: number, kvDtype: KvDtype = 'f32'): ModelMemory {
  const batch = 8;
  const seqLen = Math.min(512, c.max_position_embeddings);
  const half = Math.floor(seqLen / 2);
  const kv = generationEstimate(c, loopRows, half, seqLen - half + 1, kvDtype);
  const adapter = lora ?? DEFAULT_LORA;
  return {
    batch,
    seqLen,
    full: memoryEstimate(c, batch, seqLen).total,
    lora: memoryEstimate(c, batch, seqLen, { lora: adapter }).total,
    loraF16: memoryEstimate(c, batch, seqLen, { lora: adapter, baseDtype: 'f16' }).total,
    kvCache: kv.kvCache,
    kvDtype,
    kvRows: loopRows,
    kvPositions: kv.slots,
  };
}

const MiB = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;

/** The estimates as one line. */
export function describeMemory(m: ModelMemory): string {
  return (
    `GPU memory training at ${m.batch}×${m.seqLen}: ${MiB(m.full)} in full, ${MiB(m.lora)} with LoRA, ${MiB(m.loraF16)} with LoRA on an f16 base; ` +
    `KV cache ${MiB(m.kvCache)} (${m.kvRows} rows × ${m.kvPositions} positions${m.kvDtype === 'f16' ? ', f16' : ''})`
  );
}
