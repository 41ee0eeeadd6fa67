import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime } from '../gpu/testUtils';
import { PRESETS } from '../model/config';
import { Transformer, type Batch } from '../model/transformer';
import { importCheckpoint } from '../model/checkpoint';
import { AdamW } from './adamw';
import { DEFAULT_POLICY, ModelSession } from './session';
import { DEFAULT_POLICY_LOSS, packRollouts, policyStatistics, policyStep, type PolicyMicroBatch } from './policy';

const CONFIG = { ...PRESETS.tiny, num_hidden_layers: 1 };

/** Two rows sharing a prompt, each with a 3-token response; targets only on the response. */
function rollouts(prompt: number[], responses: number[][]): Batch {
  const T = prompt.length + 3;
  const tokens: number[] = [];
  const targets: number[] = [];
  for (const r of responses) {
    const row = [...prompt, ...r];
    tokens.push(...row);
    for (let t = 0; t < T; t++) targets.push(t >= prompt.length - 1 && t < T - 1 ? row[t + 1]! : -1);
  }
  return { B: responses.length, T, tokens, targets };
}

describe('policy-gradient step', () => {
  it('at ratio 1 the surrogate has the gradient of cross-entropy weighted by w·A', async () => {
    const rt = await testRuntime({}, 'suite');
    const seed = freshSeed();
    const r = rng(seed);
    const model = Transformer.init(rt, CONFIG, seed);
    const batch = rollouts([1, 70, 71, 72], [[80, 81, 82], [90, 91, 92]]);
    const N = batch.B * batch.T;
    const w = Array.from({ length: N }, (_, i) => (batch.targets![i]! < 0 ? 0 : 1 / 6));
    const A = Array.from({ length: N }, () => (r() - 0.5) * 4);
    model.zeroGrad();
    const { logp } = model.forwardLoss({ ...batch, weights: w.map((x, i) => x * A[i]!) });
    model.backward();
    const [ceGrad, oldLogp] = await Promise.all([rt.read(model.grads), rt.read(logp)]);
    const perToken = new Float32Array(N * 4);
    for (let i = 0; i < N; i++) perToken.set([w[i]!, A[i]!, oldLogp[i]!, 0], i * 4);
    model.zeroGrad();
    const out = model.forwardPolicyLoss(batch, perToken, DEFAULT_POLICY_LOSS);
    model.backward();
    const [pgGrad, tokOut] = await Promise.all([rt.read(model.grads), rt.read(out)]);
    assertClose(`policy vs weighted CE gradient, seed ${seed}`, pgGrad, Float64Array.from(ceGrad), pgGrad.length, 1e-5);
    let expected = 0;
    let got = 0;
    for (let i = 0; i < N; i++) {
      expected -= w[i]! * A[i]!;
      got += tokOut[i * 3]!;
    }
    expect(Math.abs(got - expected)).toBeLessThan(1e-5 * (1 + Math.abs(expected)));
    model.destroy();
  });

  it('raises the log-probability of rewarded responses, lowers the others, and reports clipping', async () => {
    const rt = await testRuntime({}, 'suite');
    const model = Transformer.init(rt, CONFIG, 11);
    const optimizer = new AdamW(rt, model.params.size, model.specs);
    const batch = rollouts([1, 65, 66], [[67, 68, 69], [75, 76, 77]]);
    const N = batch.B * batch.T;
    const respTokens = Array.from(batch.targets!).filter((t) => t >= 0).length;
    const { logp } = model.forwardLoss({ ...batch, weights: new Array(N).fill(0) });
    const old = await rt.read(logp);
    model.backward(); // consumes the forward; the gradients are zeroed by the step
    const perToken = new Float32Array(N * 4);
    for (let i = 0; i < N; i++) {
      if (batch.targets![i]! < 0) continue;
      perToken.set([1 / respTokens, i < batch.T ? 1 : -1, old[i]!, 0], i * 4);
    }
    const micro: PolicyMicroBatch[] = [{ batch, perToken }];
    const results = [];
    for (let s = 0; s < 6; s++) results.push(await policyStep(model, optimizer, micro, 3e-3, DEFAULT_POLICY_LOSS, false));
    expect(results.every((x) => x.finite && x.tokens === respTokens)).toBe(true);
    expect(results[0]!.clipFraction).toBe(0);
    expect(results[0]!.approxKl).toBeCloseTo(0, 5);
    // The old log-probs stay those of the first policy: as it moves, ratios leave the clip range.
    expect(results[5]!.clipFraction).toBeGreaterThan(0);
    expect(results[5]!.loss).toBeLessThan(results[0]!.loss);
    const { logp: after } = model.forwardLoss({ ...batch, weights: new Array(N).fill(0) });
    const now = await rt.read(after);
    model.backward();
    let up = 0;
    let down = 0;
    for (let i = 0; i < N; i++) {
      if (batch.targets![i]! < 0) continue;
      if (i < batch.T) up += now[i]! - old[i]!;
      else down += now[i]! - old[i]!;
    }
    expect(up).toBeGreaterThan(0);
    expect(down).toBeLessThan(0);
    model.destroy();
  });

  it('refuses a non-finite advantage before recording anything: weights unchanged', async () => {
    const rt = await testRuntime({}, 'suite');
    const model = Transformer.init(rt, CONFIG, 5);
    const optimizer = new AdamW(rt, model.params.size, model.specs);
    const batch = rollouts([1, 65], [[66, 67, 68]]);
    const perToken = new Float32Array(batch.T * 4);
    for (let i = 0; i < batch.T; i++) if (batch.targets![i]! >= 0) perToken.set([0.25, i === 2 ? Number.NaN : 1, -5, 0], i * 4);
    const before = await rt.read(model.params);
    await expect(policyStep(model, optimizer, [{ batch, perToken }], 1e-2, DEFAULT_POLICY_LOSS, false)).rejects.toThrow(
      'micro-batch 0, token 2 has a non-finite advantage',
    );
    expect(await rt.read(model.params)).toEqual(before);
    model.destroy();
  });
});

