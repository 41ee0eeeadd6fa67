import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform } from '../../gpu/testUtils';
import { view, type Tensor } from '../../gpu/tensor';
import type { Runtime } from '../../gpu/runtime';
import { f32ToHalves, halvesToF32 } from '../../util/half';
import type { KvDtype } from '../memory';
import { attentionSplits, decodeAttention, kvLayerSize, ropeKvAttend, ropeKvStore, scheduledSpan, type KvLayout } from './kvcache';
import { rope, ropeTables, type RopeTables } from './rope';

/** Rotary tables of one position, 0, where the rotation is exactly the identity. */
function identityRope(rt: Runtime, hd: number): RopeTables {
  const { cos, sin } = ropeTables(new Float64Array(hd / 2).fill(1), 1);
  return { cos: rt.upload(cos, [cos.length]), sin: rt.upload(sin, [sin.length]), maxPos: 1 };
}

/**
 * A decode step's batch for one start per row: rows + 1 sequences, each but sequence 1 with a
 * row, in a compacted order (the last first): two starts give sequences [2, 0] of 3.
 */
function decodeBatch(starts: readonly number[]): { B: number; rows: number[] } {
  const B = starts.length + 1;
  return { B, rows: Array.from({ length: B }, (_, i) => B - 1 - i).filter((b) => b !== 1) };
}

/** 12 rows over 201 slots: flash-decoding's chunks (68 slots) hold more than its workgroup has invocations, and late starts leave first chunks empty. */
const MANY_STARTS = Array.from({ length: 12 }, (_, i) => (i * 37) % 120);

/** Cases both attention paths run: one chunk at P = 7, chunks of 64 at P = 90 (the first empty for a prompt starting at 70), two passes of ATT_HEADS. */
const ATTENTION_CASES = [
    ['head_dim 8, GQA', 8, 4, 2, 7, [3, 1]],
    ['head_dim 6 (not a multiple of 4), MHA', 6, 3, 3, 7, [3, 1]],
    ['head_dim 8, GQA, 91 slots', 8, 4, 2, 90, [3, 70]],
    ['Qwen2.5-0.5B heads (14 over 2 kv heads, head_dim 64), 91 slots', 64, 14, 2, 90, [3, 70]],
    // More query heads to a kv head than the split kernel sums at once (ATT_HEADS, 8): two passes.
    ['12 heads over 1 kv head (head_dim 8), 91 slots', 8, 12, 1, 90, [3, 70]],
] as const;

/** The cache dtypes a head size allows: an f16 cache needs head_dim a multiple of 4 (refused otherwise). */
function cacheDtypes(hd: number): KvDtype[] {
  return hd % 4 === 0 ? ['f32', 'f16'] : ['f32'];
}

