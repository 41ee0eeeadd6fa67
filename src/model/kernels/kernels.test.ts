import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform, uploadHalf } from '../../gpu/testUtils';
import { view, type Tensor } from '../../gpu/tensor';
import { shuffle } from '../../util/random';
import { attentionBackward, attentionForward, type AttentionShape, type AttentionVariant } from './attention';
import { embeddingBackward, embeddingForward, tokenIndex } from './embedding';
import { crossEntropy } from './loss';
import { rmsnormBackward, rmsnormForward } from './norm';
import { rope, ropeTables } from './rope';

describe('embedding', () => {
  it('gathers rows and scatter-adds gradients for repeated tokens', async () => {
    const rt = await testRuntime();
    for (const [vocab, H, n] of [[7, 3, 1], [17, 65, 40], [264, 128, 300]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      const W = uniform(vocab * H, r);
      // Few distinct tokens so that most repeat.
      const tokens = Uint32Array.from({ length: n }, () => Math.floor(r() * Math.min(vocab, 5 + n / 4)));
      const tTok = rt.upload(tokens, [n], 'u32');
      // The table in f32, and in f16 at an odd offset (a frozen half-precision base).
      const half = uploadHalf(rt, W, [vocab, H], 1);
      for (const [tW, values] of [[rt.upload(W, [vocab, H]), W], [half.tensor, half.values]] as const) {
        const out = poisoned(rt, [n, H]);
        embeddingForward(rt, tTok, tW, out);
        const ref = new Float64Array(n * H);
        for (let t = 0; t < n; t++) for (let c = 0; c < H; c++) ref[t * H + c] = values[tokens[t]! * H + c]!;
        assertClose(`embedding forward ${tW.dtype} seed ${seed}`, await rt.read(out), ref, H, 0);
      }
      const dy = uniform(n * H, r);
      const prior = uniform(vocab * H, r);
      const dW = rt.upload(prior, [vocab, H]);
      const { index, unique } = tokenIndex(tokens);
      const tIndex = rt.upload(index, [index.length], 'u32');
      embeddingBackward(rt, tIndex, unique, rt.upload(dy, [n, H]), dW);
      const dRef = Float64Array.from(prior);
      const dAbs = Float64Array.from(prior, Math.abs);
      for (let t = 0; t < n; t++)
        for (let c = 0; c < H; c++) {
          dRef[tokens[t]! * H + c] = dRef[tokens[t]! * H + c]! + (dy[t * H + c]!);
          dAbs[tokens[t]! * H + c] = dAbs[tokens[t]! * H + c]! + (Math.abs(dy[t * H + c]!));
        }
      assertClose(`embedding backward seed ${seed}`, await rt.read(dW), dRef, 1, 1e-5, dAbs);
    }
  });

  it('gathers rows of halves into halves bit for bit, as words (an f16 KV cache\'s shared prefill), and refuses rows that split a word', async () => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const r = rng(seed);
    const [rows, H, n] = [9, 34, 20];
    // Any bit pattern, NaNs and infinities included: nothing may read them as numbers.
    const table = Uint16Array.from({ length: rows * H + 2 }, () => Math.floor(r() * 0x10000));
    const W = view(rt.upload(table, [table.length], 'f16'), [rows, H], 2);
    const via = Uint32Array.from({ length: n }, () => Math.floor(r() * rows));
    const ids = rt.upload(Uint32Array.from({ length: rows }, (_, i) => i), [rows], 'u32');
    const tVia = rt.upload(via, [n], 'u32');
    // The output two halves into its buffer, every half NaN before: the neighbours must stay.
    const whole = rt.upload(new Uint16Array(n * H + 4).fill(0x7e00), [n * H + 4], 'f16');
    const out = view(whole, [n, H], 2);
    embeddingForward(rt, ids, W, out, tVia);
    const expected = new Uint16Array(n * H + 4).fill(0x7e00);
    via.forEach((row, t) => expected.set(table.subarray(2 + row * H, 2 + (row + 1) * H), 2 + t * H));
    expect(Array.from(await rt.read(whole)), `seed ${seed}`).toEqual(Array.from(expected));
    expect(() => embeddingForward(rt, ids, rt.upload(new Float32Array(rows * H), [rows, H]), out, tVia)).toThrow(/needs an f16 table/);
    expect(() => embeddingForward(rt, ids, view(W, [rows, H - 1]), view(whole, [n, H - 1], 2), tVia)).toThrow(/rows and offsets of whole words/);
  });
});

