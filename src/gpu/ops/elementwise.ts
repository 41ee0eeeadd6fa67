import { Params } from '../params';
import type { Runtime } from '../runtime';
import { shapeString, type DType, type Tensor } from '../tensor';
import { distinctBuffers, f32Only, grid, sameSize } from './common';

const BINARY = { add: 0, mul: 1, sub: 2, siluBackward: 3 } as const;
const UNARY = { scale: 0, silu: 1 } as const;

function params(n: number, offX: number, offY: number, offOut: number, alpha = 0, rows = 0, cols = 0): Params {
  return new Params().u32(n, offX, offY, offOut).f32(alpha).u32(rows, cols).f32(0).u32(0, 0, 0, 0);
}

function binary(rt: Runtime, op: keyof typeof BINARY, x: Tensor, y: Tensor, out?: Tensor): Tensor {
  const o = out ?? rt.empty(x.shape);
  sameSize(op, x, y, o);
  f32Only(op, x, y, o);
  distinctBuffers(op, [o], [x, y]);
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'binary', constants: { OP: BINARY[op] } },
    params: params(x.size, x.offset, y.offset, o.offset),
    buffers: [x, y, o],
    workgroups: grid(rt, x.size),
    label: op,
  });
  return o;
}

function unary(rt: Runtime, op: keyof typeof UNARY, x: Tensor, alpha: number, out?: Tensor): Tensor {
  const o = out ?? rt.empty(x.shape);
  sameSize(op, x, o);
  f32Only(op, x, o);
  distinctBuffers(op, [o], [x]);
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'unary', constants: { OP: UNARY[op] } },
    params: params(x.size, x.offset, 0, o.offset, alpha),
    buffers: [x, null, o],
    workgroups: grid(rt, x.size),
    label: op,
  });
  return o;
}

export const add = (rt: Runtime, x: Tensor, y: Tensor, out?: Tensor) => binary(rt, 'add', x, y, out);
export const mul = (rt: Runtime, x: Tensor, y: Tensor, out?: Tensor) => binary(rt, 'mul', x, y, out);
export const sub = (rt: Runtime, x: Tensor, y: Tensor, out?: Tensor) => binary(rt, 'sub', x, y, out);
/** dx = dy · silu'(x). */
export const siluBackward = (rt: Runtime, x: Tensor, dy: Tensor, out?: Tensor) =>
  binary(rt, 'siluBackward', x, dy, out);
export const scale = (rt: Runtime, x: Tensor, alpha: number, out?: Tensor) => unary(rt, 'scale', x, alpha, out);
export const silu = (rt: Runtime, x: Tensor, out?: Tensor) => unary(rt, 'silu', x, 0, out);

/** y += alpha · x, in place. */
export function axpy(rt: Runtime, alpha: number, x: Tensor, y: Tensor): Tensor {
  sameSize('axpy', x, y);
  f32Only('axpy', x, y);
  distinctBuffers('axpy', [y], [x]);
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'axpy' },
    params: params(x.size, x.offset, 0, y.offset, alpha),
    buffers: [x, null, y],
    workgroups: grid(rt, x.size),
    label: 'axpy',
  });
  return y;
}

export function fill<D extends DType>(rt: Runtime, t: Tensor<D>, value: number): Tensor<D> {
  f32Only('fill', t);
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'fill' },
    params: params(t.size, 0, 0, t.offset, value),
    buffers: [null, null, t],
    workgroups: grid(rt, t.size),
    label: 'fill',
  });
  return t;
}

/** [..., R, C] → [..., C, R]. */
export function transpose(rt: Runtime, x: Tensor, out?: Tensor): Tensor {
  if (x.shape.length < 2) throw new Error(`transpose needs a matrix, got [${x.shape.join(', ')}]`);
  const [rows, cols] = x.shape.slice(-2) as [number, number];
  const o = out ?? rt.empty([...x.shape.slice(0, -2), cols, rows]);
  sameSize('transpose', x, o);
  f32Only('transpose', x, o);
  distinctBuffers('transpose', [o], [x]);
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'transpose' },
    params: params(x.size, x.offset, 0, o.offset, 0, rows, cols),
    buffers: [x, null, o],
    workgroups: grid(rt, x.size),
    label: 'transpose',
  });
  return o;
}

/** A matrix's row width: its last dimension. */
function width(t: Tensor): number {
  return t.shape[t.shape.length - 1] ?? 1;
}

/**
 * out[:, outCol + j] = alpha · x[:, xCol + j] (+ out's old value with `accumulate`) for j < cols:
 * a block of columns between matrices of different widths with the same rows, e.g. one
 * projection's slice of a fused q|k|v row.
 */
export function copyColumns(
  rt: Runtime,
  x: Tensor,
  xCol: number,
  out: Tensor,
  outCol: number,
  cols: number,
  options: { alpha?: number; accumulate?: boolean } = {},
): Tensor {
  f32Only('copyColumns', x, out);
  distinctBuffers('copyColumns', [out], [x]);
  const [wx, wo] = [width(x), width(out)];
  const rows = x.size / wx;
  if (out.size / wo !== rows) throw new Error(`copyColumns: row counts differ (${rows} and ${out.size / wo})`);
  if (xCol < 0 || outCol < 0 || xCol + cols > wx || outCol + cols > wo) {
    throw new Error(`copyColumns: ${cols} columns from ${xCol} of ${wx} to ${outCol} of ${wo} fall outside a row`);
  }
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'columns' },
    params: new Params()
      .u32(rows * cols, x.offset + xCol, 0, out.offset + outCol)
      .f32(options.alpha ?? 1)
      .u32(rows, cols)
      .f32(options.accumulate ? 1 : 0)
      .u32(wx, wo, 0, 0),
    buffers: [x, null, out],
    workgroups: grid(rt, rows * cols),
    label: 'columns',
  });
  return out;
}

/** out (f32) = the values of x (f16), widened. */
export function widenHalf(rt: Runtime, x: Tensor, out: Tensor): Tensor {
  return convert(rt, 'widen_half', out, x);
}

/**
 * out (f16) = x (f32) rounded to half precision (to a nearest half; magnitudes past 65504
 * clamp to it). out may start and end mid-word: its neighbours' halves are kept.
 */
export function narrowToHalf(rt: Runtime, x: Tensor, out: Tensor): Tensor {
  return convert(rt, 'narrow_half', x, out);
}

function convert(rt: Runtime, entry: 'widen_half' | 'narrow_half', f: Tensor, h: Tensor): Tensor {
  sameSize(entry, f, h);
  if (f.dtype !== 'f32' || h.dtype !== 'f16') throw new Error(`${entry}: expects f32 and f16, got ${shapeString(f)} and ${shapeString(h)}`);
  distinctBuffers(entry, [f], [h]);
  const words = entry === 'narrow_half' ? Math.ceil((h.offset + h.size) / 2) - Math.floor(h.offset / 2) : f.size;
  rt.dispatch({
    kernel: { shader: 'convert', entry },
    params: new Params().u32(f.size, f.offset, h.offset, 0),
    buffers: [f, h],
    workgroups: grid(rt, words),
    label: entry,
  });
  return entry === 'narrow_half' ? h : f;
}
