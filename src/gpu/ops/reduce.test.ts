import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform } from '../testUtils';
import { colReduce, colReduceVariant, rowMax, rowSum, softmax, sum, sumSquares, type ColReduceVariant } from './reduce';

const SHAPES = [[1, 1], [3, 17], [65, 3], [2, 127], [17, 300], [4, 1000]] as const;

describe('reductions', () => {
  it('row sum and row max', async () => {
    const rt = await testRuntime();
    for (const [rows, cols] of SHAPES) {
      const seed = freshSeed();
      const x = uniform(rows * cols, rng(seed), 3);
      const t = rt.upload(x, [rows, cols]);
      const sums = new Float64Array(rows);
      const maxes = new Float64Array(rows).fill(-Infinity);
      const abs = new Float64Array(rows);
      for (let r = 0; r < rows; r++)
        for (let c = 0; c < cols; c++) {
          const v = x[r * cols + c]!;
          sums[r] = sums[r]! + v;
          abs[r] = abs[r]! + Math.abs(v);
          maxes[r] = Math.max(maxes[r]!, v);
        }
      const out = poisoned(rt, [rows]);
      rowSum(rt, t, out);
      assertClose(`row sum ${rows}x${cols} seed ${seed}`, await rt.read(out), sums, 1, 1e-5, abs);
      rowMax(rt, t, out);
      assertClose(`row max ${rows}x${cols} seed ${seed}`, await rt.read(out), maxes, 1, 0);
      rt.release(t, out);
    }
  });

  it('softmax over rows, including large-magnitude logits', async () => {
    const rt = await testRuntime();
    for (const [rows, cols] of SHAPES) {
      for (const magnitude of [1, 60]) {
        const seed = freshSeed();
        const x = uniform(rows * cols, rng(seed), magnitude);
        const t = rt.upload(x, [rows, cols]);
        const out = poisoned(rt, [rows, cols]);
        softmax(rt, t, out);
        const ref = new Float64Array(x.length);
        for (let r = 0; r < rows; r++) {
          let m = -Infinity;
          for (let c = 0; c < cols; c++) m = Math.max(m, x[r * cols + c]!);
          let s = 0;
          for (let c = 0; c < cols; c++) s += Math.exp(x[r * cols + c]! - m);
          for (let c = 0; c < cols; c++) ref[r * cols + c] = Math.exp(x[r * cols + c]! - m) / s;
        }
        assertClose(`softmax ${rows}x${cols} ×${magnitude} seed ${seed}`, await rt.read(out), ref, cols);
        rt.release(t, out);
      }
    }
  });

  it.each([
    ['serial', true],
    ['cooperative', false],
  ])('sum and sum of squares to a scalar, small to large (%s)', async (_, serialRows) => {
    const rt = await testRuntime({ serialRows });
    for (const n of [1, 3, 17, 255, 256, 257, 65537, 1_000_003]) {
      const seed = freshSeed();
      const x = uniform(n, rng(seed));
      const t = rt.upload(x, [n]);
      let s = 0;
      let sq = 0;
      let abs = 0;
      for (const v of x) {
        s += v;
        sq += v * v;
        abs += Math.abs(v);
      }
      const out = poisoned(rt, [1]);
      sum(rt, t, out);
      assertClose(`sum n=${n} seed ${seed}`, await rt.read(out), [s], 1, 1e-5, [abs]);
      sumSquares(rt, t, out);
      assertClose(`sum of squares n=${n} seed ${seed}`, await rt.read(out), [sq], 1);
      rt.release(t, out);
    }
  });
});

describe('column reduction', () => {
  const variants: ColReduceVariant[] = ['serial', 'two-stage'];
  for (const variant of variants) {
    it(`${variant}: sums columns, optionally weighted by a matrix and a row scale, and accumulates`, async () => {
      const rt = await testRuntime();
      // Many rows too (several row blocks of the two-stage variant, the last one short), columns past a workgroup's 64.
      for (const [rows, cols] of [...SHAPES, [1000, 65], [257, 130]]) {
        for (const [withY, withS, accumulate] of [[false, false, false], [true, true, false], [true, false, true], [false, true, true]]) {
          const seed = freshSeed();
          const r = rng(seed);
          const x = uniform(rows * cols, r);
          const y = uniform(rows * cols, r);
          const s = uniform(rows, r);
          const prior = uniform(cols, r);
          const ref = new Float64Array(cols);
          const abs = new Float64Array(cols);
          for (let c = 0; c < cols; c++) {
            ref[c] = accumulate ? prior[c]! : 0;
            abs[c] = Math.abs(ref[c]!);
            for (let i = 0; i < rows; i++) {
              const v = x[i * cols + c]! * (withY ? y[i * cols + c]! : 1) * (withS ? s[i]! : 1);
              ref[c] = ref[c]! + v;
              abs[c] = abs[c]! + Math.abs(v);
            }
          }
          const tx = rt.upload(x, [rows, cols]);
          const ty = withY ? rt.upload(y, [rows, cols]) : undefined;
          const ts = withS ? rt.upload(s, [rows]) : undefined;
          const out = accumulate ? rt.upload(prior, [cols]) : poisoned(rt, [cols]);
          colReduce(rt, { x: tx, y: ty, rowScale: ts, out, accumulate, variant });
          const what = `col reduce ${variant} ${rows}x${cols} y=${withY} s=${withS} acc=${accumulate} seed ${seed}`;
          assertClose(what, await rt.read(out), ref, 1, 1e-5, abs);
          rt.release(tx, out, ...(ty ? [ty] : []), ...(ts ? [ts] : []));
        }
      }
    });
  }

  it('runs two stages on GPUs where rows are many and columns few', async () => {
    const rt = await testRuntime();
    const gpu = { serialRows: false, ctx: rt.ctx };
    expect(colReduceVariant(gpu, 2048, 576)).toBe('two-stage');
    // One block of rows, or columns enough to fill the GPU by themselves: one pass.
    expect(colReduceVariant(gpu, 40, 576)).toBe('serial');
    expect(colReduceVariant(gpu, 2048, 65536)).toBe('serial');
    expect(colReduceVariant({ ...gpu, serialRows: true }, 2048, 576)).toBe('serial');
  });
});