describe('kv cache', () => {
  // Serial: one invocation per (row, head), SwiftShader's; flash-decoding otherwise. P = 7 is one
  // chunk (the split kernel writes O); P = 90 cuts the slots into chunks of 64, the first empty
  // for the row whose prompt starts at 70; 12 rows at P = 200, chunks of 68 slots.
  it.each([
    ...ATTENTION_CASES,
    ['head_dim 32, GQA 4:1', 32, 4, 1, 7, [3, 1]],
    ['head_dim 6, MHA, 91 slots', 6, 3, 3, 90, [70, 0]],
    // More q values to a kv head than the split kernel stages (ATT_QS, 1,024): read where they lie.
    ['17 heads over 1 kv head of 64, 91 slots', 64, 17, 1, 90, [3, 70]],
    // A head longer than the split kernel's 64 vec4s: serial on every adapter.
    ['head_dim 260 (past ATT_HD), MHA', 260, 2, 2, 7, [3, 1]],
    ['Qwen2.5-0.5B heads, 12 rows over 201 slots', 64, 14, 2, 200, MANY_STARTS],
    ['head_dim 6, MHA, 12 rows over 201 slots', 6, 3, 3, 200, MANY_STARTS],
  ] as const)('stores prefill and decode rows, and decode attention reads only the live slots (%s)', async (_, hd, heads, kvHeads, P, starts) => {
    for (const dtype of cacheDtypes(hd)) {
      for (const serialRows of [true, false]) await storeAndAttend(await testRuntime({ serialRows }), hd, heads, kvHeads, P, starts, dtype);
    }
  });

  it('flash-decoding launches a workgroup per chunk, kv head and row, then one invocation per output to combine them', async () => {
    const rt = await testRuntime({ serialRows: false });
    // Qwen2.5-0.5B's attention: 14 query heads over 2 kv heads of 64, one row, 300 slots.
    const layout: KvLayout = { B: 1, T: 512, kvHeads: 2, hd: 64, dtype: 'f32' };
    const { splits, chunk } = attentionSplits(layout, 1, 14, 299);
    // Chunks of at least 64 slots (one per invocation of the scoring phase), as many as make 512 workgroups where the span allows.
    expect(chunk).toBeGreaterThanOrEqual(64);
    expect(splits * chunk).toBeGreaterThanOrEqual(300);
    expect(splits).toBe(512 / 64);
    const cache = rt.empty([kvLayerSize(layout)]);
    const qkv = rt.empty([1, 18 * 64]);
    const table = rt.upload(Uint32Array.from([0, 0]), [2], 'u32');
    const o = rt.empty([1, 14 * 64]);
    const before = { ...rt.counters };
    decodeAttention(rt, layout, cache, { qkv, stride: 18 * 64, colK: 14 * 64, n: 1 }, { rows: view(table, [1]), starts: view(table, [1], 1), slot: 299 }, 14, o);
    expect(rt.counters.dispatches - before.dispatches).toBe(2);
    expect(rt.counters.workgroups - before.workgroups).toBe(splits * 2 + (14 * 64) / 64);
    // A context of 64 slots is one chunk: one dispatch, as many workgroups as kv heads (slots
    // 0..40 scheduled as 64, the power of two above).
    expect(attentionSplits(layout, 1, 14, 40)).toEqual({ splits: 1, chunk: 64 });
    // A span of 204 slots (a cache of 204): three chunks of 68, each longer than the workgroup (MANY_STARTS' cases above rest on it).
    for (const [kvHeads, hd, heads] of [[2, 64, 14], [3, 6, 3], [2, 8, 4]] as const) {
      expect(attentionSplits({ B: 13, T: 204, kvHeads, hd, dtype: 'f32' }, 12, heads, 200)).toEqual({ splits: 3, chunk: 68 });
    }
    // Every slot of a scheduled span has its schedule (a captured step serves them all), and the
    // cache's T caps the last span.
    expect(scheduledSpan(layout, 299)).toBe(512);
    expect(scheduledSpan({ ...layout, T: 300 }, 299)).toBe(300);
    for (const slot of [256, 300, 400, 511]) expect(attentionSplits(layout, 1, 14, slot)).toEqual(attentionSplits(layout, 1, 14, 299));
    expect(attentionSplits(layout, 1, 14, 255)).not.toEqual(attentionSplits(layout, 1, 14, 256));
    await rt.sync();
    rt.release(cache, qkv, table, o);
  });
});

/** A cache of `dtype` whose every value is NaN. */
function nanCache(rt: Runtime, layout: KvLayout): Tensor {
  const size = kvLayerSize(layout);
  return layout.dtype === 'f32' ? poisoned(rt, [size]) : rt.upload(new Uint16Array(size).fill(0x7e00), [size], 'f16');
}

/** A cache's values as float32 (halves widened). */
async function readCache(rt: Runtime, cache: Tensor): Promise<Float32Array> {
  return cache.dtype === 'f16' ? halvesToF32(await rt.read(cache as Tensor<'f16'>)) : rt.read(cache as Tensor<'f32'>);
}

/** A value as a cache of `dtype` holds it: rounded to float32, or to half. */
function held(dtype: KvDtype): (x: number) => number {
  return dtype === 'f32' ? Math.fround : (x) => halvesToF32(f32ToHalves(Float32Array.of(x)))[0]!;
}

