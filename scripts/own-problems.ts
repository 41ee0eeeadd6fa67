// The problems a checkpoint writes continuing lists of reference seeds, as a run's `own`
// Challenger warm-up makes them before its first step (writeOwnProblems: the run's seed,
// prompts, sampling and the Challenger's token limit), written as JSONL of {question, answer}
// for `scripts/warmup-examples.ts --challenger-warmup own --own-problems FILE`, so that a
// reference trainer's examples teach the Challenger as the engine's warm-up does.
// Usage: node scripts/node-gpu.mjs scripts/own-problems.ts --model DIR --out FILE [--seeds FILE] [--seed 0]
import { writeFileSync } from 'node:fs';
import { isMain, runCli, UsageError, type OptionValues } from '../src/cli/options';
import { checkpointRecord, checkpointTemplates, logShards, readCheckpointFolder } from '../src/cli/runFiles';
import { readSplit } from '../src/cli/runInputs';
import { SHIPPED_SPLITS } from '../src/data/curriculum';
import { Runtime } from '../src/gpu/runtime';
import { importCheckpoint } from '../src/model/checkpoint';
import { nodePlatform } from '../src/platform/node';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { sessionGenerate } from '../src/sage/runModel';
import { modelDefaults } from '../src/sage/settings';
import { TEMPLATE_SETS } from '../src/sage/templates';
import { writeOwnProblems } from '../src/sage/warmup';
import { ModelSession } from '../src/train/session';

export const ownProblemsCli = {
  name: 'own-problems',
  summary: "The problems a checkpoint writes continuing reference seeds, as a run's own Challenger warm-up makes them.",
  options: {
    model: { type: 'string', arg: 'DIR', exists: 'dir', required: true, help: 'the checkpoint whose writing the warm-up takes (the base a run warms up: tiny-arith-base for tiny-arith)' },
    seeds: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.seeds.file, help: 'the seeds: one continuation per math seed, each of a list of reference seeds' },
    seed: { type: 'int', min: 0, default: 0, help: 'the run\'s --seed (the prompts are drawn from seed + 1, the sampling from seed)' },
    out: { type: 'string', arg: 'FILE', required: true, help: 'JSONL of {question, answer}, one problem read a line' },
  },
  notes: ['env SAGE_GPU=hardware  use a real GPU instead of SwiftShader'],
} as const;

async function main(o: OptionValues<typeof ownProblemsCli.options>): Promise<void> {
  if (!o.model || !o.out) throw new UsageError('--model and --out are required');
  const seeds = await readSplit(o.seeds, 'seeds');
  const templates = checkpointTemplates(checkpointRecord(o.model), o.model, undefined);
  const rt = await Runtime.create(nodePlatform());
  const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(readCheckpointFolder(o.model)), name: o.model, onProgress: logShards });
  try {
    const l = DEFAULT_LOOP;
    const settings = { templates: TEMPLATE_SETS[templates], references: l.references, seed: o.seed, temperature: l.temperature, topK: l.topK, topP: l.topP, maxNewTokens: modelDefaults(templates, false).maxNewTokens };
    const { written, read } = await writeOwnProblems(sessionGenerate(session), seeds, settings);
    writeFileSync(o.out, read.map((p) => JSON.stringify(p) + '\n').join(''));
    console.log(`${written} continuations, ${read.length} state a problem the environment reads with an answer, to ${o.out}`);
    for (const p of read.slice(0, 5)) console.log(`  ${p.question} ${p.answer}`);
  } finally {
    session.destroy();
    rt.destroy();
  }
}

if (isMain(import.meta.url)) await runCli(ownProblemsCli, main);
