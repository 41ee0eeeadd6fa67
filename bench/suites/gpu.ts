/**
 * The GPU report (bench/gpuReport.ts) in the page's WebGPU and, beside it, in Node on Dawn
 * (bench/node/gpu.ts): decode and LoRA training tokens/s of SmolLM2-135M- and
 * Qwen2.5-0.5B-shaped models against this adapter's copy bandwidth and matmul peak. On a
 * machine with a GPU: SAGE_GPU=hardware npm run bench -- --suite gpu.
 */
import { Runtime } from '../../src/gpu/runtime';
import { browserPlatform } from '../../src/platform/browser';
import { gpuReport, gpuTables, type GpuReport } from '../gpuReport';
import { errorMessage, type Suite, type SuiteOptions, type Table } from '../suite';
import { isolatedCache } from '../trainCore';

export const gpuSuite: Suite = async ({ quick, log, node }: SuiteOptions) => {
  const failures: string[] = [];
  const nodeResult = node as GpuReport | { error: string } | undefined;
  if (nodeResult && 'error' in nodeResult) failures.push(`node: ${nodeResult.error}`);
  if (!nodeResult) log('gpu: no Node results were handed to the page (run through npm run bench for them)');
  const rt = await Runtime.create(isolatedCache(browserPlatform));
  let report: GpuReport | null = null;
  try {
    report = await gpuReport(rt, { quick, log });
  } catch (e) {
    failures.push(`browser: ${errorMessage(e)}`);
  } finally {
    rt.destroy();
  }
  const nodeReport = nodeResult && !('error' in nodeResult) ? nodeResult : null;
  for (const [where, r] of [['browser', report], ['node', nodeReport]] as const) {
    for (const m of r?.models ?? []) for (const e of m.errors) failures.push(`${where} ${m.model}: ${e}`);
  }
  const tables: Table[] = report ? gpuTables(report, `Chromium (${navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? 'WebGPU'})`) : [];
  if (nodeReport) tables.push(...gpuTables(nodeReport, 'Node (Dawn)'));
  return { suite: 'gpu', tables, data: { browser: report, node: nodeResult ?? null }, failures };
};