async function storeAndAttend(rt: Runtime, hd: number, heads: number, kvHeads: number, P: number, starts: readonly number[], dtype: KvDtype): Promise<void> {
  const seed = freshSeed();
  const r = rng(seed);
  const { B, rows } = decodeBatch(starts);
  const T = P + 4;
  const layout: KvLayout = { B, T, kvHeads, hd, dtype };
  const qd = heads * hd;
  const kvd = kvHeads * hd;
  const S = qd + 2 * kvd;
  // Never-written slots stay NaN: any read of one shows in the output.
  const cache = nanCache(rt, layout);
  const pre = uniform(B * P * S, r);
  const tPre = rt.upload(pre, [B * P, S]);
  // Stored at position 0, where the rotation is exactly the identity (cos 1, sin 0): the cache holds k and v as given.
  const tables = identityRope(rt, hd);
  const zeros = rt.upload(new Uint32Array(B * P), [B * P], 'u32');
  ropeKvStore(rt, layout, cache, { qkv: tPre, stride: S, colK: qd, n: B * P }, { seqLen: P }, heads, zeros, tables);
  // A decode step of all sequences but one, in a compacted order, at slot P.
  const n = rows.length;
  const dec = uniform(n * S, r);
  const tDec = rt.upload(dec, [n, S]);
  const table = rt.upload(Uint32Array.from([...rows, ...starts]), [2 * n], 'u32');
  const where = { rows: view(table, [n], 0), starts: view(table, [n], n), slot: P };
  const f = { qkv: tDec, stride: S, colK: qd, n };
  ropeKvStore(rt, layout, cache, f, where, heads, view(zeros, [n]), tables);
  const o = poisoned(rt, [n, qd]);
  decodeAttention(rt, layout, cache, f, where, heads, o);

  // Reference: the cache as it should be (each value rounded to the cache's dtype once), and
  // attention over each row's live slots in float64 from those values.
  const kv = (b: number, slot: number, which: 0 | 1): number[] => {
    const decodeRow = rows.indexOf(b);
    const src = slot < P ? pre.subarray((b * P + slot) * S, (b * P + slot + 1) * S) : dec.subarray(decodeRow * S, (decodeRow + 1) * S);
    return Array.from(src.subarray(qd + which * kvd, qd + (which + 1) * kvd), held(dtype));
  };
  const got = await readCache(rt, cache);
  for (let b = 0; b < B; b++) {
    for (let slot = 0; slot < T; slot++) {
      const written = slot < P || (slot === P && rows.includes(b));
      for (const which of [0, 1] as const) {
        const at = which * B * T * kvd + (b * T + slot) * kvd;
        const cell = Array.from(got.subarray(at, at + kvd));
        if (written) expect(cell, `seed ${seed}: b ${b} slot ${slot}`).toEqual(kv(b, slot, which));
        else expect(cell.every(Number.isNaN), `seed ${seed}: b ${b} slot ${slot} written`).toBe(true);
      }
    }
  }
  const ref = new Float64Array(n * qd);
  rows.forEach((b, i) => {
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / (heads / kvHeads));
      const q = dec.subarray(i * S + h * hd, i * S + (h + 1) * hd);
      const slots = Array.from({ length: P + 1 - starts[i]! }, (_, j) => starts[i]! + j);
      const scores = slots.map((s) => kv(b, s, 0).slice(g * hd, (g + 1) * hd).reduce((a, k, d) => a + k * q[d]!, 0) / Math.sqrt(hd));
      const m = Math.max(...scores);
      const w = scores.map((x) => Math.exp(x - m));
      const z = w.reduce((a, x) => a + x, 0);
      slots.forEach((s, j) => {
        const v = kv(b, s, 1).slice(g * hd, (g + 1) * hd);
        for (let d = 0; d < hd; d++) ref[i * qd + h * hd + d]! += (w[j]! / z) * v[d]!;
      });
    }
  });
  assertClose(`decode attention (${rt.serialRows ? 'serial' : 'flash-decoding'}, ${dtype} cache), seed ${seed}`, await rt.read(o), ref, hd, 1e-5);
  rt.release(cache, tPre, tDec, table, o, zeros, tables.cos, tables.sin);
}

