import { Params } from '../params';
import type { Runtime } from '../runtime';
import type { Tensor } from '../tensor';
import { distinctBuffers, f32Only, grid } from './common';

/** Rows of a fused [rows, 2·cols] gate|up tensor. */
function rowsOf(op: string, gu: Tensor, cols: number): number {
  if (gu.size % (2 * cols) !== 0) throw new Error(`${op}: ${gu.size} values are not rows of 2·${cols} (gate|up)`);
  return gu.size / (2 * cols);
}

/** h = silu(gate) · up for fused rows gu = [gate | up] ([rows, 2·cols]); h is [rows, cols]. */
export function swigluForward(rt: Runtime, gu: Tensor, cols: number, out?: Tensor): Tensor {
  const rows = rowsOf('swiglu', gu, cols);
  const h = out ?? rt.empty([rows, cols]);
  if (h.size !== rows * cols) throw new Error(`swiglu: output holds ${h.size} values, need ${rows}×${cols}`);
  f32Only('swiglu', gu, h);
  distinctBuffers('swiglu', [h], [gu]);
  rt.dispatch({
    kernel: { shader: 'mlp', entry: 'swiglu_forward' },
    params: new Params().u32(rows * cols, gu.offset, h.offset, 0, cols, 0, 0, 0),
    buffers: [gu, h],
    workgroups: grid(rt, rows * cols),
    label: 'swiglu_forward',
  });
  return h;
}

/** Given dh [rows, cols], writes [d gate | d up] into dgu in the fused layout of gu. */
export function swigluBackward(rt: Runtime, gu: Tensor, cols: number, dh: Tensor, dgu: Tensor): Tensor {
  const rows = rowsOf('swiglu backward', gu, cols);
  if (dgu.size !== gu.size || dh.size !== rows * cols) throw new Error('swiglu backward: shape mismatch');
  f32Only('swiglu backward', gu, dh, dgu);
  distinctBuffers('swiglu backward', [dh, dgu], [gu]);
  distinctBuffers('swiglu backward', [dgu], [dh]);
  rt.dispatch({
    kernel: { shader: 'mlp', entry: 'swiglu_backward' },
    params: new Params().u32(rows * cols, gu.offset, dh.offset, dgu.offset, cols, 0, 0, 0),
    buffers: [gu, dh, dgu],
    workgroups: grid(rt, rows * cols),
    label: 'swiglu_backward',
  });
  return dgu;
}
