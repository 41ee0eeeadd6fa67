import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform } from '../../gpu/testUtils';
import { shuffle } from '../../util/random';
import { policyLoss, type PolicyLossCoefficients } from './loss';

interface RowRef {
  loss: number;
  logp: number;
  entropy: number;
  grad: Float64Array;
  /** Per element, the magnitude of the gradient's terms: the scale of its f32 rounding. */
  gradScale: Float64Array;
  clipped: boolean;
}

/** The surrogate of shaders/policy_loss.wgsl in float64, written from its formula: on s = z / T, its gradient through s back to z. */
function referenceRow(logits: ArrayLike<number>, y: number, w: number, A: number, old: number, ref: number, k: PolicyLossCoefficients): RowRef {
  const V = logits.length;
  const T = k.temperature ?? 1;
  const z = Float64Array.from(logits, (x) => x / T);
  let m = -Infinity;
  for (let c = 0; c < V; c++) m = Math.max(m, z[c]!);
  let s = 0;
  for (let c = 0; c < V; c++) s += Math.exp(z[c]! - m);
  const lse = m + Math.log(s);
  const p = Float64Array.from({ length: V }, (_, c) => Math.exp(z[c]! - lse));
  let entropy = 0;
  for (let c = 0; c < V; c++) entropy -= p[c]! * (z[c]! - lse);
  const logp = z[y]! - lse;
  const ratio = Math.exp(logp - old);
  const unclipped = ratio * A;
  const clipped = Math.min(Math.max(ratio, 1 - k.clipLow), 1 + k.clipHigh) * A;
  const d = ref - logp;
  const kl = Math.exp(d) - d - 1;
  const loss = w * (-Math.min(unclipped, clipped) + k.klCoef * kl - k.entCoef * entropy);
  // d loss / d logp, then through logp = z_y − lse and through H.
  const g = w * ((unclipped <= clipped ? -unclipped : 0) + k.klCoef * (1 - Math.exp(d)));
  // g sums terms that can cancel: its rounding follows their magnitudes.
  const gMagnitude = w * ((unclipped <= clipped ? Math.abs(unclipped) : 0) + k.klCoef * (1 + Math.exp(d)));
  const grad = new Float64Array(V);
  const gradScale = new Float64Array(V);
  for (let c = 0; c < V; c++) {
    const lp = z[c]! - lse;
    const onehot = c === y ? 1 : 0;
    const ent = w * k.entCoef * p[c]! * (lp + entropy);
    grad[c] = (g * (onehot - p[c]!) + ent) / T;
    gradScale[c] = (gMagnitude * Math.max(onehot, p[c]!) + Math.abs(w * k.entCoef) * p[c]! * (Math.abs(lp) + entropy)) / T;
  }
  return { loss, logp, entropy, grad, gradScale, clipped: unclipped > clipped };
}

