import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime } from '../gpu/testing';
import { PRESETS } from '../model/config';
import { Transformer, type Batch } from '../model/transformer';
import { importCheckpoint } from '../model/checkpoint';
import { AdamW } from './adamw';
import { DEFAULT_POLICY, ModelSession } from './session';
import { DEFAULT_POLICY_LOSS, packRollouts, policyStep, type PolicyMicroBatch } from './policy';

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
    const rt = await testRuntime();
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
    const rt = await testRuntime();
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
    const rt = await testRuntime();
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
  it('targets completion tokens only, weights them 1/total over the batch, and groups rows by length', () => {
    const rollouts = [
      { promptIds: [1, 10, 11], completionIds: [20, 21, 2], oldLogprobs: [-1, -2, -3], advantage: 0.5 },
      { promptIds: [1, 10], completionIds: [30], oldLogprobs: [-4], advantage: -1 },
      { promptIds: [1, 12, 13, 14, 15], completionIds: [40, 41], oldLogprobs: [-5, -6], advantage: 2 },
    ];
    const micro = packRollouts(rollouts, { rows: 2, maxLength: 16, lengthGranule: 4, padId: 0 });
    expect(micro.map((m) => [m.batch.B, m.batch.T])).toEqual([[2, 8], [1, 8]]);
    const [first] = micro;
    const row = (a: ArrayLike<number> | undefined, from: number) => Array.from(a!).slice(from, from + 8);
    // Shortest first: [1,10,30] then [1,10,11,20,21,2].
    expect(row(first!.batch.tokens, 0)).toEqual([1, 10, 30, 0, 0, 0, 0, 0]);
    expect(row(first!.batch.mask, 0)).toEqual([1, 1, 1, 0, 0, 0, 0, 0]);
    expect(row(first!.batch.targets, 0)).toEqual([-1, 30, -1, -1, -1, -1, -1, -1]);
    expect(row(first!.batch.targets, 8)).toEqual([-1, -1, 20, 21, 2, -1, -1, -1]);
    const at = (m: number, token: number) => Array.from(micro[m]!.perToken.slice(token * 4, token * 4 + 4));
    expect(at(0, 1)).toEqual([Math.fround(1 / 6), -1, -4, 0]);
    expect(at(0, 8 + 3)).toEqual([Math.fround(1 / 6), 0.5, -2, 0]);
    expect(at(0, 0)).toEqual([0, 0, 0, 0]);
    // Every completion token is counted once, with weight 1/6: the weights sum to 1.
    const weights = micro.flatMap((m) => Array.from({ length: m.perToken.length / 4 }, (_, i) => m.perToken[i * 4]!));
    expect(weights.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
  });

  it('refuses a rollout longer than the context or with mismatched log-probs', () => {
    const o = { rows: 4, maxLength: 4, lengthGranule: 4, padId: 0 };
    expect(() => packRollouts([{ promptIds: [1, 2, 3], completionIds: [4, 5], oldLogprobs: [0, 0], advantage: 1 }], o)).toThrow(/exceed the model's context of 4/);
    expect(() => packRollouts([{ promptIds: [1], completionIds: [4, 5], oldLogprobs: [0], advantage: 1 }], o)).toThrow(/1 log-probs for 2 tokens/);
    expect(packRollouts([{ promptIds: [1], completionIds: [], oldLogprobs: [], advantage: 1 }], o)).toEqual([]);
  });
});

describe('policy training in a model session', () => {
  it('starts the loop’s optimizer, trains, and exports its moments and step for a resume', async () => {
    const rt = await testRuntime();
    const session = ModelSession.create(rt, { kind: 'preset', preset: 'tiny', seed: 3 });
    const rollouts = [
      { promptIds: [1, 65, 66], completionIds: [67, 2], oldLogprobs: [-5.5, -5.6], advantage: 1 },
      { promptIds: [1, 65, 66], completionIds: [70, 2], oldLogprobs: [-5.5, -5.6], advantage: -1 },
    ];
    const r = await session.trainPolicy(rollouts, 1e-3, { ...DEFAULT_POLICY, microRows: 1 });
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

  it('with LoRA the loop trains the adapter alone: base unchanged, the adapter moved, generation sees it, resume continues it', async () => {
    const rt = await testRuntime();
    const session = ModelSession.create(rt, { kind: 'preset', preset: 'tiny', seed: 3 });
    const base = await session.model.readParams();
    session.setLora({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] }, { seed: 1 });
    const before = await session.generate(['ab'], { maxNewTokens: 4, temperature: 0 });
    const adapter = await session.model.readAdapter();
    const rollouts = [
      { promptIds: [1, 65, 66], completionIds: [67, 2], oldLogprobs: [-5.5, -5.6], advantage: 1 },
      { promptIds: [1, 65, 66], completionIds: [70, 2], oldLogprobs: [-5.5, -5.6], advantage: -1 },
    ];
    for (let i = 0; i < 3; i++) expect((await session.trainPolicy(rollouts, 5e-2, { ...DEFAULT_POLICY, microRows: 1 })).finite).toBe(true);
    expect(await session.model.readParams()).toEqual(base);
    const moved = await session.model.readAdapter();
    expect(moved.some((v, i) => v !== adapter[i])).toBe(true);
    // The generator was laid out after the adapter came: it reads the adapter as it is now.
    const after = await session.generate(['ab'], { maxNewTokens: 4, temperature: 0 });
    expect(after.rows[0]!.modelLogprobs).not.toEqual(before.rows[0]!.modelLogprobs);

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
