import { Params } from '../params';
import type { Runtime } from '../runtime';
import type { Tensor } from '../tensor';
import { distinctBuffers, f32Only, grid } from './common';

function rowsCols(op: string, x: Tensor): [number, number] {
  if (x.shape.length === 0) throw new Error(`${op}: needs at least one dimension`);
  const cols = x.shape[x.shape.length - 1]!;
  return [cols === 0 ? 0 : x.size / cols, cols];
}

function rowKernel(rt: Runtime, entry: string, op: number, x: Tensor, out: Tensor, rows: number, cols: number): void {
  f32Only(entry, x, out);
  distinctBuffers(entry, [out], [x]);
  rt.dispatch({
    kernel: { shader: 'reduce', entry, constants: { OP: op } },
    params: new Params().u32(rows, cols, x.offset, out.offset, 0, 0, 0, 0),
    buffers: [x, out],
    workgroups: grid(rt, rows, 1),
    label: entry === 'row_reduce' ? (op ? 'row_max' : 'row_sum') : entry,
  });
}

function rowReduce(rt: Runtime, op: number, x: Tensor, out?: Tensor): Tensor {
  const [rows, cols] = rowsCols('row reduce', x);
  const o = out ?? rt.empty(x.shape.slice(0, -1).length ? x.shape.slice(0, -1) : [1]);
  if (o.size !== rows) throw new Error(`row reduce: output holds ${o.size} values for ${rows} rows`);
  rowKernel(rt, 'row_reduce', op, x, o, rows, cols);
  return o;
}

/** Sum over the last dimension. */
export const rowSum = (rt: Runtime, x: Tensor, out?: Tensor) => rowReduce(rt, 0, x, out);
/** Max over the last dimension. */
export const rowMax = (rt: Runtime, x: Tensor, out?: Tensor) => rowReduce(rt, 1, x, out);

/** Softmax over the last dimension. */
export function softmax(rt: Runtime, x: Tensor, out?: Tensor): Tensor {
  const [rows, cols] = rowsCols('softmax', x);
  const o = out ?? rt.empty(x.shape);
  if (o.size !== x.size) throw new Error('softmax: output size differs from input');
  rowKernel(rt, 'softmax_rows', 0, x, o, rows, cols);
  return o;
}

function scalar(rt: Runtime, op: number, x: Tensor, out?: Tensor): Tensor {
  f32Only('reduce', x);
  const o = out ?? rt.empty([1]);
  distinctBuffers('reduce', [o], [x]);
  // Cooperative: 256 workgroups of 256 with tree reductions. Serial (CPU adapters, where
  // barriers are costly): 1024 invocations over contiguous chunks, then one adds them up.
  const serial = rt.serialRows;
  const partials = serial ? 1024 : Math.min(256, Math.max(1, Math.ceil(x.size / 256)));
  const partial = rt.empty([partials]);
  rt.dispatch({
    kernel: { shader: 'reduce', entry: serial ? 'scalar_partial_serial' : 'scalar_partial', constants: { OP: op } },
    params: new Params().u32(0, 0, x.offset, partial.offset, x.size, 0, 0, 0),
    buffers: [x, partial],
    workgroups: [serial ? 1024 / 64 : partials],
    label: op ? 'sum_squares' : 'sum',
  });
  rt.dispatch({
    kernel: { shader: 'reduce', entry: serial ? 'scalar_final_serial' : 'scalar_final' },
    params: new Params().u32(0, 0, partial.offset, o.offset, partials, 0, 0, 0),
    buffers: [partial, o],
    workgroups: [1],
    label: 'reduce_final',
  });
  // Recorded work runs in order, so the partials buffer can return to the pool now.
  rt.release(partial);
  return o;
}

/** Σ x, as a one-element tensor. */
export const sum = (rt: Runtime, x: Tensor, out?: Tensor) => scalar(rt, 0, x, out);
/** Σ x², as a one-element tensor (e.g. for a global gradient norm). */
export const sumSquares = (rt: Runtime, x: Tensor, out?: Tensor) => scalar(rt, 1, x, out);

export interface ColReduceArgs {
  /** [rows, cols] */
  x: Tensor;
  /** Multiplies x element-wise before the sum ([rows, cols]). */
  y?: Tensor;
  /** Multiplies each row before the sum ([rows]). */
  rowScale?: Tensor;
  /** [cols] */
  out: Tensor;
  /** Add into out instead of overwriting (gradient accumulation). */
  accumulate?: boolean;
  /** Forces a variant instead of colReduceVariant's choice. */
  variant?: ColReduceVariant;
}

