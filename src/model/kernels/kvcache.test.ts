import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, poisoned, rng, testRuntime, uniform } from '../../gpu/testing';
import { view } from '../../gpu/tensor';
import { decodeAttention, kvLayerSize, kvStore, type KvLayout } from './kvcache';

describe('kv cache', () => {
  it.each([
    ['head_dim 8, GQA', 8, 4, 2],
    ['head_dim 6 (not a multiple of 4), MHA', 6, 3, 3],
    ['head_dim 32, GQA 4:1', 32, 4, 1],
  ])('stores prefill and decode rows, and decode attention reads only the live slots (%s)', async (_, hd, heads, kvHeads) => {
    const rt = await testRuntime();
    const seed = freshSeed();
    const r = rng(seed);
    const B = 3;
    const T = 11;
    const P = 7;
    const layout: KvLayout = { B, T, kvHeads, hd };
    const qd = heads * hd;
    const kvd = kvHeads * hd;
    const S = qd + 2 * kvd;
    // Never-written slots stay NaN: any read of one shows in the output.
    const cache = poisoned(rt, [kvLayerSize(layout)]);
    const pre = uniform(B * P * S, r);
    const tPre = rt.upload(pre, [B * P, S]);
    kvStore(rt, layout, cache, { qkv: tPre, stride: S, colK: qd, n: B * P }, { seqLen: P });
    // A decode step of two of the three sequences, in a compacted order, at slot P.
    const rows = [2, 0];
    const starts = [3, 1];
    const n = rows.length;
    const dec = uniform(n * S, r);
    const tDec = rt.upload(dec, [n, S]);
    const table = rt.upload(Uint32Array.from([...rows, ...starts]), [2 * n], 'u32');
    const where = { rows: view(table, [n], 0), starts: view(table, [n], n), slot: P };
    const f = { qkv: tDec, stride: S, colK: qd, n };
    kvStore(rt, layout, cache, f, where);
    const o = poisoned(rt, [n, qd]);
    decodeAttention(rt, layout, cache, f, where, heads, o);

    // Reference: the cache as it should be, and attention over each row's live slots in float64.
    const kv = (b: number, slot: number, which: 0 | 1): number[] => {
      const decodeRow = rows.indexOf(b);
      const src = slot < P ? pre.subarray((b * P + slot) * S, (b * P + slot + 1) * S) : dec.subarray(decodeRow * S, (decodeRow + 1) * S);
      return Array.from(src.subarray(qd + which * kvd, qd + (which + 1) * kvd));
    };
    const got = await rt.read(cache);
    for (let b = 0; b < B; b++) {
      for (let slot = 0; slot < T; slot++) {
        const written = slot < P || (slot === P && rows.includes(b));
        for (const which of [0, 1] as const) {
          const at = which * B * T * kvd + (b * T + slot) * kvd;
          const cell = Array.from(got.subarray(at, at + kvd));
          if (written) expect(cell, `seed ${seed}: b ${b} slot ${slot}`).toEqual(kv(b, slot, which).map(Math.fround));
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
    assertClose(`decode attention, seed ${seed}`, await rt.read(o), ref, hd, 1e-5);
    rt.release(cache, tPre, tDec, table, o);
  });

  it('refuses a slot past the cache and a table shorter than the rows', async () => {
    const rt = await testRuntime();
    const layout: KvLayout = { B: 2, T: 4, kvHeads: 1, hd: 4 };
    const cache = rt.empty([kvLayerSize(layout)]);
    const qkv = rt.empty([2, 12]);
    const table = rt.empty([4], 'u32');
    const f = { qkv, stride: 12, colK: 4, n: 2 };
    expect(() => kvStore(rt, layout, cache, f, { rows: view(table, [2]), starts: view(table, [2], 2), slot: 4 })).toThrow(/slot 4 beyond its 4 slots/);
    expect(() => kvStore(rt, layout, cache, f, { rows: view(table, [1]), starts: view(table, [1], 2), slot: 1 })).toThrow(/shorter than the 2 rows/);
    expect(() => kvStore(rt, layout, cache, f, { seqLen: 3 })).toThrow(/2 prefill rows of 3 tokens/);
    rt.release(cache, qkv, table);
  });
});
