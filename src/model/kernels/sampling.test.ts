import { describe, expect, it } from 'vitest';
import { freshSeed, rng, testRuntime } from '../../gpu/testUtils';
import type { Runtime } from '../../gpu/runtime';
import type { SamplingSettings } from '../generateSettings';
import { sampleTokens, samplerLayout, unpackSamples, SAMPLE_CHUNK, SAMPLE_FIELDS, type Sampled } from './sampling';

const SETTINGS: SamplingSettings = { temperature: 1, topK: 0, topP: 1, seed: 1 };

/** Samples every row of `logits` [rows, vocab] at each of `steps`; streams are the row indices. */
async function sample(rt: Runtime, logits: Float32Array, vocab: number, s: SamplingSettings, steps = [0]): Promise<Sampled[][]> {
  const rows = logits.length / vocab;
  const z = rt.upload(logits, [rows, vocab]);
  const streams = rt.upload(Uint32Array.from({ length: rows }, (_, i) => i), [rows], 'u32');
  // Poisoned: a row the kernel skipped would read back as NaN log-probabilities.
  const out = rt.upload(new Uint32Array(steps.length * rows * SAMPLE_FIELDS).fill(0x7fc00000), [steps.length * rows * SAMPLE_FIELDS], 'u32');
  steps.forEach((step, k) => {
    const o = { ...out, offset: k * rows * SAMPLE_FIELDS, size: rows * SAMPLE_FIELDS, shape: [rows * SAMPLE_FIELDS] };
    sampleTokens(rt, { logits: z, streams, out: o }, s, step);
  });
  const raw = await rt.read(out);
  rt.release(z, streams, out);
  return steps.map((_, k) => unpackSamples(raw.subarray(k * rows * SAMPLE_FIELDS, (k + 1) * rows * SAMPLE_FIELDS), rows));
}

/** Pearson's χ² of observed counts against expected probabilities. */
function chiSquare(counts: number[], probs: number[]): number {
  const n = counts.reduce((a, b) => a + b, 0);
  return counts.reduce((x, c, i) => x + (c - n * probs[i]!) ** 2 / (n * probs[i]!), 0);
}

/** χ² critical values at p = 0.001 by degrees of freedom. */
const CHI2_999: Record<number, number> = { 5: 20.52, 15: 37.7 };

/**
 * Asserts that counts drawn with a fresh seed fit `probs` (χ² below the p = 0.001 value).
 * A fair sampler exceeds it once in a thousand draws, so an exceedance is confirmed on a
 * second, independent seed before failing: a fair sampler then fails one run in a million,
 * while a biased one, which exceeds it on every seed, still fails.
 */
async function expectFits(draw: (seed: number) => Promise<number[]>, probs: number[], what: string): Promise<void> {
  const critical = CHI2_999[probs.length - 1]!;
  const tries: string[] = [];
  for (let attempt = 0; attempt < 2; attempt++) {
    const seed = freshSeed();
    const counts = await draw(seed);
    const chi2 = chiSquare(counts, probs);
    if (chi2 < critical) return;
    tries.push(`seed ${seed}: counts ${counts}, χ² ${chi2.toFixed(2)}`);
  }
  expect.fail(`${what}: χ² ≥ ${critical} (p = 0.001) on two independent seeds: ${tries.join('; ')}`);
}

const repeatRows = (row: number[], rows: number) => Float32Array.from({ length: rows * row.length }, (_, i) => row[i % row.length]!);

/** The tokens top-k then top-p keep, in float64, and the renormalised log-probabilities. */
function keptReference(z: Float32Array, temperature: number, topK: number, topP: number): { kept: Set<number>; logq: Map<number, number>; margin: number } {
  const V = z.length;
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => z[b]! - z[a]!);
  let kept = order;
  if (topK > 0 && topK < V) kept = order.filter((i) => z[i]! >= z[order[topK - 1]!]!);
  const s = kept.map((i) => z[i]! / temperature);
  const m = Math.max(...s);
  const e = s.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  let margin = Infinity;
  if (topP < 1) {
    let cum = 0;
    let n = 0;
    while (n < kept.length) {
      cum += e[n]! / total;
      n++;
      margin = Math.min(margin, Math.abs(cum - topP));
      if (cum >= topP) break;
    }
    // Ties with the last kept logit stay (the kernel keeps by threshold).
    while (n < kept.length && z[kept[n]!] === z[kept[n - 1]!]) n++;
    kept = kept.slice(0, n);
  }
  const s2 = kept.map((i) => z[i]! / temperature);
  const m2 = Math.max(...s2);
  const lse = m2 + Math.log(s2.reduce((a, x) => a + Math.exp(x - m2), 0));
  return { kept: new Set(kept), logq: new Map(kept.map((i, k) => [i, s2[k]! - lse])), margin };
}

