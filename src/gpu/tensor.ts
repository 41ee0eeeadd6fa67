/**
 * Element types. 'f16' is IEEE half precision stored two to a 32-bit word (read in WGSL with
 * unpack2x16float, core WGSL: no shader-f16 needed); on the host its values are the bits.
 */
export type DType = 'f32' | 'i32' | 'u32' | 'f16';

export const BYTES_PER_ELEMENT: Record<DType, number> = { f32: 4, i32: 4, u32: 4, f16: 2 };

export type TypedArrayFor<D extends DType> = D extends 'f32'
  ? Float32Array
  : D extends 'i32'
    ? Int32Array
    : D extends 'f16'
      ? Uint16Array
      : Uint32Array;

/**
 * A view of `size` elements of a GPU buffer starting at element `offset`. Kernels take
 * the offset as a parameter, so views need no binding-offset alignment.
 */
export interface Tensor<D extends DType = DType> {
  readonly buffer: GPUBuffer;
  readonly shape: readonly number[];
  readonly dtype: D;
  /** In elements. */
  readonly offset: number;
  /** Number of elements: the product of the shape. */
  readonly size: number;
}

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new Error(`bad dimension ${d} in shape [${shape.join(', ')}]`);
    n *= d;
  }
  return n;
}

/** A tensor over part of another's buffer (same dtype), e.g. one matrix of a batch. */
export function view<D extends DType>(t: Tensor<D>, shape: readonly number[], offset = 0): Tensor<D> {
  const size = numel(shape);
  if (offset < 0 || offset + size > t.size) {
    throw new Error(`view [${shape.join(', ')}] at ${offset} exceeds tensor of ${t.size} elements`);
  }
  return { buffer: t.buffer, shape: [...shape], dtype: t.dtype, offset: t.offset + offset, size };
}

export function shapeString(t: Pick<Tensor, 'shape' | 'dtype'>): string {
  return `${t.dtype}[${t.shape.join(', ')}]`;
}
