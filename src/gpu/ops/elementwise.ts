import { Params } from '../params';
import type { Runtime } from '../runtime';
import type { DType, Tensor } from '../tensor';
import { distinctBuffers, f32Only, grid, sameSize } from './common';

const BINARY = { add: 0, mul: 1, sub: 2, siluBackward: 3 } as const;
const UNARY = { scale: 0, silu: 1 } as const;

function params(n: number, offX: number, offY: number, offOut: number, alpha = 0, rows = 0, cols = 0): Params {
  return new Params().u32(n, offX, offY, offOut).f32(alpha).u32(rows, cols, 0);
}

function binary(rt: Runtime, op: keyof typeof BINARY, x: Tensor, y: Tensor, out?: Tensor): Tensor {
  const o = out ?? rt.empty(x.shape);
  sameSize(op, x, y, o);
  f32Only(op, x, y, o);
  distinctBuffers(op, [o], [x, y]);
  rt.dispatch({
    kernel: { shader: 'elementwise', entry: 'binary', constants: { OP: BINARY[op] } },
    params: params(x.size, x.offset, y.offset, o.offset),
    buffers: [x.buffer, y.buffer, o.buffer],
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
    buffers: [x.buffer, null, o.buffer],
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
    buffers: [x.buffer, null, y.buffer],
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
    buffers: [null, null, t.buffer],
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
    buffers: [x.buffer, null, o.buffer],
    workgroups: grid(rt, x.size),
    label: 'transpose',
  });
  return o;
}
