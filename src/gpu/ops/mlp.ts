import { Params } from '../params';
import type { Runtime } from '../runtime';
import type { Tensor } from '../tensor';
import { distinctBuffers, f32Only, grid, sameSize } from './common';

/** h = silu(gate) · up. */
export function swigluForward(rt: Runtime, gate: Tensor, up: Tensor, out?: Tensor): Tensor {
  const h = out ?? rt.empty(gate.shape);
  sameSize('swiglu', gate, up, h);
  f32Only('swiglu', gate, up, h);
  distinctBuffers('swiglu', [h], [gate, up]);
  rt.dispatch({
    kernel: { shader: 'mlp', entry: 'swiglu_forward' },
    params: new Params().u32(gate.size, gate.offset, up.offset, h.offset, 0, 0, 0, 0),
    buffers: [gate.buffer, up.buffer, h.buffer],
    workgroups: grid(rt, gate.size),
    label: 'swiglu_forward',
  });
  return h;
}

/** Given dh, returns (dgate, dup) for h = silu(gate) · up. */
export function swigluBackward(
  rt: Runtime,
  gate: Tensor,
  up: Tensor,
  dh: Tensor,
  outs?: { dGate: Tensor; dUp: Tensor },
): { dGate: Tensor; dUp: Tensor } {
  const dGate = outs?.dGate ?? rt.empty(gate.shape);
  const dUp = outs?.dUp ?? rt.empty(gate.shape);
  sameSize('swiglu backward', gate, up, dh, dGate, dUp);
  f32Only('swiglu backward', gate, up, dh, dGate, dUp);
  distinctBuffers('swiglu backward', [dh, dGate, dUp], [gate, up]);
  distinctBuffers('swiglu backward', [dGate], [dh, dUp]);
  distinctBuffers('swiglu backward', [dUp], [dh]);
  rt.dispatch({
    kernel: { shader: 'mlp', entry: 'swiglu_backward' },
    params: new Params().u32(gate.size, gate.offset, up.offset, dh.offset, dGate.offset, dUp.offset, 0, 0),
    buffers: [gate.buffer, up.buffer, dh.buffer, dGate.buffer, dUp.buffer],
    workgroups: grid(rt, gate.size),
    label: 'swiglu_backward',
  });
  return { dGate, dUp };
}
