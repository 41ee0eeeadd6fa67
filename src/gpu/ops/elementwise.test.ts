import { describe, expect, it } from 'vitest';
import { f16ToF32, f32ToHalves } from '../../util/half';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform, uploadHalf } from '../testUtils';
import { view } from '../tensor';
import { add, axpy, copyColumns, fill, mul, narrowToHalf, scale, silu, siluBackward, sub, transpose, widenHalf } from './elementwise';
import { swigluBackward, swigluForward } from './mlp';

const SIZES = [1, 3, 17, 65, 127, 300, 4099];
const sig = (x: number) => 1 / (1 + Math.exp(-x));
const siluRef = (x: number) => x * sig(x);
const dSiluRef = (x: number) => sig(x) * (1 + x * (1 - sig(x)));
/** Σ of the magnitudes of silu'(x)'s terms: the scale its f32 rounding error follows. */
const dSiluScale = (x: number) => sig(x) * (1 + Math.abs(x) * (1 - sig(x)));

describe('element-wise kernels', () => {
  it('binary ops (add, mul, sub, silu backward) at odd sizes, poisoned outputs', async () => {
    const rt = await testRuntime();
    const ops = [
      ['add', add, (x: number, y: number) => x + y, (x: number, y: number) => Math.abs(x) + Math.abs(y)],
      ['mul', mul, (x: number, y: number) => x * y, (x: number, y: number) => Math.abs(x * y)],
      ['sub', sub, (x: number, y: number) => x - y, (x: number, y: number) => Math.abs(x) + Math.abs(y)],
      ['silu backward', siluBackward, (x: number, dy: number) => dy * dSiluRef(x), (x: number, dy: number) => Math.abs(dy) * dSiluScale(x)],
    ] as const;
    for (const [name, op, ref, scaleOf] of ops) {
      for (const n of SIZES) {
        const seed = freshSeed();
        const r = rng(seed);
        const x = uniform(n, r, 4);
        const y = uniform(n, r, 4);
        const [tx, ty, out] = [rt.upload(x, [n]), rt.upload(y, [n]), poisoned(rt, [n])];
        op(rt, tx, ty, out);
        const expected = Float64Array.from(x, (v, i) => ref(v, y[i]!));
        const scales = Float64Array.from(x, (v, i) => scaleOf(v, y[i]!));
        // Element-wise: each element is its own row.
        assertClose(`${name} n=${n} seed ${seed}`, await rt.read(out), expected, 1, 1e-5, scales);
        rt.release(tx, ty, out);
      }
    }
  });

  it('scale, silu, axpy, fill and copy', async () => {
    const rt = await testRuntime();
    for (const n of SIZES) {
      const seed = freshSeed();
      const r = rng(seed);
      const x = uniform(n, r, 6);
      const y = uniform(n, r, 6);
      const alpha = 2 * r() - 1;
      const tx = rt.upload(x, [n]);
      const out = poisoned(rt, [n]);
      scale(rt, tx, alpha, out);
      assertClose(`scale n=${n} seed ${seed}`, await rt.read(out), Float64Array.from(x, (v) => alpha * v), 1);
      silu(rt, tx, out);
      assertClose(`silu n=${n} seed ${seed}`, await rt.read(out), Float64Array.from(x, siluRef), 1);
      const ty = rt.upload(y, [n]);
      axpy(rt, alpha, tx, ty);
      const axpyRef = Float64Array.from(y, (v, i) => v + alpha * x[i]!);
      const axpyScale = Float64Array.from(y, (v, i) => Math.abs(v) + Math.abs(alpha * x[i]!));
      assertClose(`axpy n=${n} seed ${seed}`, await rt.read(ty), axpyRef, 1, 1e-5, axpyScale);
      fill(rt, out, alpha);
      assertClose(`fill n=${n}`, await rt.read(out), new Float64Array(n).fill(Math.fround(alpha)), 1);
      const dst = poisoned(rt, [n]);
      rt.copy(tx, dst);
      expect(Array.from(await rt.read(dst))).toEqual(Array.from(x));
      rt.release(tx, ty, out, dst);
    }
  });

  it('writes only inside a view (offsets honoured, neighbours untouched)', async () => {
    const rt = await testRuntime();
    const r = rng(freshSeed());
    const x = uniform(10, r);
    const whole = rt.upload(new Float32Array(30).fill(7), [30]);
    const tx = rt.upload(x, [10]);
    scale(rt, tx, 2, view(whole, [10], 13));
    const got = await rt.read(whole);
    for (let i = 0; i < 30; i++) {
      const expected = i >= 13 && i < 23 ? 2 * x[i - 13]! : 7;
      expect(got[i]).toBeCloseTo(expected, 6);
    }
    rt.release(whole, tx);
  });

  it('transposes batched matrices of odd shapes', async () => {
    const rt = await testRuntime();
    for (const [b, rows, cols] of [[1, 1, 1], [1, 3, 17], [2, 65, 7], [3, 127, 300]] as const) {
      const x = uniform(b * rows * cols, rng(freshSeed()));
      const tx = rt.upload(x, [b, rows, cols]);
      const out = poisoned(rt, [b, cols, rows]);
      transpose(rt, tx, out);
      const ref = new Float64Array(x.length);
      for (let k = 0; k < b; k++)
        for (let i = 0; i < rows; i++)
          for (let j = 0; j < cols; j++) ref[k * rows * cols + j * rows + i] = x[k * rows * cols + i * cols + j]!;
      assertClose(`transpose ${b}x${rows}x${cols}`, await rt.read(out), ref, rows);
      rt.release(tx, out);
    }
  });

  it('copies and accumulates a block of columns between matrices of different widths', async () => {
    const rt = await testRuntime();
    for (const [rows, wx, xCol, wo, outCol, cols] of [[1, 1, 0, 1, 0, 1], [3, 17, 5, 9, 2, 7], [65, 40, 0, 24, 8, 16], [7, 300, 299, 2, 1, 1]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      const x = uniform(rows * wx, r, 3);
      const o = uniform(rows * wo, r, 3);
      const alpha = 2 * r() - 1;
      const tx = rt.upload(x, [rows, wx]);
      const to = poisoned(rt, [rows, wo]);
      copyColumns(rt, tx, xCol, to, outCol, cols, { alpha });
      const got = await rt.read(to);
      for (let i = 0; i < rows; i++) {
        for (let j = 0; j < cols; j++) {
          expect(got[i * wo + outCol + j], `copy ${rows}x${wx}→${wo} seed ${seed}`).toBeCloseTo(alpha * x[i * wx + xCol + j]!, 6);
        }
        // Outside the block the poison stays: nothing else was written.
        for (let j = 0; j < wo; j++) if (j < outCol || j >= outCol + cols) expect(got[i * wo + j]).toBeNaN();
      }
      rt.write(to, o);
      copyColumns(rt, tx, xCol, to, outCol, cols, { alpha, accumulate: true });
      const ref = Float64Array.from(o);
      const scales = Float64Array.from(o, Math.abs);
      for (let i = 0; i < rows; i++) {
        for (let j = 0; j < cols; j++) {
          ref[i * wo + outCol + j]! += alpha * x[i * wx + xCol + j]!;
          scales[i * wo + outCol + j]! += Math.abs(alpha * x[i * wx + xCol + j]!);
        }
      }
      assertClose(`accumulate ${rows}x${wx}→${wo} seed ${seed}`, await rt.read(to), ref, 1, 1e-5, scales);
      rt.release(tx, to);
    }
    expect(() => copyColumns(rt, rt.empty([2, 4]), 2, rt.empty([2, 4]), 0, 3)).toThrow(/outside a row/);
    expect(() => copyColumns(rt, rt.empty([2, 4]), 0, rt.empty([3, 4]), 0, 1)).toThrow(/row counts differ/);
  });

  it('SwiGLU forward and backward on fused gate|up rows', async () => {
    const rt = await testRuntime();
    for (const [rows, cols] of [[1, 1], [3, 17], [65, 64], [7, 300]] as const) {
      const n = rows * cols;
      const seed = freshSeed();
      const r = rng(seed);
      const [g, u, dh] = [uniform(n, r, 5), uniform(n, r, 5), uniform(n, r, 2)];
      // Row i is [gate row i | up row i].
      const both = new Float32Array(2 * n);
      for (let i = 0; i < rows; i++) {
        both.set(g.subarray(i * cols, (i + 1) * cols), 2 * i * cols);
        both.set(u.subarray(i * cols, (i + 1) * cols), (2 * i + 1) * cols);
      }
      const gu = rt.upload(both, [rows, 2 * cols]);
      const tdh = rt.upload(dh, [rows, cols]);
      const h = poisoned(rt, [rows, cols]);
      swigluForward(rt, gu, cols, h);
      assertClose(`swiglu ${rows}x${cols} seed ${seed}`, await rt.read(h), Float64Array.from(g, (v, i) => siluRef(v) * u[i]!), 1);
      const dgu = poisoned(rt, [rows, 2 * cols]);
      swigluBackward(rt, gu, cols, tdh, dgu);
      const all = await rt.read(dgu);
      const dGot = new Float32Array(n);
      const uGot = new Float32Array(n);
      for (let i = 0; i < rows; i++) {
        dGot.set(all.subarray(2 * i * cols, (2 * i + 1) * cols), i * cols);
        uGot.set(all.subarray((2 * i + 1) * cols, (2 * i + 2) * cols), i * cols);
      }
      const dGate = Float64Array.from(g, (v, i) => dh[i]! * u[i]! * dSiluRef(v));
      const dGateScale = Float64Array.from(g, (v, i) => Math.abs(dh[i]! * u[i]!) * dSiluScale(v));
      const dUp = Float64Array.from(g, (v, i) => dh[i]! * siluRef(v));
      assertClose(`swiglu dgate ${rows}x${cols} seed ${seed}`, dGot, dGate, 1, 1e-5, dGateScale);
      assertClose(`swiglu dup ${rows}x${cols} seed ${seed}`, uGot, dUp, 1);
      rt.release(gu, tdh, h, dgu);
    }
  });

  it('refuses mismatched sizes and aliased outputs', async () => {
    const rt = await testRuntime();
    const a = rt.empty([4]);
    expect(() => add(rt, a, rt.empty([5]))).toThrow(/sizes differ/);
    expect(() => add(rt, a, rt.empty([4]), a)).toThrow(/shares a buffer/);
  });

  it('widens f16 to f32 exactly and narrows f32 to the nearest halves, keeping the neighbours of odd ranges', async () => {
    const rt = await testRuntime();
    for (const [offset, n] of [[0, 1], [1, 1], [1, 4], [3, 300], [0, 4099], [2, 17]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      const x = uniform(n, r, 3);
      const half = uploadHalf(rt, x, [n], offset);
      const wide = poisoned(rt, [n]);
      widenHalf(rt, half.tensor, wide);
      expect(Array.from(await rt.read(wide)), `widen offset ${offset} n ${n} seed ${seed}`).toEqual(Array.from(half.values));
      // Narrowing into a buffer of other halves: its range is x rounded, the rest untouched.
      const words = Math.ceil((offset + n + 1) / 2) * 2;
      const others = f32ToHalves(uniform(words, r));
      const whole = rt.upload(others, [words], 'f16');
      const target = view(whole, [n], offset);
      const src = rt.upload(x, [n]);
      narrowToHalf(rt, src, target);
      const got = await rt.read(whole);
      for (let i = 0; i < words; i++) {
        if (i < offset || i >= offset + n) {
          expect(got[i], `neighbour half ${i} (offset ${offset} n ${n} seed ${seed})`).toBe(others[i]);
          continue;
        }
        const v = x[i - offset]!;
        // A half's spacing at v: 2^(exponent − 10), and 2^−24 below the normal range.
        const ulp = Math.max(2 ** (Math.floor(Math.log2(Math.abs(v))) - 10), 2 ** -24);
        expect(Math.abs(f16ToF32(got[i]!) - v), `narrow ${v} (seed ${seed})`).toBeLessThanOrEqual(ulp);
      }
      rt.release(half.tensor, wide, whole, src);
    }
  });
});