describe('rmsnorm', () => {
  it.each([
    ['row per invocation', true, false],
    ['workgroup per row', false, false],
    ['row per invocation, f16 weight', true, true],
    ['workgroup per row, f16 weight', false, true],
  ])('forward, and backward for x and w, with accumulation into dx (%s)', async (_, serialRows, f16) => {
    const rt = await testRuntime({ serialRows });
    for (const [rows, cols] of [[1, 1], [3, 17], [65, 128], [7, 300]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      const eps = 1e-5;
      const x = uniform(rows * cols, r, 2);
      let w = Float32Array.from({ length: cols }, () => 1 + 0.3 * (2 * r() - 1));
      const dy = uniform(rows * cols, r);
      const dxPrior = uniform(rows * cols, r);
      const dwPrior = uniform(cols, r);
      let tw: Tensor = rt.upload(w, [cols]);
      if (f16) ({ tensor: tw, values: w } = uploadHalf(rt, w, [cols], 1));
      const [tx, tdy] = [rt.upload(x, [rows, cols]), rt.upload(dy, [rows, cols])];
      const y = poisoned(rt, [rows, cols]);
      const rstd = poisoned(rt, [rows]);
      rmsnormForward(rt, tx, tw, eps, y, rstd);
      const dx = rt.upload(dxPrior, [rows, cols]);
      const dw = rt.upload(dwPrior, [cols]);
      rmsnormBackward(rt, { x: tx, w: tw, rstd, dy: tdy, dx, dw, accumulate: true });
      const yRef = new Float64Array(rows * cols);
      const dxRef = Float64Array.from(dxPrior);
      const dwRef = Float64Array.from(dwPrior);
      const dwAbs = Float64Array.from(dwPrior, Math.abs);
      // dx sums terms that cancel where x is small against eps (a 1-wide row: 1 - xhat² → 0): its error is judged against their magnitudes, as dw's is.
      const dxAbs = Float64Array.from(dxPrior, Math.abs);
      for (let i = 0; i < rows; i++) {
        let ss = 0;
        for (let c = 0; c < cols; c++) ss += x[i * cols + c]! ** 2;
        const rs = 1 / Math.sqrt(ss / cols + eps);
        let dot = 0;
        for (let c = 0; c < cols; c++) dot += w[c]! * dy[i * cols + c]! * x[i * cols + c]! * rs;
        for (let c = 0; c < cols; c++) {
          const k = i * cols + c;
          const xhat = x[k]! * rs;
          yRef[k] = xhat * w[c]!;
          dxRef[k] = dxRef[k]! + (rs * (w[c]! * dy[k]! - (xhat * dot) / cols));
          dxAbs[k] = dxAbs[k]! + rs * (Math.abs(w[c]! * dy[k]!) + Math.abs(xhat * dot) / cols);
          dwRef[c] = dwRef[c]! + (dy[k]! * xhat);
          dwAbs[c] = dwAbs[c]! + (Math.abs(dy[k]! * xhat));
        }
      }
      assertClose(`rmsnorm y ${rows}x${cols} seed ${seed}`, await rt.read(y), yRef, cols);
      assertClose(`rmsnorm dx ${rows}x${cols} seed ${seed}`, await rt.read(dx), dxRef, cols, 2e-5, dxAbs);
      assertClose(`rmsnorm dw ${rows}x${cols} seed ${seed}`, await rt.read(dw), dwRef, 1, 1e-5, dwAbs);
    }
  });
});

describe('rope', () => {
  it('rotates pairs (i, i + hd/2) by position inside strided rows; the inverse undoes it', async () => {
    const rt = await testRuntime();
    for (const [rows, heads, hd, extra, col] of [[1, 1, 2, 0, 0], [7, 3, 16, 5, 3], [33, 4, 64, 64, 32]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      const maxPos = 64;
      const theta = 10000;
      const stride = heads * hd + extra;
      const x = uniform(rows * stride, r);
      const pos = Uint32Array.from({ length: rows }, () => Math.floor(r() * maxPos));
      const invFreq = Float64Array.from({ length: hd / 2 }, (_, i) => theta ** (-(2 * i) / hd));
      const tables = ropeTables(invFreq, maxPos);
      const t = { cos: rt.upload(tables.cos, [tables.cos.length]), sin: rt.upload(tables.sin, [tables.sin.length]), maxPos };
      const tx = rt.upload(x, [rows, stride]);
      const tpos = rt.upload(pos, [rows], 'u32');
      const layout = { heads, hd, stride, col };
      rope(rt, tx, layout, tpos, t);
      // Columns outside the rotated heads keep their values.
      const ref = Float64Array.from(x);
      const half = hd / 2;
      for (let row = 0; row < rows; row++)
        for (let h = 0; h < heads; h++)
          for (let i = 0; i < half; i++) {
            const angle = pos[row]! * theta ** (-(2 * i) / hd);
            const base = row * stride + col + h * hd;
            const a = x[base + i]!;
            const b = x[base + i + half]!;
            ref[base + i] = a * Math.cos(angle) - b * Math.sin(angle);
            ref[base + i + half] = b * Math.cos(angle) + a * Math.sin(angle);
          }
      assertClose(`rope ${rows}x${heads}x${hd} stride ${stride} seed ${seed}`, await rt.read(tx), ref, stride);
      rope(rt, tx, layout, tpos, t, true);
      assertClose(`rope inverse seed ${seed}`, await rt.read(tx), x, stride);
    }
  });
});

/** Naive float64 attention with its gradient, materialising the scores. */
function attentionRef(s: AttentionShape, q: Float32Array, k: Float32Array, v: Float32Array, mask: Uint32Array, dO: Float32Array) {
  const { B, T, heads, kvHeads, hd } = s;
  const scale = 1 / Math.sqrt(hd);
  const o = new Float64Array(B * T * heads * hd);
  const dq = new Float64Array(q.length);
  const dk = new Float64Array(k.length);
  const dv = new Float64Array(v.length);
  // Σ of the magnitudes of each gradient's terms: the scale their f32 rounding follows.
  const dqAbs = new Float64Array(q.length);
  const dkAbs = new Float64Array(k.length);
  const dvAbs = new Float64Array(v.length);
  const qi = (row: number, h: number) => row * heads * hd + h * hd;
  const ki = (row: number, g: number) => row * kvHeads * hd + g * hd;
  for (let b = 0; b < B; b++)
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / (heads / kvHeads));
      for (let i = 0; i < T; i++) {
        const row = b * T + i;
        const keys: number[] = [];
        // The key in the query's own sequence (same low half: 1 + its first column) or in the
        // prefix it continues (the query's high half); padding attends every real key before it.
        const qm = mask[row]!;
        for (let j = 0; j <= i; j++) {
          const ks = mask[b * T + j]! & 0xffff;
          if (ks && (!qm || ks === (qm & 0xffff) || ks === qm >>> 16)) keys.push(b * T + j);
        }
        if (!keys.length) continue;
        const sc = keys.map((key) => {
          let d = 0;
          for (let c = 0; c < hd; c++) d += q[qi(row, h) + c]! * k[ki(key, g) + c]!;
          return d * scale;
        });
        const m = Math.max(...sc);
        const e = sc.map((x) => Math.exp(x - m));
        const z = e.reduce((a, b2) => a + b2, 0);
        const P = e.map((x) => x / z);
        keys.forEach((key, n) => {
          for (let c = 0; c < hd; c++) o[qi(row, h) + c] = o[qi(row, h) + c]! + (P[n]! * v[ki(key, g) + c]!);
        });
        const dP = keys.map((key) => {
          let d = 0;
          for (let c = 0; c < hd; c++) d += dO[qi(row, h) + c]! * v[ki(key, g) + c]!;
          return d;
        });
        // dP and D are f32 dot products, rounded relative to the magnitudes of their terms,
        // which cancel: a key whose dP equals D (one visible key) has dS = 0 in exact
        // arithmetic but not in f32.
        const dPAbs = keys.map((key) => {
          let d = 0;
          for (let c = 0; c < hd; c++) d += Math.abs(dO[qi(row, h) + c]! * v[ki(key, g) + c]!);
          return d;
        });
        const D = P.reduce((acc, p, n) => acc + p * dP[n]!, 0);
        const DAbs = P.reduce((acc, p, n) => acc + p * dPAbs[n]!, 0);
        keys.forEach((key, n) => {
          const dS = P[n]! * (dP[n]! - D);
          const dSAbs = P[n]! * (dPAbs[n]! + DAbs);
          for (let c = 0; c < hd; c++) {
            dq[qi(row, h) + c] = dq[qi(row, h) + c]! + (dS * scale * k[ki(key, g) + c]!);
            dk[ki(key, g) + c] = dk[ki(key, g) + c]! + (dS * scale * q[qi(row, h) + c]!);
            dv[ki(key, g) + c] = dv[ki(key, g) + c]! + (P[n]! * dO[qi(row, h) + c]!);
            dqAbs[qi(row, h) + c] = dqAbs[qi(row, h) + c]! + (dSAbs * scale * Math.abs(k[ki(key, g) + c]!));
            dkAbs[ki(key, g) + c] = dkAbs[ki(key, g) + c]! + (dSAbs * scale * Math.abs(q[qi(row, h) + c]!));
            dvAbs[ki(key, g) + c] = dvAbs[ki(key, g) + c]! + (P[n]! * Math.abs(dO[qi(row, h) + c]!));
          }
        });
      }
    }
  return { o, dq, dk, dv, dqAbs, dkAbs, dvAbs };
}

