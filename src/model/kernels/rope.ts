import { grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

/** cos/sin [maxPos, hd/2] of pos · inv_freq[i], computed in float64 (inv_freq from ropeInvFreq, HF's). */
export function ropeTables(invFreq: Float64Array, maxPos: number): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(maxPos * half);
  const sin = new Float32Array(maxPos * half);
  for (let pos = 0; pos < maxPos; pos++) {
    for (let i = 0; i < half; i++) {
      const angle = pos * invFreq[i]!;
      cos[pos * half + i] = Math.cos(angle);
      sin[pos * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

export interface RopeTables {
  cos: Tensor;
  sin: Tensor;
  maxPos: number;
}

/** Where the rotated values sit: `heads` heads of `hd` at column `col` of rows of `stride`. */
export interface RopeLayout {
  heads: number;
  hd: number;
  /** Row stride in elements; default heads·hd (a dense [rows, heads·hd] tensor). */
  stride?: number;
  /** First column of the rotated values within a row; default 0. */
  col?: number;
}

/** Rotates in place; `inverse` applies the transpose (the backward pass). */
export function rope(
  rt: Runtime,
  x: Tensor,
  layout: RopeLayout,
  positions: Tensor<'u32'>,
  tables: RopeTables,
  inverse = false,
): void {
  const { heads, hd } = layout;
  const stride = layout.stride ?? heads * hd;
  const col = layout.col ?? 0;
  if (col + heads * hd > stride) throw new Error(`rope: ${heads}×${hd} values at column ${col} exceed the row stride ${stride}`);
  const rows = x.size / stride;
  if (positions.size !== rows) throw new Error(`rope: ${positions.size} positions for ${rows} rows`);
  rt.dispatch({
    kernel: { shader: 'rope', entry: 'rope', constants: { INVERSE: inverse } },
    params: new Params().u32(rows, heads, hd, x.offset, positions.offset, tables.maxPos, stride, col),
    buffers: [x, positions, tables.cos, tables.sin],
    workgroups: grid(rt, (rows * heads * hd) / 2),
    label: inverse ? 'rope_backward' : 'rope_forward',
  });
}