function logSoftmax(z: ArrayLike<number>): number[] {
  const m = Math.max(...Array.from(z));
  const lse = m + Math.log(Array.from(z).reduce((a, x) => a + Math.exp(x - m), 0));
  return Array.from(z, (x) => x - lse);
}

describe.each([
  ['one invocation per row', true, 3000],
  ['a workgroup per row', false, 300],
])('sampling (%s)', (_, serialRows, rows) => {
  it('at temperature 1 and 0.5, token frequencies follow softmax(z / T) (χ² test)', async () => {
    const rt = await testRuntime({ serialRows });
    const probs = [0.4, 0.25, 0.15, 0.1, 0.07, 0.03];
    const z = probs.map((p) => Math.log(p) + 3);
    for (const temperature of [1, 0.5]) {
      const target = probs.map((p) => p ** (1 / temperature));
      const norm = target.reduce((a, b) => a + b, 0);
      const q = target.map((x) => x / norm);
      // log p is under the tempered distribution over the whole vocabulary (here q itself: nothing truncated).
      const logp = logSoftmax(z.map((x) => x / temperature));
      await expectFits(async (seed) => {
        const [got] = await sample(rt, repeatRows(z, rows), probs.length, { ...SETTINGS, temperature, seed });
        for (const r of got!) {
          expect(r.logq).toBeCloseTo(Math.log(q[r.token]!), 5);
          expect(r.logp).toBeCloseTo(logp[r.token]!, 5);
        }
        return probs.map((_, i) => got!.filter((r) => r.token === i).length);
      }, q, `temperature ${temperature}`);
    }
  });

  it('top-k and top-p never emit an excluded token, and report log q over the kept set', async () => {
    const rt = await testRuntime({ serialRows });
    const V = 37;
    const n = Math.min(rows, 400);
    for (const [topK, topP, temperature] of [[5, 1, 1], [1, 1, 0.7], [0, 0.6, 1], [8, 0.8, 1.3], [V + 3, 0.3, 0.5]] as const) {
      const seed = freshSeed();
      const r = rng(seed);
      // Few distinct values so that ties at the k-th logit occur.
      const logits = Float32Array.from({ length: n * V }, () => Math.round(r() * 16) / 4);
      const [got] = await sample(rt, logits, V, { temperature, topK, topP, seed });
      got!.forEach((s, row) => {
        const z = logits.subarray(row * V, (row + 1) * V);
        const ref = keptReference(z, temperature, topK, topP);
        if (ref.margin < 1e-5) return; // the nucleus boundary is within rounding: either answer is right
        const what = `seed ${seed}, top-k ${topK}, top-p ${topP}, row ${row}`;
        expect(ref.kept.has(s.token), `${what}: token ${s.token} is excluded`).toBe(true);
        expect(s.logq, what).toBeCloseTo(ref.logq.get(s.token)!, 4);
        // log p: tempered, not truncated (what the training forward recomputes).
        expect(s.logp, what).toBeCloseTo(logSoftmax(Array.from(z, (x) => x / temperature))[s.token]!, 4);
      });
    }
  });

  it('greedy takes the arg-max (lowest id among ties) with log q = 0', async () => {
    const rt = await testRuntime({ serialRows });
    const seed = freshSeed();
    const r = rng(seed);
    const V = 29;
    const logits = Float32Array.from({ length: 50 * V }, () => Math.round(r() * 8));
    const [got] = await sample(rt, logits, V, { ...SETTINGS, temperature: 0, seed });
    got!.forEach((s, row) => {
      const z = Array.from(logits.subarray(row * V, (row + 1) * V));
      expect(s.token, `seed ${seed} row ${row}`).toBe(z.indexOf(Math.max(...z)));
      expect(s.logq).toBe(0);
      expect(s.logp).toBeCloseTo(logSoftmax(z)[s.token]!, 5);
    });
  });
});

