/**
 * The GPU report's SAGE step (bench/sageStep.ts) on Dawn: one loop step on a
 * Qwen2.5-0.5B-shaped model with an f16 base and LoRA, phase by phase, with the GPU's busy share.
 * The GPU kit (npm run gpu-kit) bundles it and runs it after the report and its peers.
 *
 *   node --import tsx bench/node/step.ts [--quick] [--out FILE]
 *
 * Run from the repository's root (or the kit's): the seeds are read from data/seeds/.
 */
import { readProblemFile } from '../../src/data/nodeFile';
import { Runtime } from '../../src/gpu/runtime';
import { nodePlatform } from '../../src/platform/node';
import { LOOP_SEEDS } from '../loopCore';
import { logTables, runNodeHalf } from '../nodeHalf';
import { sageStep, sageStepTables } from '../sageStep';
import { isolatedCache } from '../trainCore';

runNodeHalf(async ({ quick, log }) => {
  // Quick (a smoke test on a CPU adapter) keeps the untuned plan: SwiftShader takes most of an
  // hour to tune the step's 154 shape classes, a GPU a minute or two.
  const rt = await Runtime.create(isolatedCache(nodePlatform()), { profile: true, tuning: !quick });
  try {
    const seeds = (await readProblemFile(LOOP_SEEDS)).problems;
    const figures = await sageStep(rt, { quick, seeds, log });
    logTables(sageStepTables(figures, 'Node (Dawn)'), log);
    return figures;
  } finally {
    rt.destroy();
  }
});