describe('kv cache store', () => {
  it.each([
    ['head_dim 8, GQA', 8, 4, 2, 'f32'],
    ['head_dim 8, GQA', 8, 4, 2, 'f16'],
    ['head_dim 6, MHA', 6, 3, 3, 'f32'],
    ['head_dim 32, GQA 4:1', 32, 4, 1, 'f32'],
    ['head_dim 32, GQA 4:1', 32, 4, 1, 'f16'],
  ] as const)('rotates q and k in place and stores the rotated k and the v in one pass: float64 rotations, and bit for bit rope()\'s (%s, %s cache)', async (_, hd, heads, kvHeads, dtype) => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const r = rng(seed);
    const [B, T, P, maxPos, theta] = [3, 11, 6, 40, 10000];
    const layout: KvLayout = { B, T, kvHeads, hd, dtype };
    const [qd, kvd] = [heads * hd, kvHeads * hd];
    // A row stride past q|k|v: columns after v must stay as they were.
    const S = qd + 2 * kvd + 3;
    const half = hd / 2;
    const invFreq = Float64Array.from({ length: half }, (_, i) => theta ** (-(2 * i) / hd));
    const host = ropeTables(invFreq, maxPos);
    const tables = { cos: rt.upload(host.cos, [host.cos.length]), sin: rt.upload(host.sin, [host.sin.length]), maxPos };
    // The prefill (B sequences of P tokens), then a decode step of two sequences in compacted order at slot P.
    const rows = [2, 0];
    const cases = [
      { n: B * P, where: (_: unknown) => ({ seqLen: P }) as const, pos: Uint32Array.from({ length: B * P }, () => Math.floor(r() * maxPos)) },
      { n: rows.length, where: (table: Tensor<'u32'>) => ({ rows: view(table, [2], 0), starts: view(table, [2], 2), slot: P }), pos: Uint32Array.from(rows, () => Math.floor(r() * maxPos)) },
    ];
    const fused = nanCache(rt, layout);
    // The cache as rope()'s rotated rows give it (rounded to half once for an f16 cache), and in float64; NaN where nothing is stored.
    const apart = new Float32Array(kvLayerSize(layout)).fill(NaN);
    const expected = new Float64Array(kvLayerSize(layout)).fill(NaN);
    const table = rt.upload(Uint32Array.from([...rows, 1, 0]), [4], 'u32');
    for (const { n, where, pos } of cases) {
      const x = uniform(n * S, r);
      const [a, b] = [rt.upload(x, [n, S]), rt.upload(x, [n, S])];
      const positions = rt.upload(pos, [n], 'u32');
      const w = where(table);
      ropeKvStore(rt, layout, fused, { qkv: a, stride: S, colK: qd, n }, w, heads, positions, tables);
      rope(rt, b, { heads: heads + kvHeads, hd, stride: S }, positions, tables);
      const [gotA, gotB] = [await rt.read(a), await rt.read(b)];
      // float64: each q and k head rotated; v and the columns after it as they were.
      const ref = Float64Array.from(x);
      for (let i = 0; i < n; i++) {
        for (let h = 0; h < heads + kvHeads; h++) {
          for (let d = 0; d < half; d++) {
            const angle = pos[i]! * invFreq[d]!;
            const at = i * S + h * hd + d;
            ref[at] = x[at]! * Math.cos(angle) - x[at + half]! * Math.sin(angle);
            ref[at + half] = x[at + half]! * Math.cos(angle) + x[at]! * Math.sin(angle);
          }
        }
        const seq = 'seqLen' in w ? Math.floor(i / P) : rows[i]!;
        const slot = 'seqLen' in w ? i % P : P;
        for (let c = 0; c < kvd; c++) {
          for (const which of [0, 1]) {
            const at = which * B * T * kvd + (seq * T + slot) * kvd + c;
            expected[at] = ref[i * S + qd + which * kvd + c]!;
            apart[at] = held(dtype)(gotB[i * S + qd + which * kvd + c]!);
          }
        }
      }
      assertClose(`rope kv store rows (${n}), seed ${seed}`, gotA, ref, S);
      expect(Array.from(gotA), `seed ${seed}`).toEqual(Array.from(gotB));
      rt.release(a, b, positions);
    }
    const gotFused = await readCache(rt, fused);
    // Never-written slots stay NaN in both; the written ones match float64 (within a half's
    // rounding, 2^-11 of the value, for an f16 cache) and each other exactly.
    expect(Array.from(gotFused).map((v, i) => Number.isNaN(v) === Number.isNaN(expected[i]!)).every(Boolean), `seed ${seed}`).toBe(true);
    const tol = dtype === 'f16' ? 2 ** -11 + 1e-6 : 1e-5;
    assertClose(`rope kv store cache (${dtype}), seed ${seed}`, gotFused.map((v, i) => (Number.isNaN(expected[i]!) ? 0 : v)), expected.map((v) => (Number.isNaN(v) ? 0 : v)), kvd, tol);
    expect(Array.from(gotFused), `seed ${seed}`).toEqual(Array.from(apart));
    rt.release(fused, table, tables.cos, tables.sin);
  });

  it('refuses a slot past the cache and a table shorter than the rows', async () => {
    const rt = await testRuntime();
    const layout: KvLayout = { B: 2, T: 4, kvHeads: 1, hd: 4, dtype: 'f32' };
    const cache = rt.empty([kvLayerSize(layout)]);
    const qkv = rt.empty([2, 12]);
    const table = rt.empty([4], 'u32');
    const f = { qkv, stride: 12, colK: 4, n: 2 };
    const tables = identityRope(rt, 4);
    const store = (where: Parameters<typeof ropeKvStore>[4], colK = 4) => () => ropeKvStore(rt, layout, cache, { ...f, colK }, where, 1, view(table, [2]), tables);
    expect(store({ rows: view(table, [2]), starts: view(table, [2], 2), slot: 4 })).toThrow(/slot 4 beyond its 4 slots/);
    expect(store({ rows: view(table, [1]), starts: view(table, [1], 2), slot: 1 })).toThrow(/shorter than the 2 rows/);
    expect(store({ seqLen: 3 })).toThrow(/2 prefill rows of 3 tokens/);
    expect(store({ seqLen: 1 }, 8)).toThrow(/k at column 8, not right after 1 q heads of 4/);
    // An f16 cache: its own dtype, and head_dim a multiple of 4 (a word of halves is one invocation's).
    expect(() => ropeKvStore(rt, { ...layout, dtype: 'f16' }, cache, f, { seqLen: 1 }, 1, view(table, [2]), tables)).toThrow(/a f32 tensor for a cache of f16/);
    const odd: KvLayout = { B: 1, T: 2, kvHeads: 1, hd: 6, dtype: 'f16' };
    const half = rt.empty([kvLayerSize(odd)], 'f16');
    expect(() => ropeKvStore(rt, odd, half, { qkv, stride: 18, colK: 6, n: 1 }, { seqLen: 1 }, 1, view(table, [1]), identityRope(rt, 6))).toThrow(/head_dim 6 must be a multiple of 4/);
    rt.release(cache, half, qkv, table, tables.cos, tables.sin);
  });
});

