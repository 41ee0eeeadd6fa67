/**
 * The loop suite's Node half: seconds per loop step by phase on Dawn (bench/loopCore.ts),
 * run by scripts/bench.mjs before the page opens.
 *
 *   node --import tsx bench/node/loop.ts [--quick] [--out FILE]
 */
import { readCheckpointFolder } from '../../src/cli/runFiles';
import { readProblemFile } from '../../src/data/nodeFile';
import { Runtime } from '../../src/gpu/runtime';
import { nodePlatform } from '../../src/platform/node';
import { benchLoop, LOOP_CHECKPOINT, LOOP_SEEDS, type LoopBenchRow } from '../loopCore';
import { isolatedCache } from '../trainCore';
import { runNodeHalf } from '../nodeHalf';

runNodeHalf(async ({ quick, log }): Promise<{ dawn: string; rows: LoopBenchRow[] }> => {
  const rt = await Runtime.create(isolatedCache(nodePlatform()));
  try {
    const a = rt.ctx.adapter;
    const seeds = (await readProblemFile(LOOP_SEEDS)).problems;
    const rows = await benchLoop(rt, readCheckpointFolder(LOOP_CHECKPOINT), seeds, { quick, log });
    return { dawn: [a.vendor, a.architecture, a.description].filter(Boolean).join(' / '), rows };
  } finally {
    rt.destroy();
  }
});
