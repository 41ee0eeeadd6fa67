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

runNodeHalf(async ({ quick, log, save }) => {
  // matmul_mma's float64 cases first, on a device of their own: the figures use the matrix
  // units only where every case matched on this card.
  const checked = await mmaCheck(log);
  const matrices = { subgroupMatrix: checked === null || checked.failed.length === 0 };
  // One platform, so the profiling runtime finds the shapes the first one tuned.
  const platform = isolatedCache(nodePlatform());
  const rt = await Runtime.create(platform, matrices);
  const profileRt = await Runtime.create(platform, { profile: true, ...matrices });
  try {
    const report = await gpuReport(rt, { quick, log, profileRt, clock: threadCpuClock() ?? undefined, mmaCheck: checked, save });
    logTables(gpuTables(report, 'Node (Dawn)'), log);
    return report;
  } finally {
    profileRt.destroy();
    rt.destroy();
  }
});
