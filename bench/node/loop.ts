/**
 * The loop suite's Node half: seconds per loop step by phase on Dawn (bench/loopCore.ts),
 * run by scripts/bench.mjs before the page opens.
 *
 *   node --import tsx bench/node/loop.ts [--quick] [--out FILE]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { readCheckpointFolder } from '../../src/cli/runFiles';
import { readProblemFile } from '../../src/data/nodeFile';
import { Runtime } from '../../src/gpu/runtime';
import { nodePlatform } from '../../src/platform/node';
import { benchLoop, LOOP_CHECKPOINT, LOOP_SEEDS, type LoopBenchRow } from '../loopCore';
import { isolatedCache } from '../trainCore';

const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const log = (m: string) => process.stderr.write(`[bench node] ${m}\n`);

async function main(): Promise<{ dawn: string; rows: LoopBenchRow[] }> {
  const rt = await Runtime.create(isolatedCache(nodePlatform()));
  try {
    const a = rt.ctx.adapter;
    const seeds = (await readProblemFile(LOOP_SEEDS)).problems;
    const rows = await benchLoop(rt, readCheckpointFolder(LOOP_CHECKPOINT), seeds, { quick: args.quick ?? false, log });
    return { dawn: [a.vendor, a.architecture, a.description].filter(Boolean).join(' / '), rows };
  } finally {
    rt.destroy();
  }
}

main().then(
  (result) => {
    const json = JSON.stringify(result);
    if (args.out) writeFileSync(args.out, json);
    else process.stdout.write(`${json}\n`);
    // Dawn's worker threads can keep the event loop alive after the device is destroyed.
    process.exit(0);
  },
  (e: unknown) => {
    log(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
