/**
 * Loop steps by phase for SAGE, MAE and the RLVR baseline (bench/loopCore.ts), in the page's
 * WebGPU and, beside it, in Node on Dawn. No library a user would pick instead runs this
 * loop in a browser, so each phase is measured against this adapter's own ceilings: the
 * matmul peak at 512³ and the decode rate at the same batch, both measured in the same run.
 */
import { importProblems } from '../../src/data/import';
import { Runtime } from '../../src/gpu/runtime';
import { browserPlatform } from '../../src/platform/browser';
import { benchLoop, LOOP_CHECKPOINT, LOOP_CHECKPOINT_FILES, LOOP_SEEDS, loopTables, type LoopBench } from '../loopCore';
import { errorMessage, type Suite, type SuiteOptions, type Table } from '../suite';
import { isolatedCache } from '../trainCore';

type NodeLoopResult = ({ dawn: string } & LoopBench) | { error: string };

async function fetchBytes(path: string): Promise<Uint8Array> {
  const r = await fetch(`/${path}`);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

export const loopSuite: Suite = async ({ quick, log, node }: SuiteOptions) => {
  const failures: string[] = [];
  const nodeResult = node as NodeLoopResult | undefined;
  if (nodeResult && 'error' in nodeResult) failures.push(`node: ${nodeResult.error}`);
  if (!nodeResult) log('loop: no Node results were handed to the page (run through npm run bench for them)');

  const files = new Map<string, Uint8Array>();
  for (const f of LOOP_CHECKPOINT_FILES) files.set(f, await fetchBytes(`${LOOP_CHECKPOINT}/${f}`));
  const seedBytes = await fetchBytes(LOOP_SEEDS);
  const seeds = await importProblems((async function* () { yield seedBytes; })(), { source: 'curriculum' });

  const rt = await Runtime.create(isolatedCache(browserPlatform), { profile: true });
  let bench: LoopBench | null = null;
  try {
    bench = await benchLoop(rt, files, seeds.problems, { quick, log });
  } catch (e) {
    failures.push(`browser: ${errorMessage(e)}`);
  } finally {
    rt.destroy();
  }
  for (const r of bench?.rows ?? []) if (r.error) failures.push(`browser ${r.method}: ${r.error}`);
  const nodeBench = nodeResult && !('error' in nodeResult) ? nodeResult : null;
  for (const r of nodeBench?.rows ?? []) if (r.error) failures.push(`node ${r.method}: ${r.error}`);

  const tables: Table[] = bench ? loopTables('browser (WebGPU)', bench) : [];
  if (nodeBench) tables.push(...loopTables(`Node (Dawn: ${nodeBench.dawn})`, nodeBench));
  return { suite: 'loop', tables, data: { browser: bench, node: nodeResult ?? null }, failures };
};
