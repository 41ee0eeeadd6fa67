import { grid } from '../../gpu/ops/common';
import { Params, valueOf, type Cell } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';
import type { KvDtype } from '../memory';
import type { RopeTables } from './rope';

/** One layer's cache: K then V, each [B, T, kvHeads·hd] (see shaders/kvcache.wgsl). */
export interface KvLayout {
  B: number;
  T: number;
  kvHeads: number;
  hd: number;
  dtype: KvDtype;
}

/** Elements of one layer's cache (K and V). */
export function kvLayerSize(l: KvLayout): number {
  return 2 * l.B * l.T * l.kvHeads * l.hd;
}

/**
 * A decode step's rows: row i is the new token of sequence `table[rows + i]`, at `slot`, and
 * attends slots `table[starts + i]`..slot. `rows` and `starts` are views of one buffer. A
 * cell for `slot` lets a captured step serve later slots (see Runtime.capture): those up to
 * the span its attention was scheduled for (scheduledSpan).
 */
export interface DecodeRows {
  rows: Tensor<'u32'>;
  starts: Tensor<'u32'>;
  slot: number | Cell;
}

/** Which cache slots the rows of a q|k|v tensor belong to: a prefill's B sequences of `seqLen` tokens (token t at slot t), or a decode step's. */
export type KvRows = { seqLen: number } | DecodeRows;

interface Fused {
  /** The fused q|k|v rows: n rows of `stride` values, k at column `colK`, v right after. */
  qkv: Tensor;
  stride: number;
  colK: number;
  n: number;
}

function checkCache(l: KvLayout, cache: Tensor): void {
  if (cache.size !== kvLayerSize(l)) throw new Error(`kv cache: ${cache.size} values for a layer of ${kvLayerSize(l)}`);
  if (cache.dtype !== l.dtype) throw new Error(`kv cache: a ${cache.dtype} tensor for a cache of ${l.dtype}`);
  // Every word of halves is one invocation's: k pairs are stored two at a time, from word boundaries.
  if (l.dtype === 'f16' && (l.hd % 4 !== 0 || cache.offset % 2 !== 0)) {
    throw new Error(`kv cache in f16: head_dim ${l.hd} must be a multiple of 4 and the cache start at a word (offset ${cache.offset})`);
  }
}

/** The cache kernels' defines for a layout. */
function kvDefines(l: KvLayout) {
  return { KV_F16: l.dtype === 'f16' };
}

function checkSlots(l: KvLayout, f: Fused, where: KvRows): void {
  if ('slot' in where) {
    const slot = valueOf(where.slot);
    if (slot >= l.T) throw new Error(`kv cache: slot ${slot} beyond its ${l.T} slots`);
    if (where.rows.buffer !== where.starts.buffer) throw new Error('kv cache: rows and starts must be views of one buffer');
    if (where.rows.size < f.n || where.starts.size < f.n) throw new Error(`kv cache: a table shorter than the ${f.n} rows`);
  } else if (where.seqLen > l.T || f.n !== l.B * where.seqLen) {
    throw new Error(`kv cache: ${f.n} prefill rows of ${where.seqLen} tokens for a cache of ${l.B}×${l.T}`);
  }
}

/**
 * Rotates the q and k heads of every row of a fused q|k|v tensor in place (rope() at
 * `positions`) and copies the rotated k and the v into the layer's cache: the rotary
 * embedding and the cache store in one dispatch (shaders/rope_store.wgsl). q is at column 0,
 * k at `f.colK`.
 */
export function ropeKvStore(rt: Runtime, l: KvLayout, cache: Tensor, f: Fused, where: KvRows, heads: number, positions: Tensor<'u32'>, tables: RopeTables): void {
  checkCache(l, cache);
  checkSlots(l, f, where);
  if (f.colK !== heads * l.hd) throw new Error(`rope kv store: k at column ${f.colK}, not right after ${heads} q heads of ${l.hd}`);
  if (positions.size < f.n) throw new Error(`rope kv store: ${positions.size} positions for ${f.n} rows`);
  if (l.hd % 2) throw new Error(`rope kv store: head_dim ${l.hd} is odd`);
  const decode = 'slot' in where;
  rt.dispatch({
    kernel: { shader: 'rope_store', entry: 'rope_store', defines: kvDefines(l) },
    params: new Params()
      .u32(f.n, heads, l.kvHeads, l.hd)
      .u32(f.qkv.offset, f.stride, positions.offset, tables.maxPos)
      .u32(l.T, l.B, decode ? 0 : where.seqLen, decode ? where.slot : 0)
      .u32(decode ? where.rows.offset : 0, cache.offset, 0, 0),
    buffers: [f.qkv, positions, tables.cos, tables.sin, cache, decode ? where.rows : rt.placeholder],
    workgroups: grid(rt, f.n * ((heads + l.kvHeads) * (l.hd / 2) + l.kvHeads * l.hd)),
    label: 'rope_kv_store',
  });
}

