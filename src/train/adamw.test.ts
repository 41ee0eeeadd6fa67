import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime, uniform } from '../gpu/testUtils';
import { AdamW, type AdamWConfig, type ParamGroupRange } from './adamw';
import { learningRate } from './schedule';

function adamRef(
  p: Float64Array, m: Float64Array, v: Float64Array, g: Float32Array, ranges: ParamGroupRange[],
  c: AdamWConfig, lr: number, step: number,
): number {
  let ss = 0;
  for (const x of g) ss += x * x;
  const norm = Math.sqrt(ss);
  const scale = c.maxGradNorm > 0 && norm > c.maxGradNorm ? c.maxGradNorm / (norm + 1e-6) : 1;
  for (const r of ranges) {
    for (let i = r.offset; i < r.offset + r.size; i++) {
      const gi = g[i]! * scale;
      m[i] = c.beta1 * m[i]! + (1 - c.beta1) * gi;
      v[i] = c.beta2 * v[i]! + (1 - c.beta2) * gi * gi;
      const mhat = m[i]! / (1 - c.beta1 ** step);
      const vhat = v[i]! / (1 - c.beta2 ** step);
      p[i] = p[i]! - lr * (mhat / (Math.sqrt(vhat) + c.eps) + (r.decay ? c.weightDecay * p[i]! : 0));
    }
  }
  return norm;
}

describe('AdamW', () => {
  it('matches a float64 reference over several steps with clipping and decay groups', async () => {
    const rt = await testRuntime();
    for (const maxGradNorm of [0, 0.5]) {
      const seed = freshSeed();
      const r = rng(seed);
      const n = 1037;
      const ranges: ParamGroupRange[] = [
        { offset: 0, size: 300, decay: false },
        { offset: 300, size: 637, decay: true },
        { offset: 937, size: 63, decay: false }, // elements 1000.. belong to no parameter: untouched
      ];
      const config = { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm };
      const init = uniform(n, r);
      const params = rt.upload(init, [n]);
      const opt = new AdamW(rt, n, ranges, config);
      const p = Float64Array.from(init);
      const m = new Float64Array(n);
      const v = new Float64Array(n);
      for (let step = 1; step <= 4; step++) {
        const g = uniform(n, r, 0.2);
        const grads = rt.upload(g, [n]);
        const lr = 1e-2 * step;
        const stats = await opt.update(params, grads, lr);
        const norm = adamRef(p, m, v, g, ranges, config, lr, step);
        expect(stats.finite).toBe(true);
        expect(Math.abs(stats.gradNorm - norm) / norm).toBeLessThan(1e-5);
        // Relative to the update's scale (lr), since p itself can be near zero.
        assertClose(`adamw step ${step} clip ${maxGradNorm} seed ${seed}`, await rt.read(params), p, 1, 2e-5, p.map((x) => Math.max(Math.abs(x), lr)));
        rt.release(grads);
      }
      opt.destroy();
      rt.release(params);
    }
  });

  it('skips the whole update when any gradient is not finite', async () => {
    const rt = await testRuntime();
    const n = 64;
    const init = uniform(n, rng(freshSeed()));
    const params = rt.upload(init, [n]);
    const opt = new AdamW(rt, n, [{ offset: 0, size: n, decay: true }]);
    const g = new Float32Array(n).fill(0.1);
    g[17] = Number.NaN;
    const grads = rt.upload(g, [n]);
    const stats = await opt.update(params, grads, 0.1);
    expect(stats.finite).toBe(false);
    expect(Array.from(await rt.read(params))).toEqual(Array.from(init));
    expect(Array.from(await rt.read(opt.m)).every((x) => x === 0)).toBe(true);
    opt.destroy();
    rt.release(params, grads);
  });
});

describe('learning-rate schedule', () => {
  it('warms up linearly, then decays by cosine to the floor, or stays constant', () => {
    const s = { lr: 1, warmupSteps: 10, totalSteps: 110, kind: 'cosine' as const, minRatio: 0.1 };
    expect(learningRate(s, 0)).toBeCloseTo(0.1);
    expect(learningRate(s, 9)).toBeCloseTo(1);
    expect(learningRate(s, 10)).toBeCloseTo(1);
    expect(learningRate(s, 60)).toBeCloseTo(0.55);
    expect(learningRate(s, 110)).toBeCloseTo(0.1);
    expect(learningRate(s, 500)).toBeCloseTo(0.1);
    expect(learningRate({ ...s, kind: 'constant' }, 80)).toBe(1);
  });
});