export type ColReduceVariant = 'serial' | 'two-stage';

/** Workgroups the first stage aims at, and the fewest rows a block of it sums. */
const PARTIAL_WORKGROUPS = 256;
const MIN_BLOCK_ROWS = 32;

/** Row blocks of the two-stage reduction: enough for PARTIAL_WORKGROUPS with the column groups. */
function rowBlocks(rows: number, cols: number): number {
  const wanted = Math.max(1, Math.min(Math.floor(rows / MIN_BLOCK_ROWS), Math.ceil(PARTIAL_WORKGROUPS / Math.ceil(cols / 64))));
  return Math.ceil(rows / Math.ceil(rows / wanted));
}

const COL_REDUCE: Record<ColReduceVariant, (rt: Runtime, args: ColReduceArgs, rows: number, cols: number) => void> = {
  // One invocation per column, rows in order: cols invocations (e.g. 576 for a norm weight),
  // each walking every row.
  serial: (rt, { x, y, rowScale, out, accumulate = false }, rows, cols) => {
    rt.dispatch({
      kernel: { shader: 'reduce', entry: 'col_reduce', constants: { HAS_Y: !!y, HAS_S: !!rowScale } },
      params: new Params().u32(rows, cols, x.offset, out.offset, 0, y?.offset ?? 0, rowScale?.offset ?? 0, accumulate ? 1 : 0),
      buffers: [x, out, y ?? rt.placeholder, rowScale ?? rt.placeholder],
      workgroups: grid(rt, cols, 64),
      label: 'col_reduce',
    });
  },
  // Blocks of rows summed by workgroups of 64 columns × 4 lanes (col_partial), then `serial`
  // over the blocks' partials: a 2,048 × 576 norm-weight gradient runs 261 workgroups (29
  // blocks of 71 rows), then 9, where serial runs 9 each walking 2,048 rows.
  'two-stage': (rt, { x, y, rowScale, out, accumulate }, rows, cols) => {
    const blocks = rowBlocks(rows, cols);
    const partials = rt.empty([blocks, cols]);
    rt.dispatch({
      kernel: { shader: 'reduce', entry: 'col_partial', constants: { HAS_Y: !!y, HAS_S: !!rowScale } },
      params: new Params().u32(rows, cols, x.offset, partials.offset, Math.ceil(rows / blocks), y?.offset ?? 0, rowScale?.offset ?? 0, 0),
      buffers: [x, partials, y ?? rt.placeholder, rowScale ?? rt.placeholder],
      workgroups: [Math.ceil(cols / 64), blocks],
      label: 'col_partial',
    });
    COL_REDUCE.serial(rt, { x: partials, out, accumulate }, blocks, cols);
    // Recorded work runs in order, so the partials can return to the pool now.
    rt.release(partials);
  },
};

/**
 * Two stages where rows are many and the columns alone make few workgroups, on adapters that
 * run cooperative kernels (on CPU adapters a barrier costs more than the serial walk).
 */
export function colReduceVariant(rt: Pick<Runtime, 'serialRows' | 'ctx'>, rows: number, cols: number): ColReduceVariant {
  const fits = Math.ceil(cols / 64) <= rt.ctx.limits.maxComputeWorkgroupsPerDimension;
  return !rt.serialRows && fits && rowBlocks(rows, cols) > 1 ? 'two-stage' : 'serial';
}

/** out[c] (+)= Σ_r x[r, c] · y[r, c] · rowScale[r]: bias and norm-weight gradients. */
export function colReduce(rt: Runtime, args: ColReduceArgs): Tensor {
  const { x, y, rowScale, out } = args;
  const [rows, cols] = rowsCols('col reduce', x);
  if (out.size !== cols) throw new Error(`col reduce: output holds ${out.size} values for ${cols} columns`);
  if (y && y.size !== x.size) throw new Error('col reduce: y differs in size from x');
  if (rowScale && rowScale.size !== rows) throw new Error(`col reduce: row scale holds ${rowScale.size} values for ${rows} rows`);
  f32Only('col reduce', x, out, ...(y ? [y] : []), ...(rowScale ? [rowScale] : []));
  distinctBuffers('col reduce', [out], [x, ...(y ? [y] : []), ...(rowScale ? [rowScale] : [])]);
  COL_REDUCE[args.variant ?? colReduceVariant(rt, rows, cols)](rt, args, rows, cols);
  return out;
}