describe('sampling streams', () => {
  it('the same seed gives the same tokens; another seed other tokens', async () => {
    const rt = await testRuntime({ serialRows: true });
    const z = repeatRows([0, 0, 0, 0, 0, 0, 0, 0], 256);
    const a = await sample(rt, z, 8, { ...SETTINGS, seed: 7 }, [0, 1, 2]);
    const b = await sample(rt, z, 8, { ...SETTINGS, seed: 7 }, [0, 1, 2]);
    const c = await sample(rt, z, 8, { ...SETTINGS, seed: 8 }, [0, 1, 2]);
    const ids = (x: Sampled[][]) => x.flat().map((s) => s.token);
    expect(ids(a)).toEqual(ids(b));
    const same = ids(a).filter((t, i) => t === ids(c)[i]).length;
    expect(same).toBeLessThan(ids(a).length / 4);
  });

  it('rows and consecutive steps draw independently (χ² on pairs)', async () => {
    const rt = await testRuntime({ serialRows: true });
    const rows = 500;
    const steps = [0, 1, 2, 3, 4, 5, 6, 7, 8];
    const uniform16 = new Array<number>(16).fill(1 / 16);
    // Neighbouring rows at one step, and one row at neighbouring steps.
    const pairs = async (seed: number, acrossRows: boolean): Promise<number[]> => {
      const got = await sample(rt, repeatRows([0, 0, 0, 0], rows), 4, { ...SETTINGS, seed }, steps);
      const counts = new Array<number>(16).fill(0);
      for (let k = 0; k < steps.length; k++) {
        if (acrossRows) for (let i = 0; i + 1 < rows; i += 2) counts[got[k]![i]!.token * 4 + got[k]![i + 1]!.token]!++;
        else if (k + 1 < steps.length) for (let i = 0; i < rows; i++) counts[got[k]![i]!.token * 4 + got[k + 1]![i]!.token]!++;
      }
      return counts;
    };
    await expectFits((seed) => pairs(seed, true), uniform16, 'neighbouring rows');
    await expectFits((seed) => pairs(seed, false), uniform16, 'neighbouring steps');
  });
});

/** The sampler's uniform draw (shaders/sampling.wgsl uniform01), in u32 arithmetic. */
function uniform01(seed: number, stream: number, step: number): number {
  const pcg = (v: number) => {
    const state = (Math.imul(v, 747796405) + 2891336453) >>> 0;
    const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
    return ((word >>> 22) ^ word) >>> 0;
  };
  const h = pcg((pcg((pcg((pcg(seed) ^ stream) >>> 0) ^ step) >>> 0) + 0x9e3779b9) >>> 0);
  return (h >>> 8) / 16777216;
}

/**
 * The sampler's definition in float64: the kept set (top-k by the k-th largest logit, ties
 * kept; then the smallest top set reaching topP, ties at its last logit kept) and the
 * inverse CDF in id order at u. Returns the kept flags and weights, the token, and how close
 * the nucleus and the draw came to a boundary (relative to the mass), where rounding may
 * decide either way.
 */
function definition(z: Float32Array, s: SamplingSettings, u: number) {
  const V = z.length;
  const t = 1 / s.temperature;
  let m = -Infinity;
  for (const x of z) m = Math.max(m, x);
  const sorted = Float64Array.from(z).sort().reverse();
  const kth = s.topK > 0 && s.topK < V ? sorted[s.topK - 1]! : -Infinity;
  const w = Array.from(z, (x) => (x >= kth ? Math.exp((x - m) * t) : 0));
  let floor = kth;
  let nucleusMargin = Infinity;
  if (s.topP < 1) {
    const kept = w.reduce((a, b) => a + b, 0);
    const need = s.topP * kept;
    // Mass of the tokens at or above each distinct logit, from the top.
    const byValue = new Map<number, number>();
    z.forEach((x, i) => w[i]! > 0 && byValue.set(x, (byValue.get(x) ?? 0) + w[i]!));
    let cum = 0;
    for (const v of [...byValue.keys()].sort((a, b) => b - a)) {
      const next = cum + byValue.get(v)!;
      nucleusMargin = Math.min(nucleusMargin, Math.abs(next - need) / kept);
      if (next >= need) {
        floor = v;
        break;
      }
      cum = next;
    }
  }
  const keep = Array.from(z, (x) => x >= floor && x >= kth);
  const weight = w.map((x, i) => (keep[i] ? x : 0));
  const total = weight.reduce((a, b) => a + b, 0);
  const goal = u * total;
  let acc = 0;
  let token = -1;
  let drawMargin = Infinity;
  for (let i = 0; i < V; i++) {
    if (!keep[i]) continue;
    drawMargin = Math.min(drawMargin, Math.abs(acc - goal) / total);
    acc += weight[i]!;
    token = i;
    if (acc > goal) break;
  }
  let norm = 0;
  for (const x of z) norm += Math.exp((x - m) * t);
  return { keep, token, logq: (z[token]! - m) * t - Math.log(total), logp: (z[token]! - m) * t - Math.log(norm), nucleusMargin, drawMargin };
}

