/**
 * The GPU report's Node half (bench/gpuReport.ts) on Dawn: scripts/bench.mjs runs it before
 * the page's gpu suite, and the GPU kit (npm run gpu-kit) bundles it to run with Node and a
 * GPU driver alone.
 *
 *   node --import tsx bench/node/gpu.ts [--quick] [--out FILE]
 *
 * SAGE_GPU=hardware asks Dawn for the machine's GPU; without it, SwiftShader (see
 * scripts/gpu-env.mjs). Progress goes to stderr; the JSON report to FILE or stdout.
 */
import { Runtime } from '../../src/gpu/runtime';
import { nodePlatform } from '../../src/platform/node';
import { gpuReport, gpuTables } from '../gpuReport';
import { mmaCheck } from '../mmaCheck';
import { logTables, runNodeHalf } from '../nodeHalf';
import { threadCpuClock } from '../threadClock';
import { isolatedCache } from '../trainCore';

runNodeHalf(async ({ quick, log }) => {
  // One platform, so the profiling runtime finds the shapes the first one tuned.
  const platform = isolatedCache(nodePlatform());
  const rt = await Runtime.create(platform);
  const profileRt = await Runtime.create(platform, { profile: true });
  try {
    const report = await gpuReport(rt, { quick, log, profileRt, clock: threadCpuClock() ?? undefined, mmaCheck });
    logTables(gpuTables(report, 'Node (Dawn)'), log);
    return report;
  } finally {
    profileRt.destroy();
    rt.destroy();
  }
});
