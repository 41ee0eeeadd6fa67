/**
 * A model's parameters on the GPU in the flat layout of their specs (the base model's, or a
 * LoRA adapter's): one buffer or, beyond what one buffer binds, consecutive runs of it, in f32
 * or f16; their gradients; and the checks and copies their weights go through.
 */
import { fill, widenHalf } from '../gpu/ops/elementwise';
import type { Runtime } from '../gpu/runtime';
import { view, type Tensor } from '../gpu/tensor';
import { HALF_MAX } from '../util/half';
import type { ParamSpec } from './config';
import type { BaseDtype } from './memory';

/**
 * Parameters in the flat layout of their specs, held in one GPU buffer or, beyond what one
 * buffer binds, in consecutive runs of it (`starts`: each buffer's first flat offset), with
 * named views; and their gradients once asked for (one flat buffer: training needs it whole).
 * An f16 set is frozen: it has no flat f32 view and no gradients.
 */
export class ParamSet {
  private readonly views = new Map<string, Tensor>();
  private gradBuffer: Tensor<'f32'> | null = null;
  private readonly gradViews = new Map<string, Tensor>();
  /** Elements in all. */
  readonly size: number;
  readonly dtype: BaseDtype;

  constructor(
    private readonly rt: Runtime,
    readonly specs: ParamSpec[],
    readonly buffers: readonly Tensor<'f32' | 'f16'>[],
    private readonly starts: readonly number[] = [0],
  ) {
    this.size = specs.reduce((n, s) => n + s.size, 0);
    this.dtype = buffers[0]!.dtype;
    for (const s of specs) this.views.set(s.name, this.at(s.offset, s.shape));
  }

  /** A view of `shape` at a flat offset (it must lie within one buffer). */
  at(offset: number, shape: readonly number[]): Tensor {
    const k = bufferIndex(this.starts, offset);
    return view(this.buffers[k]!, shape, offset - this.starts[k]!);
  }

  /** The parameters as one flat buffer, where they fit in one. */
  get params(): Tensor<'f32'> {
    if (this.dtype === 'f16') {
      throw new Error('the base weights are stored in f16, frozen: train a LoRA adapter, or load the model in f32 to train it in full');
    }
    if (this.buffers.length > 1) {
      throw new Error(
        `the model's ${(this.size / 1e6).toFixed(1)} M parameters span ${this.buffers.length} GPU buffers (more than one binds): ` +
          'it can generate and train a LoRA adapter, but not train in full here',
      );
    }
    return this.buffers[0] as Tensor<'f32'>;
  }

  param(name: string): Tensor {
    const t = this.views.get(name);
    if (!t) throw new Error(`no parameter "${name}"`);
    return t;
  }

  has(name: string): boolean {
    return this.views.has(name);
  }

  /** The flat gradient buffer (allocated, zeroed, on first use). */
  get grads(): Tensor<'f32'> {
    if (!this.gradBuffer) {
      // Gradients are one flat buffer, like the parameters they pair with: refused when split.
      void this.params;
      this.gradBuffer = this.rt.empty([this.size], 'f32', 'grads');
      for (const s of this.specs) this.gradViews.set(s.name, view(this.gradBuffer, s.shape, s.offset));
      fill(this.rt, this.gradBuffer, 0);
    }
    return this.gradBuffer;
  }

  grad(name: string): Tensor {
    void this.grads;
    const t = this.gradViews.get(name);
    if (!t) throw new Error(`no parameter "${name}"`);
    return t;
  }

  /** The parameters as one flat host array (read one buffer at a time: the host holds one part beside it). */
  async read(): Promise<Float32Array> {
    const flat = new Float32Array(this.size);
    for (let k = 0; k < this.buffers.length; k++) flat.set(await this.rt.readF32(this.buffers[k]!), this.starts[k]!);
    return flat;
  }

  /** Throws, naming the tensor, if a value lies beyond half precision's range (read one buffer at a time). */
  async checkHalfRange(): Promise<void> {
    for (let k = 0; k < this.buffers.length; k++) {
      const part = await this.rt.read(this.buffers[k]!);
      for (const s of this.specs) {
        const from = s.offset - this.starts[k]!;
        if (from >= 0 && from < part.length) checkHalfRange(s.name, part.subarray(from, from + s.size));
      }
    }
  }

  /** Gives the gradient buffer back (a set that no longer trains). */
  dropGrads(): void {
    if (this.gradBuffer) this.rt.release(this.gradBuffer);
    this.gradBuffer = null;
    this.gradViews.clear();
  }

  destroy(): void {
    this.dropGrads();
    this.rt.release(...this.buffers);
  }
}

/** Empty buffers for parameters placed at `starts` (see Transformer.placement). */
export function placeParams(rt: Runtime, specs: ParamSpec[], starts: readonly number[], dtype: BaseDtype): ParamSet {
  const size = specs.reduce((n, s) => n + s.size, 0);
  const buffers = starts.map((start, k) => rt.empty([(starts[k + 1] ?? size) - start], dtype, `params.${k}`));
  return new ParamSet(rt, specs, buffers, starts);
}

/** Throws, naming the tensor, if a value lies beyond half precision's range. */
export function checkHalfRange(name: string, data: ArrayLike<number>): void {
  for (let i = 0; i < data.length; i++) {
    if (Math.abs(data[i]!) > HALF_MAX) throw new Error(`${name} holds ${data[i]}, beyond f16's largest value ${HALF_MAX}: keep this model's base in f32`);
  }
}

/** Which buffer holds flat offset `offset`. */
export function bufferIndex(starts: readonly number[], offset: number): number {
  let k = starts.length - 1;
  while (starts[k]! > offset) k--;
  return k;
}

/** Records an f32 copy of a weight (widened if stored in f16); the caller releases it. */
export function f32Copy(rt: Runtime, w: Tensor): Tensor<'f32'> {
  const copy = rt.empty(w.shape, 'f32', 'weight.f32');
  if (w.dtype === 'f16') widenHalf(rt, w, copy);
  else rt.copy(w, copy);
  return copy;
}
