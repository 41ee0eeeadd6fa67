/** The matmul tests' check of a case against float64, on the test file's runtime (see matmulCheck.ts). */
import { freshSeed, testRuntime } from '../testUtils';
import { checkMatmul, type Case } from './matmulCheck';
import type { MatmulVariant } from './matmulVariants';

/** Runs one case of a variant on random inputs against float64 (matmulCheck.ts checkMatmul). */
export async function check(variant: MatmulVariant, shape: Case, subgroupMatmul = true): Promise<void> {
  // With subgroups, the runtime's default: the one runtime of the file's other tests, whose
  // pipelines (a compile of seconds each on SwiftShader) it shares.
  const rt = await testRuntime(subgroupMatmul ? {} : { subgroupMatmul: false });
  await checkMatmul(rt, variant, shape, freshSeed());
}
