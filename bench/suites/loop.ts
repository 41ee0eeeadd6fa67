/**
 * Seconds per loop step by phase for SAGE, MAE and the RLVR baseline (bench/loopCore.ts), in
 * the page's WebGPU and, beside it, in Node on Dawn. No library a user would pick instead runs
 * this loop in a browser, so the comparison is between the methods and the two platforms; the
 * share of the step spent generating says where a faster kernel would pay.
 */
import { importProblems } from '../../src/data/import';
import { Runtime } from '../../src/gpu/runtime';
import { browserPlatform } from '../../src/platform/browser';
import { benchLoop, LOOP_CHECKPOINT, LOOP_CHECKPOINT_FILES, LOOP_PHASES, LOOP_SEEDS, type LoopBenchRow } from '../loopCore';
import { errorMessage, type Suite, type SuiteOptions, type Table } from '../suite';
import { isolatedCache } from '../trainCore';

type NodeLoopResult = { dawn: string; rows: LoopBenchRow[] } | { error: string };

async function fetchBytes(path: string): Promise<Uint8Array> {
  const r = await fetch(`/${path}`);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined ? '-' : x.toFixed(digits));

function table(title: string, rows: LoopBenchRow[]): Table {
  const phases = LOOP_PHASES.filter((p) => rows.some((r) => r.seconds.phases[p] !== undefined));
  return {
    title,
    columns: ['method', 's/step', ...phases, 'generation share', 'generated tok/s', 'tokens generated', 'tokens trained'],
    rows: rows.map((r) =>
      r.error
        ? [r.method, 'failed', ...phases.map(() => '-'), '-', '-', '-', '-']
        : [
            r.method,
            fmt(r.seconds.total),
            ...phases.map((p) => fmt(r.seconds.phases[p])),
            `${fmt((100 * r.seconds.generation) / r.seconds.total, 0)}%`,
            fmt(r.generationTokensPerS, 0),
            String(Math.round(r.generatedTokens)),
            String(Math.round(r.trainedTokens)),
          ],
    ),
    notes: ['seconds: medians over the timed steps (each method first runs one untimed step that tunes kernels for its shapes); phases in the order a step runs them'],
  };
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

  const rt = await Runtime.create(isolatedCache(browserPlatform));
  let rows: LoopBenchRow[] = [];
  try {
    rows = await benchLoop(rt, files, seeds.problems, { quick, log });
  } catch (e) {
    failures.push(`browser: ${errorMessage(e)}`);
  } finally {
    rt.destroy();
  }
  for (const r of rows) if (r.error) failures.push(`browser ${r.method}: ${r.error}`);
  const nodeRows = nodeResult && !('error' in nodeResult) ? nodeResult.rows : [];
  for (const r of nodeRows) if (r.error) failures.push(`node ${r.method}: ${r.error}`);

  const tables = [table('Loop step, browser (WebGPU)', rows)];
  if (nodeRows.length) tables.push(table(`Loop step, Node (Dawn: ${(nodeResult as { dawn: string }).dawn})`, nodeRows));
  return { suite: 'loop', tables, data: { browser: rows, node: nodeResult ?? null }, failures };
};