describe('attention', () => {
  const variants: AttentionVariant[] = ['rows', 'tiled'];
  it.each(variants)('fused causal forward and backward with GQA and padding masks, dense and fused q|k|v rows (%s)', async (variant) => {
    const rt = await testRuntime();
    // 'packed': several sequences per row, each attending only itself; 'shared': families of a
    // prefix and sequences that each continue it (the row's end a sequence of its own in both).
    const shapes: [AttentionShape, 'none' | 'left' | 'right' | 'packed' | 'shared', boolean][] = [
      [{ B: 1, T: 1, heads: 1, kvHeads: 1, hd: 2 }, 'none', false],
      [{ B: 2, T: 7, heads: 4, kvHeads: 2, hd: 8 }, 'right', true],
      [{ B: 3, T: 17, heads: 4, kvHeads: 1, hd: 16 }, 'left', false],
      [{ B: 2, T: 9, heads: 2, kvHeads: 2, hd: 6 }, 'left', true],
      [{ B: 1, T: 65, heads: 2, kvHeads: 2, hd: 32 }, 'none', true],
      // Fewer positions than a block of rows per invocation.
      [{ B: 3, T: 2, heads: 2, kvHeads: 1, hd: 4 }, 'left', false],
      [{ B: 2, T: 3, heads: 3, kvHeads: 3, hd: 12 }, 'right', true],
      [{ B: 2, T: 23, heads: 4, kvHeads: 2, hd: 8 }, 'packed', true],
      [{ B: 1, T: 40, heads: 2, kvHeads: 1, hd: 6 }, 'packed', false],
      [{ B: 3, T: 13, heads: 2, kvHeads: 2, hd: 32 }, 'packed', false],
      [{ B: 2, T: 37, heads: 4, kvHeads: 2, hd: 8 }, 'shared', true],
      [{ B: 1, T: 45, heads: 2, kvHeads: 1, hd: 6 }, 'shared', false],
      // Several 16-row tiles: head_dim 64 (SmolLM2's, Qwen2.5-0.5B's) and one that leaves
      // some invocations of a tiled row without a fourth vec4.
      [{ B: 2, T: 50, heads: 4, kvHeads: 2, hd: 64 }, 'packed', true],
      [{ B: 1, T: 33, heads: 3, kvHeads: 1, hd: 20 }, 'shared', false],
    ];
    // The tiled kernels take head_dim in vec4s.
    for (const [s, padding, fusedRows] of shapes.filter(([s]) => variant === 'rows' || s.hd % 4 === 0)) {
      const seed = freshSeed();
      const r = rng(seed);
      const N = s.B * s.T;
      const qd = s.heads * s.hd;
      const kvd = s.kvHeads * s.hd;
      const q = uniform(N * qd, r);
      const k = uniform(N * kvd, r);
      const v = uniform(N * kvd, r);
      const dO = uniform(N * qd, r);
      const mask = new Uint32Array(N).fill(1);
      for (let b = 0; b < s.B && padding !== 'none'; b++) {
        const pad = Math.floor(r() * (s.T - 1)) + (b === 0 ? 1 : 0);
        for (let n = 0; n < pad; n++) mask[b * s.T + (padding === 'left' ? n : s.T - 1 - n)] = 0;
        if (padding !== 'packed' && padding !== 'shared') continue;
        // Sequences of 1 to 6 tokens from column 0, the row's remainder one more; shared: each
        // a prefix followed by 0 to 3 sequences that continue it.
        for (let t = s.T - pad; t < s.T; t++) mask[b * s.T + t] = s.T - pad + 1;
        for (let start = 0; start < s.T - pad; ) {
          const len = Math.min(s.T - pad - start, 1 + Math.floor(r() * 6));
          for (let t = start; t < start + len; t++) mask[b * s.T + t] = start + 1;
          const prefix = start;
          start += len;
          for (let k = padding === 'shared' ? Math.floor(r() * 4) : 0; k > 0 && start < s.T - pad; k--) {
            const n = Math.min(s.T - pad - start, 1 + Math.floor(r() * 5));
            for (let t = start; t < start + n; t++) mask[b * s.T + t] = (start + 1) | ((prefix + 1) << 16);
            start += n;
          }
        }
      }
      // Fused: each row is [q | k | v]; dense: q, k, v separate (dk and dv still share one
      // buffer, as the kernel requires).
      const S = qd + 2 * kvd;
      const pack = () => {
        const all = new Float32Array(N * S);
        for (let i = 0; i < N; i++) {
          all.set(q.subarray(i * qd, (i + 1) * qd), i * S);
          all.set(k.subarray(i * kvd, (i + 1) * kvd), i * S + qd);
          all.set(v.subarray(i * kvd, (i + 1) * kvd), i * S + qd + kvd);
        }
        return all;
      };
      const shape = fusedRows ? { ...s, qStride: S, kvStride: S } : s;
      let tq: Tensor, tk: Tensor, tv: Tensor, dq: Tensor, dk: Tensor, dv: Tensor;
      const made: Tensor[] = [];
      if (fusedRows) {
        const qkv = rt.upload(pack(), [N, S]);
        const dqkv = poisoned(rt, [N, S]);
        made.push(qkv, dqkv);
        [tq, tk, tv] = [view(qkv, [N * S], 0), view(qkv, [N * S - qd], qd), view(qkv, [N * S - qd - kvd], qd + kvd)];
        [dq, dk, dv] = [view(dqkv, [N * S], 0), view(dqkv, [N * S - qd], qd), view(dqkv, [N * S - qd - kvd], qd + kvd)];
      } else {
        [tq, tk, tv] = [rt.upload(q, [N, qd]), rt.upload(k, [N, kvd]), rt.upload(v, [N, kvd])];
        const dkv = poisoned(rt, [2, N, kvd]);
        dq = poisoned(rt, [N, qd]);
        [dk, dv] = [view(dkv, [N, kvd], 0), view(dkv, [N, kvd], N * kvd)];
        made.push(tq, tk, tv, dq, dkv);
      }
      const t = { q: tq, k: tk, v: tv, mask: rt.upload(mask, [N], 'u32'), o: poisoned(rt, [N, qd]), lse: poisoned(rt, [N, s.heads]) };
      attentionForward(rt, shape, t, variant);
      const ref = attentionRef(s, q, k, v, mask, dO);
      const what = `${variant} ${JSON.stringify(s)} ${padding} ${fusedRows ? 'fused' : 'dense'} seed ${seed}`;
      assertClose(`attention o ${what}`, await rt.read(t.o), ref.o, s.hd);
      const g = { dO: rt.upload(dO, [N, qd]), d: poisoned(rt, [N, s.heads]), dq, dk, dv };
      attentionBackward(rt, shape, { ...t, ...g }, variant);
      const unpack = async (x: Tensor, width: number, col: number, stride: number) => {
        const all = await rt.read(x);
        return Float32Array.from({ length: N * width }, (_, e) => all[Math.floor(e / width) * stride + col + (e % width)]!);
      };
      const [gq, gk, gv] = fusedRows
        ? [await unpack(made[1]!, qd, 0, S), await unpack(made[1]!, kvd, qd, S), await unpack(made[1]!, kvd, qd + kvd, S)]
        : [await rt.read(dq), await rt.read(dk), await rt.read(dv)];
      assertClose(`attention dq ${what}`, gq, ref.dq, s.hd, 1e-5, ref.dqAbs);
      assertClose(`attention dk ${what}`, gk, ref.dk, s.hd, 1e-5, ref.dkAbs);
      assertClose(`attention dv ${what}`, gv, ref.dv, s.hd, 1e-5, ref.dvAbs);
      rt.release(...made, t.mask, t.o, t.lse, g.dO, g.d);
    }
  });
});

