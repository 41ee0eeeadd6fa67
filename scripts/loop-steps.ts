/**
 * Runs loop steps of one method from the shipped checkpoint with the default settings and
 * prints each step's metrics as a JSON line: the check that a change to how a step is
 * computed leaves what it computes alone (the same seed gives the same rewards, bank, accuracy
 * and losses), and a quick timing. Runs at any commit that has detachedLoop (copy it there).
 *
 *   node scripts/node-gpu.mjs scripts/loop-steps.ts [sage|mae|rlvr|...] [steps]
 */
import { readCheckpointFolder } from '../src/cli/runFiles';
import { readProblemFile } from '../src/data/nodeFile';
import { Runtime } from '../src/gpu/runtime';
import { importCheckpoint } from '../src/model/checkpoint';
import { nodePlatform } from '../src/platform/node';
import { detachedLoop } from '../src/sage/run';
import { METHODS, type MethodName } from '../src/sage/config';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { DEFAULT_RUN } from '../src/sage/settings';
import { COMPACT_TEMPLATES } from '../src/sage/templates';
import { detachedRunModel } from '../src/sage/runModel';
import { ModelSession } from '../src/train/session';

const name = (process.argv[2] ?? 'sage') as MethodName;
const steps = Number(process.argv[3] ?? 3);
if (!(name in METHODS) || !(steps > 0)) {
  console.error(`usage: loop-steps.ts [${Object.keys(METHODS).join('|')}] [steps > 0]`);
  process.exit(2);
}
const rt = await Runtime.create(nodePlatform());
const seeds = (await readProblemFile('data/seeds/curriculum-500.jsonl')).problems;
const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(readCheckpointFolder('data/models/tiny-curriculum')), name: 'tiny-curriculum' });
session.resetOptimizer();
const model = detachedRunModel(session, DEFAULT_RUN.warmupLr);
const method = METHODS[name];
const loop = detachedLoop(model, seeds, { ...DEFAULT_LOOP, method, templates: COMPACT_TEMPLATES });
for (let i = 0; i < steps; i++) {
  const { metrics: m } = await loop.runStep();
  console.log(JSON.stringify({ step: m.step, seconds: m.seconds.total, tokens: m.tokens, bank: m.bank, rewards: m.rewards, solverAccuracy: m.solverAccuracy, loss: m.loss?.loss ?? null, gradNorm: m.loss?.gradNorm ?? null }));
}
await rt.cacheFlush();
process.exit(0);
