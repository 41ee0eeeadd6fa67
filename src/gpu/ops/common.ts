import type { Runtime } from '../runtime';
import type { Tensor } from '../tensor';
import { shapeString } from '../tensor';

/** Workgroups for `units` work items of `width` each, folded into 2-D past the 1-D limit. */
export function grid(rt: Runtime, units: number, width = 256): [number, number] {
  const groups = Math.max(1, Math.ceil(units / width));
  const max = rt.ctx.limits.maxComputeWorkgroupsPerDimension;
  if (groups <= max) return [groups, 1];
  const y = Math.ceil(groups / max);
  return [Math.ceil(groups / y), y];
}

export function sameSize(op: string, ...ts: Tensor[]): void {
  const n = ts[0]!.size;
  for (const t of ts) {
    if (t.size !== n) throw new Error(`${op}: sizes differ (${ts.map(shapeString).join(', ')})`);
  }
}

/** WebGPU forbids binding one buffer as both read-only and writable in a dispatch. */
export function distinctBuffers(op: string, outputs: Tensor[], inputs: Tensor[]): void {
  for (const o of outputs) {
    for (const i of inputs) {
      if (o.buffer === i.buffer) throw new Error(`${op}: output shares a buffer with an input (WebGPU forbids it)`);
    }
  }
}

export function f32Only(op: string, ...ts: Tensor[]): void {
  for (const t of ts) if (t.dtype !== 'f32') throw new Error(`${op}: expects f32, got ${shapeString(t)}`);
}