describe('cross entropy', () => {
  it.each([
    ['row per invocation', true],
    ['workgroup per row', false],
  ])('fused loss, log-probs and in-place logit gradients, with ignored targets (%s)', async (_, serialRows) => {
    const rt = await testRuntime({ serialRows });
    for (const [rows, vocab] of [[1, 2], [7, 17], [33, 264], [5, 3001]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      const z = uniform(rows * vocab, r, 8);
      const targets = Int32Array.from({ length: rows }, (_, i) => (i % 3 === 2 ? -1 : Math.floor(r() * vocab)));
      const weights = Float32Array.from({ length: rows }, (_, i) => (targets[i]! < 0 ? 0 : r()));
      const t = {
        logits: rt.upload(z, [rows, vocab]),
        targets: rt.upload(targets, [rows], 'i32'),
        weights: rt.upload(weights, [rows]),
        loss: poisoned(rt, [rows]),
        logp: poisoned(rt, [rows]),
      };
      crossEntropy(rt, t);
      const loss = new Float64Array(rows);
      const logp = new Float64Array(rows);
      const grad = new Float64Array(rows * vocab);
      for (let i = 0; i < rows; i++) {
        if (targets[i]! < 0) continue;
        let m = -Infinity;
        for (let c = 0; c < vocab; c++) m = Math.max(m, z[i * vocab + c]!);
        let s = 0;
        for (let c = 0; c < vocab; c++) s += Math.exp(z[i * vocab + c]! - m);
        const lse = m + Math.log(s);
        logp[i] = z[i * vocab + targets[i]!]! - lse;
        loss[i] = -weights[i]! * logp[i]!;
        for (let c = 0; c < vocab; c++) {
          grad[i * vocab + c] = weights[i]! * (Math.exp(z[i * vocab + c]! - lse) - (c === targets[i] ? 1 : 0));
        }
      }
      const what = `${rows}x${vocab} seed ${seed}`;
      assertClose(`ce loss ${what}`, await rt.read(t.loss), loss, 1, 1e-5, loss.map((x, i) => Math.max(Math.abs(x), weights[i]! * 8)));
      assertClose(`ce logp ${what}`, await rt.read(t.logp), logp, 1, 1e-5, logp.map((x) => Math.max(Math.abs(x), 8)));
      // Each gradient is w·(p − onehot): its terms are bounded by w, the scale of its rounding.
      const gradScale = Float64Array.from(grad, (_, k) => weights[Math.floor(k / vocab)]!);
      assertClose(`ce grad ${what}`, await rt.read(t.logits), grad, vocab, 1e-5, gradScale);
      for (let i = 0; i < rows; i++) if (targets[i]! < 0) expect((await rt.read(t.loss))[i]).toBe(0);

      // An LM head on some tokens alone: logits row j is token picked[j]'s (in any order, ignored
      // tokens among them); the targets, weights and outputs are per token, the others untouched.
      const picked = shuffle(Array.from({ length: rows }, (_, i) => i), r).slice(0, Math.ceil(rows / 2));
      const g = {
        logits: rt.upload(Float32Array.from(picked.flatMap((i) => [...z.subarray(i * vocab, (i + 1) * vocab)])), [picked.length, vocab]),
        targets: t.targets, weights: t.weights, loss: poisoned(rt, [rows]), logp: poisoned(rt, [rows]),
        rows: rt.upload(Uint32Array.from(picked), [picked.length], 'u32'),
      };
      crossEntropy(rt, g);
      const [gLoss, gLogp, gGrad] = await Promise.all([rt.read(g.loss), rt.read(g.logp), rt.read(g.logits)]);
      const at = (x: ArrayLike<number>) => Float64Array.from(picked, (i) => x[i]!);
      assertClose(`ce loss, picked rows ${what}`, at(gLoss), at(loss), 1, 1e-5, at(loss.map((x, i) => Math.max(Math.abs(x), weights[i]! * 8))));
      assertClose(`ce logp, picked rows ${what}`, at(gLogp), at(logp), 1, 1e-5, at(logp.map((x) => Math.max(Math.abs(x), 8))));
      const pickedRows = (x: ArrayLike<number>) => Float64Array.from(picked.flatMap((i) => Array.from({ length: vocab }, (_, c) => x[i * vocab + c]!)));
      assertClose(`ce grad, picked rows ${what}`, gGrad, pickedRows(grad), vocab, 1e-5, pickedRows(gradScale));
      const untouched = Array.from({ length: rows }, (_, i) => i).filter((i) => !picked.includes(i));
      expect(untouched.every((i) => Number.isNaN(gLoss[i]) && Number.isNaN(gLogp[i]))).toBe(true);
    }
  });

  it('refuses logits rows that do not match their tokens', async () => {
    const rt = await testRuntime();
    const t = {
      logits: rt.upload(new Float32Array(6), [2, 3]), targets: rt.upload(new Int32Array(4), [4], 'i32'), weights: rt.upload(new Float32Array(4), [4]),
      loss: rt.upload(new Float32Array(4), [4]), logp: rt.upload(new Float32Array(4), [4]),
    };
    expect(() => crossEntropy(rt, t)).toThrow(/targets holds 4 values for 2 rows/);
    expect(() => crossEntropy(rt, { ...t, rows: rt.upload(new Uint32Array(3), [3], 'u32') })).toThrow(/3 token rows for 2 logits rows/);
    expect(() => crossEntropy(rt, { ...t, rows: rt.upload(new Uint32Array(2), [2], 'u32'), loss: rt.upload(new Float32Array(2), [2]) })).toThrow(/loss holds 2 values for 4 tokens/);
  });
});
