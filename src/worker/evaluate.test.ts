import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCheckpointFolder, SHIPPED_MODEL } from '../cli/runFiles';
import { importCheckpoint, LAB_RECORD } from '../model/checkpoint';
import { testPlatform } from '../gpu/testUtils';
import { DEFAULT_LOOP } from '../sage/loopContract';
import { createEngine } from './engine';

const VALIDATION = 'data/validation/curriculum-1000.jsonl';

describe('engine: evaluating the held model', () => {
  it('takes the prompts its checkpoint records, validates it as a run would (tallies agreeing with every outcome), and exports the record again', async () => {
    const e = createEngine(testPlatform('suite'));
    const files = [...readCheckpointFolder(SHIPPED_MODEL)].map(([name, bytes]) => ({ name, bytes }));
    const model = await e.importCheckpoint('tiny-curriculum', files);
    expect(model.templates).toBe('compact');
    await expect(e.evaluate({ method: 'sage', templates: 'compact', limit: 3 })).rejects.toThrow('no validation problems loaded: load a held-out file first');
    // Levels 1, 2, 3 and 1 again: three problems taken in turn from each level are one of each.
    const lines = readFileSync(VALIDATION, 'utf8').split('\n');
    await e.loadProblems('validation', 'held-out.jsonl', new Blob([[0, 200, 400, 1].map((i) => lines[i]).join('\n')]));
    await expect(e.evaluate({ method: 'sage', templates: 'compact', limit: 0 })).rejects.toThrow('validationLimit must be an integer ≥ 1 (got 0)');

    const r = await e.evaluate({ method: 'sage', templates: 'compact', limit: 3 });
    // The token limits a run with compact prompts uses.
    expect(r).toMatchObject({ model: 'tiny-curriculum', method: 'sage', templates: 'compact', problems: 3, of: 4, maxNewTokens: DEFAULT_LOOP.maxNewTokens });
    expect(r.outcomes.map((o) => [o.step, o.mode])).toEqual([[0, 'solver'], [0, 'planned']]);
    for (const [o, tally] of [[r.outcomes[0]!, r.result], [r.outcomes[1]!, r.result.planned!]] as const) {
      expect(o.problems.map((p) => p.level)).toEqual([1, 2, 3]);
      expect(tally.accuracy).toBe(o.problems.filter((p) => p.verdict >= 1).length / 3);
      for (const p of o.problems) expect(tally.perLevel[String(p.level)]).toMatchObject({ correct: p.verdict >= 1 ? 1 : 0, total: 1 });
    }
    expect(r.result.planned!.planShown).toBe(r.outcomes[1]!.problems.filter((p) => p.planShown).length / 3);
    expect(r.result.critic!.pairs).toEqual({ problems: 3, plans: 3, answers: 3 });
    // A method without a Planner: the Solver alone, greedy, so the same outcomes again; without a Critic, no AUC.
    const rlvr = await e.evaluate({ method: 'rlvr', templates: 'compact', limit: 3 });
    expect(rlvr.outcomes).toEqual([r.outcomes[0]]);
    expect(rlvr.result.critic).toBeUndefined();

    // The held model's export records the prompts it was trained with, as its checkpoint did.
    const exported = await e.exportCheckpoint();
    expect(new TextDecoder().decode(exported.find((f) => f.name === LAB_RECORD)!.bytes)).toContain('"compact"');
    expect(importCheckpoint(new Map(exported.map((f) => [f.name, f.bytes]))).templates).toBe('compact');
  });
});