/**
 * Slots per chunk at least, in flash-decoding: one slot per invocation of the scoring phase, a
 * workgroup's work worth its launch (and the combine's, which a single chunk needs none of).
 */
const MIN_CHUNK = 64;
/**
 * Workgroups flash-decoding aims at: about four per compute unit of a large GPU (132 on an
 * H100), so that while one waits on its reads others run.
 */
const TARGET_WORKGROUPS = 512;
/** Scores a workgroup holds (ATT_SCORES in shaders/kvcache.wgsl): chunk · group ≤ this. */
const ATT_SCORES = 2048;
/** Invocations of the split kernel (ATT_WG): the query heads of one kv head are at most this. */
const ATT_WG = 64;
/**
 * Query heads times head size the split kernel stages in workgroup memory (ATT_QS; past it the
 * unfused kernel reads q where it lies, Q_GLOBAL), and the largest head it takes (ATT_HD: a vec4
 * of the head an invocation; longer heads walk serially).
 */
const ATT_QS = 1024;
const ATT_HD = 4 * ATT_WG;

/**
 * The span a decode step's attention is scheduled for (attentionSplits): slots 0..slot rounded
 * up to a power of two, at most the cache's T. A step recorded once serves every slot up to
 * it (the kernels stop at the slot they are given), so a generation records a handful of
 * schedules, not one a token; chunks past the slot hold nothing and add nothing.
 */
export function scheduledSpan(l: KvLayout, slot: number): number {
  return Math.min(l.T, 2 ** Math.ceil(Math.log2(slot + 1)));
}

/**
 * How flash-decoding cuts the slots of a step of `rows` rows (the scheduled span of `slot`):
 * into chunks of at least MIN_CHUNK slots (one chunk below that), as many as fill
 * TARGET_WORKGROUPS workgroups (one per chunk, kv head and row), each holding its scores for
 * the group's query heads in workgroup memory.
 */
export function attentionSplits(l: KvLayout, rows: number, heads: number, slot: number): { splits: number; chunk: number } {
  const span = scheduledSpan(l, slot);
  const group = heads / l.kvHeads;
  const wanted = Math.max(1, Math.min(Math.floor(span / MIN_CHUNK), Math.ceil(TARGET_WORKGROUPS / (rows * l.kvHeads))));
  const chunk = Math.min(Math.ceil(span / wanted), Math.floor(ATT_SCORES / group));
  return { splits: Math.ceil(span / chunk), chunk };
}

/** The chunks decode attention runs at `slot`: one, unsplit, where a row's work goes to one invocation (serialAttention). */
export function attentionSchedule(rt: Runtime, l: KvLayout, rows: number, heads: number, slot: number): { splits: number; chunk: number } {
  return serialAttention(rt, l) ? { splits: 1, chunk: 0 } : attentionSplits(l, rows, heads, slot);
}

/** Whether decode attention walks each (row, head)'s slots in one invocation: on SwiftShader (Runtime.serialRows), and for heads past ATT_HD. */
function serialAttention(rt: Runtime, l: KvLayout): boolean {
  return rt.serialRows || l.hd > ATT_HD;
}

/**
 * o[i] = softmax(q_i · K_bᵀ / √hd) V_b over the cached slots of row i's sequence b, for a
 * decode step's rows (q at column 0 of the fused rows; o dense [n, heads·hd]). Where a row's
 * work goes to one invocation (SwiftShader, see Runtime.serialRows) one invocation per (row,
 * head) walks the slots; elsewhere flash-decoding splits them over workgroups. With `rope`
 * (flash-decoding only; see ropeKvAttend) the split kernel first rotates q and k at `positions`
 * and stores the new slot's k and v.
 */
