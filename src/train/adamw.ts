import { grid } from '../gpu/ops/common';
import { fill } from '../gpu/ops/elementwise';
import { sumSquares } from '../gpu/ops/reduce';
import { Params } from '../gpu/params';
import type { Runtime } from '../gpu/runtime';
import { view, type Tensor } from '../gpu/tensor';

export interface AdamWConfig {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Global gradient-norm clip; 0 disables. */
  maxGradNorm: number;
}

export const DEFAULT_ADAMW: AdamWConfig = { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1.0 };

/** A contiguous range of the flat parameter buffer and whether weight decay applies. */
export interface ParamGroupRange {
  offset: number;
  size: number;
  decay: boolean;
}

export interface StepStats {
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
  /** Whether every gradient was finite (otherwise the step changed nothing). */
  finite: boolean;
}

/**
 * AdamW over a flat parameter buffer in one dispatch (a 2-bit code per element says where
 * weight decay applies), in the same submit as the gradient-norm clip that precedes it.
 */
export class AdamW {
  readonly m: Tensor<'f32'>;
  readonly v: Tensor<'f32'>;
  private readonly stats: Tensor;
  private readonly codes: Tensor<'u32'>;
  step = 0;

  constructor(
    private readonly rt: Runtime,
    private readonly size: number,
    ranges: ParamGroupRange[],
    readonly config: AdamWConfig = DEFAULT_ADAMW,
  ) {
    this.m = fill(rt, rt.empty([size], 'f32', 'adam.m'), 0);
    this.v = fill(rt, rt.empty([size], 'f32', 'adam.v'), 0);
    this.stats = rt.empty([4], 'f32', 'adam.stats');
    // 2 bits per element, 16 per word: inside a parameter (bit 0), weight decay (bit 1).
    const codes = new Uint32Array(Math.max(1, Math.ceil(size / 16)));
    for (const r of ranges) {
      if (r.offset < 0 || r.size < 0 || r.offset + r.size > size) throw new Error('adamw: a parameter range lies outside the buffer');
      const code = r.decay ? 3 : 1;
      for (let i = r.offset; i < r.offset + r.size; i++) {
        const shift = (i & 15) * 2;
        if ((codes[i >> 4]! >>> shift) & 1) throw new Error('adamw: parameter ranges overlap');
        codes[i >> 4] = codes[i >> 4]! | (code << shift);
      }
    }
    this.codes = rt.upload(codes, [codes.length], 'u32');
  }

  /** Records clip + update; returns a promise of the step's gradient statistics. */
  update(weights: Tensor, grads: Tensor, lr: number): Promise<StepStats> {
    const { rt, config: c } = this;
    if (weights.size !== this.size || grads.size !== this.size) throw new Error('adamw: parameter/gradient size mismatch');
    this.step++;
    sumSquares(rt, grads, view(this.stats, [1], 0));
    const params = new Params()
      .u32(this.size, weights.offset, grads.offset, this.m.offset)
      .u32(this.v.offset, 0, 0, 0)
      .f32(lr, c.beta1, c.beta2, c.eps, c.weightDecay, 1 - c.beta1 ** this.step, 1 - c.beta2 ** this.step, c.maxGradNorm);
    rt.dispatch({
      kernel: { shader: 'optimizer', entry: 'clip_scale' },
      params,
      buffers: [null, null, null, null, this.stats],
      workgroups: [1],
      label: 'clip_scale',
    });
    rt.dispatch({
      kernel: { shader: 'optimizer', entry: 'adamw' },
      params,
      buffers: [weights, grads, this.m, this.v, this.stats, this.codes],
      workgroups: grid(rt, this.size),
      label: 'adamw',
    });
    return rt.read(this.stats).then((s) => {
      const finite = s[3] === 1;
      // A skipped step leaves the moments untouched, so it must not advance bias correction.
      if (!finite) this.step--;
      return { gradNorm: s[1]!, finite };
    });
  }

  /** Restores moments (e.g. from a checkpoint) and the step count. */
  load(m: Float32Array, v: Float32Array, step: number): void {
    this.rt.write(this.m, m);
    this.rt.write(this.v, v);
    this.step = step;
  }

  destroy(): void {
    this.rt.release(this.m, this.v, this.stats, this.codes);
  }
}
