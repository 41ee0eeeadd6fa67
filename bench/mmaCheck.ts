/**
 * matmul_mma's test cases (src/gpu/ops/matmulCheck.ts MMA_CASES) against float64 on the
 * device the GPU report runs on: its kernels run only on GPUs with subgroup matrices, where no
 * test suite runs, so the report (bench/node/gpu.ts, the GPU kit) runs them. Node only.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodePlatform } from '../src/platform/node';
import { Runtime } from '../src/gpu/runtime';
import { checkMatmul, MMA_CASES } from '../src/gpu/ops/matmulCheck';

/**
 * Every case checked on a device of its own, so that a kernel the driver refuses (an
 * experimental feature's) raises its error there and not in the report's runtime; a failure
 * is its case and the check's sentence, never a stop. Null where the device has no subgroup
 * matrices (nothing to check).
 */
export async function mmaCheck(log: (m: string) => void): Promise<{ cases: number; failed: string[] } | null> {
  const platform = nodePlatform({ ownDevice: true, cacheFile: join(tmpdir(), `sage-lab-mma-check-${process.pid}.json`) });
  const rt = await Runtime.create(platform, { tuning: false });
  const m = rt.subgroupMatrix;
  if (!m) {
    rt.destroy();
    return null;
  }
  log(`gpu: ${m.M}×${m.N}×${m.K} subgroup matrices: matmul_mma's ${MMA_CASES.length} cases against float64`);
  const failed: string[] = [];
  try {
    for (const [i, c] of MMA_CASES.entries()) {
      try {
        await checkMatmul(rt, 'mma', c, 1 + i);
      } catch (e) {
        failed.push(e instanceof Error ? e.message : String(e));
      }
    }
  } finally {
    rt.destroy();
  }
  log(`gpu: matmul_mma: ${MMA_CASES.length - failed.length} of ${MMA_CASES.length} cases match float64${failed.length ? ', so the figures run without it' : ''}${failed.map((f) => `\n  ${f}`).join('')}`);
  return { cases: MMA_CASES.length, failed };
}
