import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { matmulTuner } from '../gpu/ops/autotune';
import { Runtime } from '../gpu/runtime';
import { freshSeed, rng } from '../gpu/testUtils';
import { BYTE_VOCAB_SIZE, type LlamaConfig } from '../model/config';
import { Generator } from '../model/generate';
import { ByteTokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import { nodePlatform } from '../platform/node';
import { AdamW } from './adamw';
import { DEFAULT_POLICY_LOSS, packRollouts, policyStep } from './policy';
import { traceRunShapes, tuneRunShapes } from './tuneRun';

/** Its MLP's weights (1-2 MiB) are worth tuning at every size (see worthTuning); its other matmuls are not. */
const CONFIG: LlamaConfig = {
  vocab_size: BYTE_VOCAB_SIZE,
  hidden_size: 256,
  intermediate_size: 1024,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  attention_bias: false,
};

describe('tuning a run before its first step', () => {
  it('tunes every shape a generation and an update of the run can use: neither tunes anything after', async () => {
    // A runtime of its own, with an empty tuning cache.
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-lab-tune-${process.pid}-${Date.now()}.json`) }));
    const seed = freshSeed();
    const r = rng(seed);
    const model = Transformer.init(rt, CONFIG, seed);
    const shapes = { generations: [{ rows: 6, distinct: 4, promptTokens: 12 }], trains: true, microTokens: 64, granule: 16 };
    const progress: [number, number][] = [];
    const tuned = await tuneRunShapes(model, shapes, (done, total) => progress.push([done, total]));
    expect(tuned).toBeGreaterThan(0);
    expect(progress[0]).toEqual([0, tuned]);
    expect(progress[progress.length - 1]).toEqual([tuned, tuned]);
    // Nothing was computed while tracing, and nothing is pending.
    expect(matmulTuner(rt).pendingCount).toBe(0);

    // A generation of up to 6 rows (shared and distinct prompts of up to 12 tokens), then an update on its rollouts.
    const g = new Generator(model, new ByteTokenizer());
    const prompts = [3, 11, 12, 7].map((n) => Array.from({ length: n }, () => 3 + Math.floor(r() * 250)));
    const out = await g.generate([prompts[0]!, prompts[1]!, prompts[0]!, prompts[2]!, prompts[3]!, prompts[1]!], { temperature: 1, seed, maxNewTokens: 9, eosTokenIds: [] });
    expect(matmulTuner(rt).pendingCount, `seed ${seed}`).toBe(0);
    const rollouts = out.rows.map((row, i) => ({ promptIds: row.promptIds, completionIds: row.completionIds, oldLogprobs: row.modelLogprobs, advantage: i % 2 ? 1 : -1 }));
    const micro = packRollouts(rollouts, { tokens: shapes.microTokens, maxLength: CONFIG.max_position_embeddings, lengthGranule: shapes.granule, padId: 0 });
    const optimizer = new AdamW(rt, model.params.size, model.specs);
    const step = await policyStep(model, optimizer, micro, 1e-3, DEFAULT_POLICY_LOSS);
    expect(step.finite).toBe(true);
    expect(step.tuned, `seed ${seed}`).toBe(0);
    g.release();
    optimizer.destroy();
    model.destroy();
    rt.destroy();
  });

  it("traces the LM head at every count of completion tokens a micro-batch can have: the update's head runs on those alone", async () => {
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-lab-tune-head-${process.pid}-${Date.now()}.json`) }));
    const seed = freshSeed();
    const r = rng(seed);
    const model = Transformer.init(rt, CONFIG, seed);
    const shapes = { generations: [{ rows: 1, distinct: 1, promptTokens: 4 }], trains: true, microTokens: 128, granule: 16 };
    // Traced, not tuned: the classes the run's steps can meet, each run untuned here.
    traceRunShapes(model, shapes);
    const traced = matmulTuner(rt).plan().untuned;
    const token = () => Math.floor(r() * CONFIG.vocab_size);
    const rollout = ([p, c]: readonly [number, number], i: number) => ({
      promptIds: Array.from({ length: p }, token), completionIds: Array.from({ length: c }, token), oldLogprobs: new Array<number>(c).fill(-8), advantage: i % 2 ? 1 : -1,
    });
    const optimizer = new AdamW(rt, model.params.size, model.specs);
    // Updates whose heads keep 1, 12 and 40 rows of micro-batches of one and two 64-token rows.
    const updates: (readonly [number, number])[][] = [[[20, 1]], [[3, 12]], [[20, 1], [3, 12], [9, 2], [14, 5], [5, 7], [11, 1], [18, 9], [4, 3]]];
    for (const sizes of updates) {
      const micro = packRollouts(sizes.map(rollout), { tokens: shapes.microTokens, maxLength: CONFIG.max_position_embeddings, lengthGranule: shapes.granule, padId: 0 });
      expect((await policyStep(model, optimizer, micro, 1e-3, DEFAULT_POLICY_LOSS, false)).finite).toBe(true);
      expect(matmulTuner(rt).plan().untuned, `seed ${seed}, completions of ${sizes.map(([, c]) => c).join(', ')} tokens`).toEqual(traced);
    }
    optimizer.destroy();
    model.destroy();
    rt.destroy();
  });
});