describe.each([
  ['one invocation per row', true],
  ['a workgroup per row (radix select)', false],
])('sampling against its definition (%s)', (_, serialRows) => {
  // Rounding of f32 sums over the row: where the nucleus or the draw falls this close to a
  // boundary (relative to the mass), either side is the definition's answer. `maxClose`: rows
  // allowed to take that either side. At 151,936 tokens with none cut, a tail token's
  // probability is below the running sum's rounding, so a draw there may land on a neighbour
  // in any row; at 1,000, on a boundary rarely.
  const cases: { V: number; rows: number; tol: number; maxClose: number; settings: Omit<SamplingSettings, 'seed'>[] }[] = [
    {
      V: 1000, rows: 24, tol: 1e-5, maxClose: 2,
      settings: [
        { temperature: 1, topK: 0, topP: 1 }, { temperature: 0.5, topK: 7, topP: 1 }, { temperature: 1, topK: 0, topP: 0.7 },
        { temperature: 1.7, topK: 50, topP: 0.9 }, { temperature: 0.8, topK: 999, topP: 0.95 }, { temperature: 1, topK: 1, topP: 0.5 },
      ],
    },
    {
      V: 151_936, rows: serialRows ? 2 : 4, tol: 1e-4, maxClose: Infinity,
      settings: [
        { temperature: 1, topK: 0, topP: 1 }, { temperature: 0.7, topK: 40, topP: 1 }, { temperature: 1, topK: 0, topP: 0.9 },
        { temperature: 1.3, topK: 5000, topP: 0.6 }, { temperature: 0.6, topK: 20, topP: 0.95 },
      ],
    },
  ];
  it.each(cases)('vocabulary $V: the same tokens as the definition in float64, with ties, top-k, top-p, both and temperatures', async ({ V, rows, tol, maxClose, settings }) => {
    const rt = await testRuntime({ serialRows });
    const seed = freshSeed();
    const r = rng(seed);
    // Logits on a grid of quarters (many ties), spread like a language model's.
    const logits = Float32Array.from({ length: rows * V }, () => Math.round(4 * 3 * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r())) / 4);
    let close = 0;
    for (const s of settings) {
      const step = Math.floor(r() * 1000);
      const [got] = await sample(rt, logits, V, { ...s, seed }, [step]);
      got!.forEach((g, row) => {
        const z = logits.subarray(row * V, (row + 1) * V);
        const ref = definition(z, { ...s, seed }, uniform01(seed, row, step));
        const what = `seed ${seed}, ${JSON.stringify(s)}, row ${row}: token ${g.token}, definition ${ref.token}`;
        if (g.token !== ref.token) {
          close++;
          expect(ref.nucleusMargin < tol || ref.drawMargin < tol, what).toBe(true);
          if (ref.nucleusMargin >= tol) expect(ref.keep[g.token], `${what}: an excluded token`).toBe(true);
          return;
        }
        expect(g.logq, what).toBeCloseTo(ref.logq, 3);
        expect(g.logp, what).toBeCloseTo(ref.logp, 3);
      });
    }
    expect(close, `seed ${seed}`).toBeLessThanOrEqual(maxClose);
  });

  it('greedy at vocabulary 151,936 takes the first of the tied maxima', async () => {
    const rt = await testRuntime({ serialRows });
    const seed = freshSeed();
    const r = rng(seed);
    const V = 151_936;
    const rows = 3;
    const logits = Float32Array.from({ length: rows * V }, () => Math.round(r() * 40) / 4);
    const [got] = await sample(rt, logits, V, { ...SETTINGS, temperature: 0, seed }, [0]);
    got!.forEach((g, row) => {
      const z = logits.subarray(row * V, (row + 1) * V);
      let best = 0;
      for (let i = 1; i < V; i++) if (z[i]! > z[best]!) best = i;
      expect(g.token, `seed ${seed} row ${row}`).toBe(best);
      expect(g.logq).toBe(0);
    });
  });
});