export function decodeAttention(
  rt: Runtime,
  l: KvLayout,
  cache: Tensor,
  f: Fused,
  where: DecodeRows,
  heads: number,
  o: Tensor,
  rope: { positions: Tensor<'u32'>; tables: RopeTables } | null = null,
): void {
  checkCache(l, cache);
  checkSlots(l, f, where);

  if (heads % l.kvHeads !== 0) throw new Error('decode attention: heads must be a multiple of kv heads');
  if (heads / l.kvHeads > ATT_WG) throw new Error(`decode attention: ${heads / l.kvHeads} query heads per kv head (at most ${ATT_WG})`);
  if (o.size < f.n * heads * l.hd) throw new Error(`decode attention: output holds ${o.size}, need ${f.n}×${heads * l.hd}`);
  const { splits, chunk } = attentionSchedule(rt, l, f.n, heads, valueOf(where.slot));
  const params = new Params()
    .u32(f.n, l.kvHeads * l.hd, l.T, l.B)
    .u32(f.qkv.offset, f.stride, where.slot, where.rows.offset)
    .u32(where.starts.offset, heads, l.kvHeads, l.hd)
    .u32(o.offset)
    .f32(1 / Math.sqrt(l.hd))
    .u32(cache.offset, chunk, splits, rope?.positions.offset ?? 0, rope?.tables.maxPos ?? 0, 0);
  // Head vectors of ceil(hd / 4) vec4s, unrolled in every kernel; one module for all three, the
  // split kernel's own defines on it alone.
  const kernel = (entry: string, split: { FUSED_ROPE?: true; Q_GLOBAL?: true } = {}) => ({ shader: 'kvcache', entry, defines: { HD4: Math.ceil(l.hd / 4), ...kvDefines(l), ...split } });
  if (serialAttention(rt, l)) {
    rt.dispatch({
      kernel: kernel('decode_attention'),
      params,
      buffers: [f.qkv, cache, where.rows, o],
      workgroups: grid(rt, f.n * heads, 64),
      label: 'decode_attention',
    });
    return;
  }
  // Partial results of the chunks (see shaders/kvcache.wgsl); none with one chunk.
  const part = splits > 1 ? rt.empty([f.n * heads * splits * (l.hd + 2)]) : null;
  rt.dispatch({
    kernel: kernel('decode_attention_split', rope ? { FUSED_ROPE: true } : (heads / l.kvHeads) * l.hd > ATT_QS ? { Q_GLOBAL: true } : {}),
    params,
    buffers: [f.qkv, cache, where.rows, o, part ?? rt.placeholder, ...(rope ? [rope.tables.cos, rope.tables.sin] : [])],
    workgroups: [splits, l.kvHeads, f.n],
    label: rope ? 'rope_kv_attention_split' : 'decode_attention_split',
  });
  if (!part) return;
  rt.dispatch({
    kernel: kernel('decode_attention_combine'),
    params,
    buffers: [null, null, null, o, part],
    workgroups: grid(rt, f.n * heads * l.hd, 64),
    label: 'decode_attention_combine',
  });
  rt.release(part);
}

/**
 * A decode step's rotary embedding, cache store and attention (ropeKvStore, then
 * decodeAttention): in one dispatch where flash-decoding runs and the group's rotated q heads
 * fit a workgroup (shaders/kvcache.wgsl, FUSED_ROPE), else the two. `positions` must be a view
 * of the buffer that holds the rows and starts. q in the fused rows is left unrotated by the
 * fused dispatch (the cache's k and v are as ropeKvStore writes them).
 */
export function ropeKvAttend(
  rt: Runtime,
  l: KvLayout,
  cache: Tensor,
  f: Fused,
  where: DecodeRows,
  heads: number,
  positions: Tensor<'u32'>,
  tables: RopeTables,
  o: Tensor,
): void {
  if (serialAttention(rt, l) || (heads / l.kvHeads) * l.hd > ATT_QS) {
    ropeKvStore(rt, l, cache, f, where, heads, positions, tables);
    decodeAttention(rt, l, cache, f, where, heads, o);
    return;
  }
  if (f.colK !== heads * l.hd) throw new Error(`rope kv attend: k at column ${f.colK}, not right after ${heads} q heads of ${l.hd}`);
  if (positions.buffer !== where.rows.buffer) throw new Error('rope kv attend: positions must be a view of the buffer of rows and starts');
  if (positions.size < f.n) throw new Error(`rope kv attend: ${positions.size} positions for ${f.n} rows`);
  if (l.hd % 2) throw new Error(`rope kv attend: head_dim ${l.hd} is odd`);
  decodeAttention(rt, l, cache, f, where, heads, o, { positions, tables });
}
