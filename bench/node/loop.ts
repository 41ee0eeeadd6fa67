/**
 * The loop suite's Node half: loop steps by phase on Dawn (bench/loopCore.ts),
 * run by scripts/bench.mjs before the page opens.
 *
 *   node --import tsx bench/node/loop.ts [--quick] [--out FILE]
 */
import { readCheckpointFolder } from '../../src/cli/runFiles';
import { readProblemFile } from '../../src/data/nodeFile';
import { Runtime } from '../../src/gpu/runtime';
import { nodePlatform } from '../../src/platform/node';
import { benchLoop, LOOP_CHECKPOINT, LOOP_SEEDS, type LoopBench } from '../loopCore';
import { isolatedCache } from '../trainCore';
import { runNodeHalf } from '../nodeHalf';

runNodeHalf(async ({ quick, log }): Promise<{ dawn: string } & LoopBench> => {
  const rt = await Runtime.create(isolatedCache(nodePlatform()), { profile: true });
  try {
    const a = rt.ctx.adapter;
    const seeds = (await readProblemFile(LOOP_SEEDS)).problems;
    const bench = await benchLoop(rt, readCheckpointFolder(LOOP_CHECKPOINT), seeds, { quick, log });
    return { dawn: [a.vendor, a.architecture, a.description].filter(Boolean).join(' / '), ...bench };
  } finally {
    rt.destroy();
  }
});