describe('policy-gradient loss', () => {
  it.each([
    ['row per invocation', true],
    ['workgroup per row', false],
  ])('matches the float64 PPO clipped surrogate: values and d(logits), clipped and not, both signs of A (%s)', async (_, serialRows) => {
    const rt = await testRuntime({ serialRows });
    const cases: [number, number, PolicyLossCoefficients][] = [
      [1, 2, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 }],
      [37, 17, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 }],
      [61, 264, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0.05, entCoef: 0.01 }],
      [9, 3001, { clipLow: 0.1, clipHigh: 0.3, klCoef: 0.1, entCoef: 0 }],
      // Rollouts sampled at T = 0.7 (and 1.3): everything under softmax(z / T).
      [41, 300, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0.05, entCoef: 0.01, temperature: 0.7 }],
      [23, 77, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0, temperature: 1.3 }],
    ];
    const seen = { clippedPos: 0, clippedNeg: 0, openPos: 0, openNeg: 0 };
    for (const [rows, vocab, k] of cases) {
      const seed = freshSeed();
      const r = rng(seed);
      const z = uniform(rows * vocab, r, 8);
      const targets = Int32Array.from({ length: rows }, (_, i) => (i % 5 === 4 ? -1 : Math.floor(r() * vocab)));
      const tokIn = new Float32Array(rows * 4);
      const refs: (RowRef | null)[] = [];
      for (let i = 0; i < rows; i++) {
        const row = z.subarray(i * vocab, (i + 1) * vocab);
        const y = targets[i]!;
        // Old log-probs within ±0.6 of the current ones: ratios from 0.55 to 1.8 straddle the clip range.
        const exact = y < 0 ? 0 : referenceRow(row, y, 1, 0, 0, 0, k).logp;
        const w = y < 0 ? 0 : Math.fround(0.1 + r());
        const A = Math.fround((r() - 0.5) * 4);
        const old = Math.fround(exact + (r() - 0.5) * 1.2);
        const ref = Math.fround(exact + (r() - 0.5));
        tokIn.set([w, A, old, ref], i * 4);
        const rr = y < 0 ? null : referenceRow(row, y, w, A, old, ref, k);
        refs.push(rr);
        if (rr) seen[`${rr.clipped ? 'clipped' : 'open'}${A > 0 ? 'Pos' : 'Neg'}` as keyof typeof seen]++;
      }
      const t = {
        logits: rt.upload(z, [rows, vocab]),
        targets: rt.upload(targets, [rows], 'i32'),
        tokIn: rt.upload(tokIn, [rows * 4]),
        tokOut: poisoned(rt, [rows * 3]),
      };
      policyLoss(rt, t, k);
      const [out, grad] = await Promise.all([rt.read(t.tokOut), rt.read(t.logits)]);
      const what = `${rows}x${vocab} seed ${seed}`;
      const col = (j: number, f: (x: RowRef) => number) => Float64Array.from(refs, (x) => (x ? f(x) : 0));
      const pick = (j: number) => Float64Array.from({ length: rows }, (_, i) => out[i * 3 + j]!);
      const lossScale = Float64Array.from(refs, (x, i) => (x ? tokIn[i * 4]! * (Math.abs(tokIn[i * 4 + 1]!) * 2 + 1 + 8 * k.entCoef) : 1));
      assertClose(`policy loss ${what}`, pick(0), col(0, (x) => x.loss), 1, 1e-5, lossScale);
      assertClose(`policy logp ${what}`, pick(1), col(1, (x) => x.logp), 1, 1e-5, col(1, (x) => Math.max(Math.abs(x.logp), 8)));
      assertClose(`policy entropy ${what}`, pick(2), col(2, (x) => x.entropy), 1, 1e-5, col(2, (x) => Math.max(x.entropy, 1)));
      const gradRef = new Float64Array(rows * vocab);
      const gradScale = new Float64Array(rows * vocab).fill(1);
      refs.forEach((x, i) => {
        if (!x) return;
        gradRef.set(x.grad, i * vocab);
        gradScale.set(x.gradScale, i * vocab);
      });
      assertClose(`policy d(logits) ${what}`, grad, gradRef, vocab, 1e-5, gradScale);
      for (let i = 0; i < rows; i++) {
        if (targets[i]! >= 0) continue;
        expect(out.slice(i * 3, i * 3 + 3)).toEqual(new Float32Array(3));
        expect(grad.slice(i * vocab, (i + 1) * vocab).every((g) => g === 0)).toBe(true);
      }

      // An LM head on some tokens alone: logits row j is token picked[j]'s (in any order, ignored
      // tokens among them); the targets, inputs and outputs are per token, the others untouched.
      const picked = shuffle(Array.from({ length: rows }, (_, i) => i), r).slice(0, Math.ceil(rows / 2));
      const g = {
        logits: rt.upload(Float32Array.from(picked.flatMap((i) => [...z.subarray(i * vocab, (i + 1) * vocab)])), [picked.length, vocab]),
        targets: t.targets, tokIn: t.tokIn, tokOut: poisoned(rt, [rows * 3]),
        rows: rt.upload(Uint32Array.from(picked), [picked.length], 'u32'),
      };
      policyLoss(rt, g, k);
      const [gOut, gGrad] = await Promise.all([rt.read(g.tokOut), rt.read(g.logits)]);
      const at = (x: ArrayLike<number>) => Float64Array.from(picked, (i) => x[i]!);
      const gPick = (j: number) => Float64Array.from(picked, (i) => gOut[i * 3 + j]!);
      assertClose(`policy loss, picked rows ${what}`, gPick(0), at(col(0, (x) => x.loss)), 1, 1e-5, at(lossScale));
      assertClose(`policy logp, picked rows ${what}`, gPick(1), at(col(1, (x) => x.logp)), 1, 1e-5, at(col(1, (x) => Math.max(Math.abs(x.logp), 8))));
      assertClose(`policy entropy, picked rows ${what}`, gPick(2), at(col(2, (x) => x.entropy)), 1, 1e-5, at(col(2, (x) => Math.max(x.entropy, 1))));
      const pickedRows = (x: ArrayLike<number>) => Float64Array.from(picked.flatMap((i) => Array.from({ length: vocab }, (_, c) => x[i * vocab + c]!)));
      assertClose(`policy d(logits), picked rows ${what}`, gGrad, pickedRows(gradRef), vocab, 1e-5, pickedRows(gradScale));
      const untouched = Array.from({ length: rows }, (_, i) => i).filter((i) => !picked.includes(i));
      expect(untouched.every((i) => [0, 1, 2].every((j) => Number.isNaN(gOut[i * 3 + j])))).toBe(true);
    }
    // The cases must have exercised both branches of the min for both signs of A.
    expect(Math.min(...Object.values(seen)), JSON.stringify(seen)).toBeGreaterThan(0);
  });

  it('refuses a clip range that does not contain 1 and mismatched per-row buffers', async () => {
    const rt = await testRuntime();
    const t = {
      logits: rt.upload(new Float32Array(6), [2, 3]),
      targets: rt.upload(new Int32Array(2), [2], 'i32'),
      tokIn: rt.upload(new Float32Array(8), [8]),
      tokOut: rt.upload(new Float32Array(6), [6]),
    };
    expect(() => policyLoss(rt, t, { clipLow: 1.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 })).toThrow(/clip range/);
    expect(() => policyLoss(rt, t, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0, temperature: 0 })).toThrow(/temperature 0 is not a positive number/);
    expect(() => policyLoss(rt, { ...t, tokOut: rt.upload(new Float32Array(4), [4]) }, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 })).toThrow(
      /3 per row/,
    );
    const k = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 };
    expect(() => policyLoss(rt, { ...t, rows: rt.upload(new Uint32Array(3), [3], 'u32') }, k)).toThrow(/3 token rows for 2 logits rows/);
    // Per token with rows: 4 tokens' targets need 16 inputs.
    expect(() => policyLoss(rt, { ...t, targets: rt.upload(new Int32Array(4), [4], 'i32'), rows: rt.upload(new Uint32Array(2), [2], 'u32') }, k)).toThrow(/4 per token \(16\)/);
  });
});
