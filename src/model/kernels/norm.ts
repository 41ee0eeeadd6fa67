import { distinctBuffers, grid } from '../../gpu/ops/common';
import { colReduce } from '../../gpu/ops/reduce';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

function rowsCols(x: Tensor): [number, number] {
  const cols = x.shape[x.shape.length - 1]!;
  return [x.size / cols, cols];
}

/** y = x · rstd · w per row (w f32, or f16 read as f32); writes rstd [rows] for the backward pass. */
export function rmsnormForward(rt: Runtime, x: Tensor, w: Tensor, eps: number, y: Tensor, rstd: Tensor): void {
  const [rows, cols] = rowsCols(x);
  if (w.size !== cols || y.size !== x.size || rstd.size !== rows) throw new Error('rmsnorm: shape mismatch');
  distinctBuffers('rmsnorm', [y, rstd], [x, w]);
  rt.dispatch({
    kernel: { shader: 'norm', entry: rt.serialRows ? 'rmsnorm_forward_serial' : 'rmsnorm_forward', defines: { W_F16: w.dtype === 'f16' } },
    params: new Params().u32(rows, cols, x.offset, w.offset, y.offset, rstd.offset, 0, 0).f32(eps).u32(0, 0, 0),
    buffers: [x, w, y, rstd],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
    label: 'rmsnorm_forward',
  });
}

/**
 * dx (+)= d/dx, and dw += Σ_rows dy ⊙ x · rstd (skipped without `dw`: a frozen norm). With
 * `accumulate`, dx is added to (the residual stream's gradient) rather than overwritten.
 */
export function rmsnormBackward(
  rt: Runtime,
  args: { x: Tensor; w: Tensor; rstd: Tensor; dy: Tensor; dx: Tensor; dw?: Tensor; accumulate: boolean },
): void {
  const { x, w, rstd, dy, dx, dw } = args;
  const [rows, cols] = rowsCols(x);
  if (dy.size !== x.size || dx.size !== x.size || (dw && dw.size !== cols)) throw new Error('rmsnorm backward: shape mismatch');
  distinctBuffers('rmsnorm backward', [dx], [x, w, dy, rstd]);
  rt.dispatch({
    kernel: { shader: 'norm', entry: rt.serialRows ? 'rmsnorm_backward_serial' : 'rmsnorm_backward', defines: { W_F16: w.dtype === 'f16' } },
    params: new Params()
      .u32(rows, cols, x.offset, w.offset, 0, rstd.offset, dy.offset, dx.offset)
      .f32(0)
      .u32(args.accumulate ? 1 : 0, 0, 0),
    buffers: [x, w, null, rstd, dy, dx],
    workgroups: grid(rt, rows, rt.serialRows ? 64 : 1),
    label: 'rmsnorm_backward',
  });
  if (dw) colReduce(rt, { x: dy, y: x, rowScale: rstd, out: dw, accumulate: true });
}