describe('packing rollouts into micro-batches', () => {
  const sample = [
    { promptIds: [1, 10, 11], completionIds: [20, 21, 2], oldLogprobs: [-1, -2, -3], advantage: 0.5 },
    { promptIds: [1, 10], completionIds: [30], oldLogprobs: [-4], advantage: -1 },
    { promptIds: [1, 12, 13, 14, 15], completionIds: [40, 41], oldLogprobs: [-5, -6], advantage: 2 },
  ];

  it('places sequences whole, longest first, several to a row: positions restart, the mask gives each its first column', () => {
    const micro = packRollouts(sample, { tokens: 16, maxLength: 16, lengthGranule: 4, padId: 0 });
    // Rows of 8 (16 tokens → 2 rows of 8 would not hold the longest first: rows are ≥ the longest, 7 → 8).
    expect(micro.map((m) => [m.batch.B, m.batch.T])).toEqual([[1, 16]]);
    const b = micro[0]!.batch;
    // Longest first: [1,12,13,14,15,40,41] (7), [1,10,11,20,21,2] (6), [1,10,30] (3).
    expect(Array.from(b.tokens)).toEqual([1, 12, 13, 14, 15, 40, 41, 1, 10, 11, 20, 21, 2, 1, 10, 30]);
    expect(Array.from(b.mask!)).toEqual([1, 1, 1, 1, 1, 1, 1, 8, 8, 8, 8, 8, 8, 14, 14, 14]);
    expect(Array.from(b.positions!)).toEqual([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 0, 1, 2]);
    expect(Array.from(b.targets!)).toEqual([-1, -1, -1, -1, 40, 41, -1, -1, -1, 20, 21, 2, -1, -1, 30, -1]);
    const at = (token: number) => Array.from(micro[0]!.perToken.slice(token * 4, token * 4 + 4));
    expect(at(14)).toEqual([Math.fround(1 / 6), -1, -4, 0]);
    expect(at(10)).toEqual([Math.fround(1 / 6), 0.5, -2, 0]);
    expect(at(4)).toEqual([Math.fround(1 / 6), 2, -5, 0]);
    expect(at(0)).toEqual([0, 0, 0, 0]);
  });

  it('samples of one prompt share it: the prompt but its last token once, then each sample from that token on', () => {
    const shared = [
      { promptIds: [1, 10, 11], completionIds: [20, 21], oldLogprobs: [-1, -2], advantage: 1 },
      { promptIds: [1, 5], completionIds: [7], oldLogprobs: [-7], advantage: 0 },
      { promptIds: [1, 10, 11], completionIds: [30], oldLogprobs: [-3], advantage: -1 },
    ];
    const micro = packRollouts(shared, { tokens: 16, maxLength: 16, lengthGranule: 4, padId: 0 });
    expect(micro).toHaveLength(1);
    const b = micro[0]!.batch;
    const hi = (c: number) => (c + 1) << 16;
    // Family (7 tokens): [1, 10] then [11, 20, 21] and [11, 30]; then the single [1, 5, 7].
    expect(Array.from(b.tokens).slice(0, 10)).toEqual([1, 10, 11, 20, 21, 11, 30, 1, 5, 7]);
    expect(Array.from(b.mask!).slice(0, 11)).toEqual([1, 1, 3 | hi(0), 3 | hi(0), 3 | hi(0), 6 | hi(0), 6 | hi(0), 8, 8, 8, 11]);
    expect(Array.from(b.positions!).slice(0, 10)).toEqual([0, 1, 2, 3, 4, 2, 3, 0, 1, 2]);
    expect(Array.from(b.targets!).slice(0, 10)).toEqual([-1, -1, 20, 21, -1, 30, -1, -1, 7, -1]);
    expect(Array.from(micro[0]!.perToken.slice(5 * 4, 6 * 4))).toEqual([0.25, -1, -3, 0]);
  });

  it('splits by the token budget into rows of the granule, pads each row\'s end, and weights every completion token 1/total', () => {
    const micro = packRollouts(sample, { tokens: 8, maxLength: 16, lengthGranule: 4, padId: 0 });
    // Rows of 8, one per micro-batch: 7 + pad, 6 + pad (the 3-token sequence does not fit beside it), 3 + pad.
    expect(micro.map((m) => [m.batch.B, m.batch.T])).toEqual([[1, 8], [1, 8], [1, 8]]);
    // The remainder a sequence of its own, without targets.
    expect(Array.from(micro[0]!.batch.mask!)).toEqual([1, 1, 1, 1, 1, 1, 1, 8]);
    expect(Array.from(micro[2]!.batch.tokens)).toEqual([1, 10, 30, 0, 0, 0, 0, 0]);
    // The context caps a row: three rows of 8 in one micro-batch of 24 tokens.
    const rows = packRollouts(sample, { tokens: 24, maxLength: 8, lengthGranule: 4, padId: 0 });
    expect(rows.map((m) => [m.batch.B, m.batch.T])).toEqual([[3, 8]]);
    for (const m of [micro, rows]) {
      const weights = m.flatMap((x) => Array.from({ length: x.perToken.length / 4 }, (_, i) => x.perToken[i * 4]!));
      expect(weights.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
      expect(weights.filter((x) => x > 0)).toHaveLength(6);
    }
  });

  it('a packed row, shared prompts included, trains as its sequences apart: the same gradient as each in a batch of its own', async () => {
    const rt = await testRuntime({}, 'suite');
    const seed = freshSeed();
    const r = rng(seed);
    const model = Transformer.init(rt, { ...CONFIG, num_hidden_layers: 2 }, seed);
    const token = () => 3 + Math.floor(r() * 200);
    // Three prompts, the first two sampled several times: families and single sequences.
    const promptsOf = Array.from({ length: 3 }, () => [1, ...Array.from({ length: Math.floor(r() * 9) }, token)]);
    const rollouts = [0, 1, 0, 2, 1, 0, 1].map((k, i) => {
      const n = 1 + Math.floor(r() * 5);
      return {
        promptIds: promptsOf[k]!,
        completionIds: Array.from({ length: n }, token),
        oldLogprobs: Array.from({ length: n }, () => -5 + r()),
        // Both signs, so that whichever side of the clip range the ratios fall, some tokens
        // pass it: with signs drawn at random all seven were negative in one seed of 128, every
        // ratio (about 0.4) clipped, and the gradient all zero.
        advantage: (i % 2 === 0 ? 1 : -1) * (0.25 + r() * 1.75),
      };
    });
    const gradOf = async (micro: PolicyMicroBatch[]) => {
      model.zeroGrad();
      for (const m of micro) {
        model.forwardPolicyLoss(m.batch, m.perToken, DEFAULT_POLICY_LOSS);
        model.backward();
      }
      return rt.read(model.grads);
    };
    const packed = packRollouts(rollouts, { tokens: 64, maxLength: 64, lengthGranule: 8, padId: 0 });
    expect(packed).toHaveLength(1);
    // One sequence per micro-batch, its weights rescaled from 1/(its tokens) to 1/(all tokens).
    const total = rollouts.reduce((n, x) => n + x.completionIds.length, 0);
    const apart = rollouts.flatMap((x) =>
      packRollouts([x], { tokens: 1, maxLength: 64, lengthGranule: 8, padId: 0 }).map((m) => {
        for (let t = 0; t < m.perToken.length; t += 4) m.perToken[t]! *= x.completionIds.length / total;
        return m;
      }),
    );
    expect(apart).toHaveLength(7);
    const [g1, g2] = [await gradOf(packed), await gradOf(apart)];
    // f32 sums of the same terms in another order: usually under 3e-5 of a row's scale, 4e-4 seen where a
    // row's terms cancel; attention across sequences is off by O(1) (8 with the sequence starts dropped from the mask).
    assertClose(`packed vs apart gradient, seed ${seed}`, g1, Float64Array.from(g2), CONFIG.hidden_size, 1e-3);
    expect(g1.some((x) => x !== 0)).toBe(true);
    model.destroy();
  });

  it('refuses a rollout longer than the context or with mismatched log-probs', () => {
    const o = { tokens: 4, maxLength: 4, lengthGranule: 4, padId: 0 };
    expect(() => packRollouts([{ promptIds: [1, 2, 3], completionIds: [4, 5], oldLogprobs: [0, 0], advantage: 1 }], o)).toThrow(/exceed the model's context of 4/);
    expect(() => packRollouts([{ promptIds: [1], completionIds: [4, 5], oldLogprobs: [0], advantage: 1 }], o)).toThrow(/1 log-probs for 2 tokens/);
    expect(packRollouts([{ promptIds: [1], completionIds: [], oldLogprobs: [], advantage: 1 }], o)).toEqual([]);
  });
});

describe('policy training in a model session', () => {
  it('starts the loop’s optimizer, trains, and exports its moments and step for a resume', async () => {
    const rt = await testRuntime({}, 'suite');
    const session = ModelSession.create(rt, { kind: 'preset', preset: 'tiny', seed: 3 });
    const rollouts = [
      { promptIds: [1, 65, 66], completionIds: [67, 2], oldLogprobs: [-5.5, -5.6], advantage: 1 },
      { promptIds: [1, 65, 66], completionIds: [70, 2], oldLogprobs: [-5.5, -5.6], advantage: -1 },
    ];
    await expect(session.trainPolicy(rollouts, 1e-3, { ...DEFAULT_POLICY, loss: { ...DEFAULT_POLICY.loss, klCoef: 0.1 } })).rejects.toThrow(
      'a KL coefficient of 0.1 needs reference log-probs, and rollout 0 has none: set klCoef to 0',
    );
    expect(session.optimizerStep).toBe(0);
    const r = await session.trainPolicy(rollouts, 1e-3, { ...DEFAULT_POLICY, microTokens: 32 });
    expect(r).toMatchObject({ finite: true, tokens: 4 });
    expect(session.optimizerStep).toBe(1);
    const ckpt = importCheckpoint(await session.exportFiles());
    expect(ckpt.optimizer?.step).toBe(1);
    const resumed = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: ckpt, name: 'resumed' });
    await resumed.trainPolicy(rollouts, 1e-3);
    expect(resumed.optimizerStep).toBe(2);
    const afresh = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: ckpt, name: 'afresh' });
    afresh.resetOptimizer();
    await afresh.trainPolicy(rollouts, 1e-3);
    expect(afresh.optimizerStep).toBe(1);
    for (const s of [session, resumed, afresh]) s.destroy();
  });

  it('breaks the step\'s statistics down by group: each group\'s token mean, and the groups\' token-weighted means give the whole', () => {
    const r = rng(freshSeed());
    const rollouts = Array.from({ length: 7 }, (_, i) => {
      const n = 1 + Math.floor(r() * 5);
      return { promptIds: [1, 2 + (i % 3)], completionIds: Array.from({ length: n }, () => 3 + Math.floor(r() * 50)), oldLogprobs: Array.from({ length: n }, () => -1 - r()), advantage: r() - 0.5, group: i % 2 ? 'solver' : 'critic' };
    });
    const micro = packRollouts(rollouts, { tokens: 32, maxLength: 64, lengthGranule: 8, padId: 0 });
    // Kernel outputs made up per token: loss w·(A − 1), log-prob old − 0.1, entropy 2 + A.
    const outputs = micro.map(({ perToken }) => {
      const out = new Float32Array((perToken.length / 4) * 3);
      for (let t = 0; t < perToken.length / 4; t++) {
        const [w, A, old] = [perToken[t * 4]!, perToken[t * 4 + 1]!, perToken[t * 4 + 2]!];
        if (w) out.set([w * (A - 1), old - 0.1, 2 + A], t * 3);
      }
      return out;
    });
    const stats = policyStatistics(micro, outputs, DEFAULT_POLICY_LOSS);
    const tokens = (g: string) => rollouts.filter((x) => x.group === g).flatMap((x) => x.completionIds.map(() => x.advantage));
    for (const g of ['solver', 'critic']) {
      const As = tokens(g);
      expect(stats.groups![g]!.tokens).toBe(As.length);
      expect(stats.groups![g]!.loss).toBeCloseTo(As.reduce((a, A) => a + Math.fround(A) - 1, 0) / As.length, 5);
      expect(stats.groups![g]!.approxKl).toBeCloseTo(0.1, 5);
    }
    const whole = ['solver', 'critic'].reduce((a, g) => a + stats.groups![g]!.entropy * stats.groups![g]!.tokens, 0) / stats.tokens;
    expect(whole).toBeCloseTo(stats.entropy, 5);
    // Without groups on the rollouts, none are reported.
    const plain = packRollouts(rollouts.map(({ group: _, ...x }) => x), { tokens: 32, maxLength: 64, lengthGranule: 8, padId: 0 });
    expect(policyStatistics(plain, outputs, DEFAULT_POLICY_LOSS).groups).toBeUndefined();
  });

  it('sampled at T = 0.7 with top-p 0.9, the rollouts\' recorded log-probs are the update\'s own under the same temperature: the ratio starts at 1', async () => {
    const rt = await testRuntime({}, 'suite');
    const session = ModelSession.create(rt, { kind: 'preset', preset: 'tiny', seed: 11 });
    const seed = freshSeed();
    const out = await session.generate(['ab', 'cd', 'ab'], { maxNewTokens: 12, temperature: 0.7, topK: 0, topP: 0.9, seed, stop: [] });
    const rollouts = out.rows.map((row, i) => ({ promptIds: row.promptIds, completionIds: row.completionIds, oldLogprobs: row.modelLogprobs, advantage: i === 1 ? -1 : 1 }));
    const at = (temperature: number) => ({ ...DEFAULT_POLICY, loss: { ...DEFAULT_POLICY.loss, temperature } });
    // lr 0: the statistics of the forward alone (the update changes nothing).
    const same = await session.trainPolicy(rollouts, 1e-12, at(0.7));
    expect(Math.abs(same.approxKl), `seed ${seed}`).toBeLessThan(2e-4);
    expect(same.clipFraction).toBe(0);
    // Trained untempered, the same rollouts are off-policy from the first step: the mismatch the temperature removes.
    // Per token, |log p_T=1 − recorded| is large (0.08–0.17 on average); the step's mean of (old − new) alone can
    // cancel to either sign on 36 tokens, so the mismatch is read from the update's forward token by token.
    const untempered = await session.trainPolicy(rollouts, 1e-12, at(1));
    // The entropy of softmax(z / T) rises with T for every non-uniform z: the setting reached the kernel.
    expect(untempered.entropy, `seed ${seed}`).toBeGreaterThan(same.entropy);
    const micro = packRollouts(rollouts, { tokens: 4096, maxLength: 256, lengthGranule: 8, padId: 0 });
    const mismatch = async (temperature: number) => {
      let sum = 0;
      let n = 0;
      for (const { batch, perToken } of micro) {
        const out = await rt.read(session.model.forwardPolicyLoss(batch, perToken, { ...DEFAULT_POLICY_LOSS, temperature }));
        for (let t = 0; t < perToken.length / 4; t++) {
          if (!perToken[t * 4]) continue;
          sum += Math.abs(out[t * 3 + 1]! - perToken[t * 4 + 2]!);
          n++;
        }
      }
      return sum / n;
    };
    expect(await mismatch(0.7), `seed ${seed}`).toBeLessThan(1e-4);
    expect(await mismatch(1), `seed ${seed}`).toBeGreaterThan(0.03);
    session.destroy();
  });

  it('with LoRA the loop trains the adapter alone: base unchanged, the adapter moved, generation sees it, resume continues it', async () => {
    const rt = await testRuntime({}, 'suite');
    const session = ModelSession.create(rt, { kind: 'preset', preset: 'tiny', seed: 3 });
    const base = await session.model.readParams();
    session.setLora({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] }, { seed: 1 });
    const before = await session.generate(['ab'], { maxNewTokens: 4, temperature: 0 });
    const adapter = await session.model.readAdapter();
    const rollouts = [
      { promptIds: [1, 65, 66], completionIds: [67, 2], oldLogprobs: [-5.5, -5.6], advantage: 1 },
      { promptIds: [1, 65, 66], completionIds: [70, 2], oldLogprobs: [-5.5, -5.6], advantage: -1 },
    ];
    for (let i = 0; i < 3; i++) expect((await session.trainPolicy(rollouts, 5e-2, { ...DEFAULT_POLICY, microTokens: 32 })).finite).toBe(true);
    expect(await session.model.readParams()).toEqual(base);
    const moved = await session.model.readAdapter();
    expect(moved.some((v, i) => v !== adapter[i])).toBe(true);
    // The generator was laid out after the adapter came: it reads the adapter as it is now.
    const after = await session.generate(['ab'], { maxNewTokens: 4, temperature: 0 });
    expect(after.rows[0]!.modelLogprobs).not.toEqual(before.rows[0]!.modelLogprobs);
    // Generation read the adapter merged into a copy of the weights, remade after the updates:
    // what the adapter kept apart gives.
    session.model.mergeAdapterForInference = false;
    const apart = (await session.generate(['ab'], { maxNewTokens: 4, temperature: 0 })).rows[0]!;
    session.model.mergeAdapterForInference = null;
    expect(apart.completionIds).toEqual(after.rows[0]!.completionIds);
    apart.modelLogprobs.forEach((lp, k) => expect(Math.abs(lp - after.rows[0]!.modelLogprobs[k]!)).toBeLessThan(1e-4));

    const ckpt = importCheckpoint(await session.exportFiles());
    expect(ckpt.lora?.config.rank).toBe(4);
    const resumed = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: ckpt, name: 'resumed' });
    expect(resumed.lora?.rank).toBe(4);
    assertClose('unmerged base', await resumed.model.readParams(), base, CONFIG.hidden_size, 1e-5);
    expect(await resumed.model.readAdapter()).toEqual(moved);
    await resumed.trainPolicy(rollouts, 5e-2);
    expect(resumed.optimizerStep).toBe(4);
    for (const s of [session, resumed]) s.destroy();
  });
});