describe('two-level sampling (a workgroup per chunk of ids, then one per row)', () => {
  /** Samples with the GPU layouts on a NaN-poisoning runtime, feeding tokens to shuffled streams. */
  async function sampleFed(logits: Float32Array, V: number, s: SamplingSettings, step: number) {
    const rt = await testRuntime({ serialRows: false, poison: true });
    const rows = logits.length / V;
    // Streams in reverse order, so that a row's stream is not its index.
    const ids = Uint32Array.from({ length: rows }, (_, i) => rows - 1 - i);
    const z = rt.upload(logits, [rows, V]);
    const streams = rt.upload(ids, [rows], 'u32');
    const out = rt.empty([rows * SAMPLE_FIELDS], 'u32');
    const feed = rt.empty([rows], 'u32');
    sampleTokens(rt, { logits: z, streams, out, feed }, s, step);
    const [raw, fed] = [await rt.read(out), await rt.read(feed)];
    const layout = samplerLayout(rt, s, V);
    rt.release(z, streams, out, feed);
    return { got: unpackSamples(raw, rows), fed, ids, layout };
  }

  it.each([
    { V: 151_936, rows: 3 },
    { V: 100_003, rows: 2 },
    { V: 2_049, rows: 5 },
    { V: 6_001, rows: 4 },
  ])('vocabulary $V, $rows rows: the definition\'s tokens in float64 at temperatures 1, 0.6 and 1.8, and greedy\'s first maximum', async ({ V, rows }) => {
    const seed = freshSeed();
    const r = rng(seed);
    // Quarters (ties within and across chunks), spread like a language model's logits.
    const logits = Float32Array.from({ length: rows * V }, () => Math.round(4 * 3 * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r())) / 4);
    for (const temperature of [1, 0.6, 1.8, 0]) {
      const s = { temperature, topK: 0, topP: 1, seed };
      const step = Math.floor(r() * 1000);
      const { got, fed, ids, layout } = await sampleFed(logits, V, s, step);
      expect(layout).toBe('twoLevel');
      got.forEach((g, row) => {
        const z = logits.subarray(row * V, (row + 1) * V);
        const what = `seed ${seed}, V ${V}, temperature ${temperature}, row ${row}: token ${g.token}`;
        expect(fed[ids[row]!], `${what}: fed`).toBe(g.token);
        if (temperature === 0) {
          let best = 0;
          for (let i = 1; i < V; i++) if (z[i]! > z[best]!) best = i;
          expect(g.token, what).toBe(best);
          expect(g.logq, what).toBe(0);
          let norm = 0;
          for (const x of z) norm += Math.exp(x - z[best]!);
          expect(g.logp, what).toBeCloseTo(-Math.log(norm), 3);
          return;
        }
        const ref = definition(z, s, uniform01(seed, ids[row]!, step));
        // As above: where the draw falls within rounding of a boundary, either side is right.
        if (g.token !== ref.token) {
          expect(ref.drawMargin < 1e-4, `${what}, definition ${ref.token}`).toBe(true);
          expect(Number.isNaN(g.logq) || Number.isNaN(g.logp), what).toBe(false);
          return;
        }
        expect(g.logq, what).toBeCloseTo(ref.logq, 3);
        expect(g.logp, what).toBeCloseTo(ref.logp, 3);
      });
    }
  });

  it('draws by the inverse CDF across chunk boundaries: u maps to the token whose mass interval holds it', async () => {
    // Every id equally likely at each of 5 rows of 9,000 ids: the token is ⌊u · V⌋ up to rounding.
    const V = 9_000;
    const rows = 5;
    const seed = freshSeed();
    const { got, ids } = await sampleFed(new Float32Array(rows * V), V, { temperature: 1, topK: 0, topP: 1, seed }, 3);
    got.forEach((g, row) => {
      const want = uniform01(seed, ids[row]!, 3) * V;
      expect(Math.abs(g.token + 0.5 - want), `seed ${seed} row ${row}: token ${g.token}, u·V ${want}`).toBeLessThanOrEqual(1.5);
      expect(g.logq).toBeCloseTo(-Math.log(V), 4);
    });
  });

  it('top-k and top-p keep one workgroup a row; one chunk or the serial layout never splits', async () => {
    const rt = await testRuntime({ serialRows: false });
    const base = { temperature: 1, topK: 0, topP: 1, seed: 0 };
    expect(samplerLayout(rt, { ...base, topK: 40 }, 151_936)).toBe('workgroup');
    expect(samplerLayout(rt, { ...base, topP: 0.9 }, 151_936)).toBe('workgroup');
    expect(samplerLayout(rt, { ...base, temperature: 0, topK: 40, topP: 0.9 }, 151_936)).toBe('twoLevel');
    expect(samplerLayout(rt, { ...base, topK: 151_936 }, 151_936)).toBe('twoLevel');
    expect(samplerLayout(rt, base, SAMPLE_CHUNK)).toBe('workgroup');
    expect(samplerLayout(await testRuntime({ serialRows: true }), base, 151_936)).toBe('serial');
  });
});