describe('rotary embedding, cache store and decode attention in one dispatch', () => {
  // One chunk at P = 7 (the split kernel writes O), several at P = 90, the new slot in the last;
  // chunks longer than the workgroup at 12 rows over 201 slots.
  it.each([
    ...ATTENTION_CASES,
    ['head_dim 8, GQA, 12 rows over 201 slots', 8, 4, 2, 200, MANY_STARTS],
  ] as const)('writes the cache ropeKvStore writes and the attention of the rotated q over it, in float64 (%s)', async (_, hd, heads, kvHeads, P, starts) => {
    const rt = await testRuntime({ serialRows: false });
    for (const dtype of cacheDtypes(hd)) {
      const seed = freshSeed();
      const r = rng(seed);
      const { B, rows } = decodeBatch(starts);
      const [maxPos, theta] = [400, 10000];
      const T = P + 4;
      const layout: KvLayout = { B, T, kvHeads, hd, dtype };
      const [qd, kvd, half] = [heads * hd, kvHeads * hd, hd / 2];
      const S = qd + 2 * kvd;
      const invFreq = Float64Array.from({ length: half }, (_, i) => theta ** (-(2 * i) / hd));
      const host = ropeTables(invFreq, maxPos);
      const tables = { cos: rt.upload(host.cos, [host.cos.length]), sin: rt.upload(host.sin, [host.sin.length]), maxPos };
      // The same prefill into two caches (NaN wherever nothing is stored).
      const pre = uniform(B * P * S, r);
      const prePos = rt.upload(Uint32Array.from({ length: B * P }, (_, i) => i % P), [B * P], 'u32');
      const [apart, fused] = [nanCache(rt, layout), nanCache(rt, layout)];
      for (const cache of [apart, fused]) ropeKvStore(rt, layout, cache, { qkv: rt.upload(pre, [B * P, S]), stride: S, colK: qd, n: B * P }, { seqLen: P }, heads, prePos, tables);
      // A decode step in compacted order at slot P, each row at a position of its own.
      const n = rows.length;
      const positions = rows.map(() => Math.floor(r() * maxPos));
      const table = rt.upload(Uint32Array.from([...rows, ...starts, ...positions]), [3 * n], 'u32');
      const where = { rows: view(table, [n], 0), starts: view(table, [n], n), slot: P };
      const dec = uniform(n * S, r);
      const [qkvApart, qkvFused] = [rt.upload(dec, [n, S]), rt.upload(dec, [n, S])];
      const [oApart, oFused] = [poisoned(rt, [n, qd]), poisoned(rt, [n, qd])];
      ropeKvStore(rt, layout, apart, { qkv: qkvApart, stride: S, colK: qd, n }, where, heads, view(table, [n], 2 * n), tables);
      decodeAttention(rt, layout, apart, { qkv: qkvApart, stride: S, colK: qd, n }, where, heads, oApart);
      const before = rt.counters.dispatches;
      ropeKvAttend(rt, layout, fused, { qkv: qkvFused, stride: S, colK: qd, n }, where, heads, view(table, [n], 2 * n), tables, oFused);
      const { splits } = attentionSplits(layout, n, heads, P);
      expect(rt.counters.dispatches - before).toBe(splits > 1 ? 2 : 1);

      // The cache: as the two dispatches leave it, NaN where they leave NaN.
      const [cacheApart, cacheFused] = [await readCache(rt, apart), await readCache(rt, fused)];
      cacheApart.forEach((x, i) => {
        if (Number.isNaN(x)) expect(cacheFused[i], `seed ${seed}: ${dtype} cache element ${i} written`).toBeNaN();
        else expect(Math.abs(cacheFused[i]! - x), `seed ${seed}: ${dtype} cache element ${i}`).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(x)) + (dtype === 'f16' ? Math.abs(x) * 2 ** -10 : 0));
      });
      // q stays as it came in the fused rows; the attention of q rotated in float64 over the cache as stored.
      expect(Array.from(await rt.read(qkvFused))).toEqual(Array.from(dec));
      const ref = new Float64Array(n * qd);
      rows.forEach((b, i) => {
        const pos = positions[i]!;
        for (let h = 0; h < heads; h++) {
          const g = Math.floor(h / (heads / kvHeads));
          const x = dec.subarray(i * S + h * hd, i * S + (h + 1) * hd);
          const q = new Float64Array(hd);
          for (let d = 0; d < half; d++) {
            const [c, s] = [Math.cos(pos * invFreq[d]!), Math.sin(pos * invFreq[d]!)];
            q[d] = x[d]! * c - x[d + half]! * s;
            q[d + half] = x[d + half]! * c + x[d]! * s;
          }
          const slots = Array.from({ length: P + 1 - starts[i]! }, (_, j) => starts[i]! + j);
          const at = (slot: number, which: 0 | 1) => which * B * T * kvd + (b * T + slot) * kvd + g * hd;
          const scores = slots.map((slot) => q.reduce((a, qd_, d) => a + qd_ * cacheFused[at(slot, 0) + d]!, 0) / Math.sqrt(hd));
          const m = Math.max(...scores);
          const w = scores.map((v) => Math.exp(v - m));
          const z = w.reduce((a, v) => a + v, 0);
          slots.forEach((slot, j) => {
            for (let d = 0; d < hd; d++) ref[i * qd + h * hd + d]! += (w[j]! / z) * cacheFused[at(slot, 1) + d]!;
          });
        }
      });
      assertClose(`fused decode attention (${dtype} cache), seed ${seed}`, await rt.read(oFused), ref, hd, 1e-5);
      assertClose(`fused against apart (${dtype} cache), seed ${seed}`, await rt.read(oFused), await rt.read(oApart), hd, 1e-5);
    }
  });
});
