import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

export const MAX_HEAD_DIM = 128;

export interface AttentionShape {
  B: number;
  T: number;
  heads: number;
  kvHeads: number;
  hd: number;
  /**
   * Row strides of q/dq and of k/v/dk/dv, default dense (heads·hd, kvHeads·hd). With a fused
   * q|k|v row, q, k and v are views of one tensor offset by their first column.
   */
  qStride?: number;
  kvStride?: number;
}

interface Offsets {
  q?: Tensor; k?: Tensor; v?: Tensor; o?: Tensor; lse?: Tensor; mask?: Tensor<'u32'>;
  dO?: Tensor; d?: Tensor; dq?: Tensor; dk?: Tensor; dv?: Tensor;
}

function params(s: AttentionShape, t: Offsets): Params {
  return new Params()
    .u32(s.B, s.T, s.heads, s.kvHeads)
    .u32(s.hd, t.q?.offset ?? 0, t.k?.offset ?? 0, t.v?.offset ?? 0)
    .u32(t.o?.offset ?? 0, t.lse?.offset ?? 0, t.mask?.offset ?? 0, t.dO?.offset ?? 0)
    .u32(t.d?.offset ?? 0, t.dq?.offset ?? 0, t.dk?.offset ?? 0, t.dv?.offset ?? 0)
    .f32(1 / Math.sqrt(s.hd))
    .u32(s.qStride ?? s.heads * s.hd, s.kvStride ?? s.kvHeads * s.hd, 0);
}

/** Rows (queries, or keys for dK/dV) per invocation of the unrolled kernels (see attention.wgsl). */
const ROW_BLOCK = 4;

/** head_dim a multiple of 4 compiles the unrolled vec4 form (see attention.wgsl). */
function defines(s: AttentionShape): { HD4: number; RB: number } | undefined {
  return s.hd % 4 === 0 ? { HD4: s.hd / 4, RB: ROW_BLOCK } : undefined;
}

/** The kernel's name, defines, override and how many invocations cover `heads` per token. */
function blocked(s: AttentionShape, entry: string, heads: number) {
  const d = defines(s);
  return {
    kernel: { shader: 'attention', entry, defines: d, constants: d ? { RB: ROW_BLOCK } : undefined },
    invocations: s.B * (d ? Math.ceil(s.T / ROW_BLOCK) : s.T) * heads,
  };
}

/**
 * 'rows': an invocation per block of rows, head vectors unrolled in registers (SwiftShader's:
 * faster where barriers cost a CPU's time); 'tiled': workgroups over 16-row tiles staged in
 * workgroup memory, a few vec4 accumulators an invocation (GPUs: the row form's registers
 * spill there). See attention.wgsl.
 */
export type AttentionVariant = 'rows' | 'tiled';

/** Rows of the query and key tiles of the tiled kernels (TQ, TK in attention.wgsl). */
const TILE = 16;

/** Workgroup memory of each tiled pass: the staged rows (vec4s of head_dim), scores and row state. */
function tiledBytes(entry: 'forward' | 'dq' | 'dkv', hd: number): number {
  const rows = { forward: 3 * TILE, dq: 4 * TILE, dkv: 4 * TILE }[entry];
  const scores = (entry === 'dkv' ? 2 : 1) * TILE * TILE;
  return 4 * (rows * hd + scores + 4 * TILE + 1);
}

/**
 * The tiled kernels on adapters that run cooperative kernels (not SwiftShader, see serialRows),
 * where head_dim is a multiple of 4 and the largest pass's tiles fit the workgroup memory
 * (head_dim 64: 18 KiB; 128: 34 KiB).
 */
export function attentionVariant(rt: Pick<Runtime, 'serialRows' | 'ctx'>, s: AttentionShape): AttentionVariant {
  const fits = tiledBytes('dkv', s.hd) <= rt.ctx.limits.maxComputeWorkgroupStorageSize;
  return !rt.serialRows && s.hd % 4 === 0 && fits ? 'tiled' : 'rows';
}

/** The kernel and workgroups of a pass (`entry` of the row form) covering `heads` per token. */
function pass(s: AttentionShape, variant: AttentionVariant, entry: string, heads: number) {
  if (variant === 'rows') {
    const { kernel, invocations } = blocked(s, entry, heads);
    return { kernel, workgroups: (rt: Runtime) => grid(rt, invocations, 64) };
  }
  if (s.hd % 4 !== 0) throw new Error(`attention: the tiled kernels need head_dim a multiple of 4, got ${s.hd}`);
  return {
    kernel: { shader: 'attention', entry: `${entry}_tiled`, defines: { TILED: true, HDU: Math.ceil(s.hd / 16) }, constants: { HDV: s.hd / 4 } },
    workgroups: () => [Math.ceil(s.T / TILE), heads, s.B] as const,
  };
}

function check(s: AttentionShape): void {
  if (s.hd > MAX_HEAD_DIM) throw new Error(`attention: head_dim ${s.hd} exceeds the kernel's limit of ${MAX_HEAD_DIM}`);
  if (s.heads % s.kvHeads !== 0) throw new Error('attention: heads must be a multiple of kv heads');
}

/** o = softmax(q kᵀ / √hd + causal & padding mask) v; lse [B·T, heads] saved for backward. */
export function attentionForward(
  rt: Runtime,
  s: AttentionShape,
  t: { q: Tensor; k: Tensor; v: Tensor; mask: Tensor<'u32'>; o: Tensor; lse: Tensor },
  variant = attentionVariant(rt, s),
): void {
  check(s);
  const { kernel, workgroups } = pass(s, variant, 'attention_forward', s.heads);
  rt.dispatch({
    kernel,
    params: params(s, t),
    buffers: [t.q, t.k, t.v, t.mask, t.o, t.lse],
    workgroups: workgroups(rt),
    label: 'attention_forward',
  });
}

/**
 * dq, dk, dv from dO; `d` [B·T, heads] is scratch (dO·O per row and head). dk and dv must be
 * views of one buffer (e.g. of a fused q|k|v gradient), which the kernel writes through a
 * single binding.
 */
export function attentionBackward(
  rt: Runtime,
  s: AttentionShape,
  t: {
    q: Tensor; k: Tensor; v: Tensor; mask: Tensor<'u32'>; o: Tensor; lse: Tensor;
    dO: Tensor; d: Tensor; dq: Tensor; dk: Tensor; dv: Tensor;
  },
  variant = attentionVariant(rt, s),
): void {
  check(s);
  if (t.dk.buffer !== t.dv.buffer) throw new Error('attention backward: dk and dv must be views of one buffer');
  const p = params(s, t);
  rt.dispatch({
    kernel: { shader: 'attention', entry: 'attention_backward_d' },
    params: p,
    buffers: [null, null, null, null, t.o, null, t.dO, t.d],
    workgroups: grid(rt, s.B * s.T * s.heads, 64),
    label: 'attention_backward_d',
  });
  const dq = pass(s, variant, 'attention_backward_dq', s.heads);
  rt.dispatch({
    kernel: dq.kernel,
    params: p,
    buffers: [t.q, t.k, t.v, t.mask, null, t.lse, t.dO, t.d, t.dq],
    workgroups: dq.workgroups(rt),
    label: 'attention_backward_dq',
  });
  const dkv = pass(s, variant, 'attention_backward_dkv', s.kvHeads);
  rt.dispatch({
    kernel: dkv.kernel,
    params: p,
    buffers: [
      t.q, t.k, t.v, t.mask, null, t.lse, t.dO, t.d, null,
      t.dk,
    ],
    workgroups: dkv.workgroups(rt),
    label: 'attention_backward_dkv',
  });
}
