// Can a model learn the plan Critic's comparison from plan pairs alone? Fine-tunes a checkpoint
// on the warm-up's Critic plan pairs only (a problem's own plan 9, a wrong plan 3 or 2; fresh
// wrong plans in each of 8 renderings of the seeds) and prints the Critic's AUC on the run's
// plan probe (the validation's 100 held-out problems, greedy, as `npm run evolve` measures it)
// every EVERY steps, with the greedy scores' counts.
// With VARIANTS > 0, each seed also gives that many consistent variants per rendering (a number
// changed alike in problem and plan: matching; then changed in the plan alone: altered).
// ROWS is the rows of 128 tokens a step (8, the warm-up's: about 16 pairs; 16 gives the PyTorch
// reference's 32 pairs a step, scripts/fixtures/plan_critic_reference.py).
// With OUT, the fine-tuned checkpoint is written there (Hugging Face format), for a run's
// validation to measure what the plan pairs did to the other roles.
// Usage: node scripts/node-gpu.mjs scripts/critic-plan-sft.ts [MODEL_DIR] [STEPS] [EVERY] [LR] [VARIANTS] [ROWS] [OUT]
import { folderSink, readCheckpointFolder } from '../src/cli/runFiles';
import { readProblemFile } from '../src/data/nodeFile';
import { SHIPPED_SPLITS } from '../src/data/curriculum';
import { Runtime } from '../src/gpu/runtime';
import { importCheckpoint } from '../src/model/checkpoint';
import { nodePlatform } from '../src/platform/node';
import { DEFAULT_REWARDS } from '../src/sage/config';
import { auc } from '../src/sage/criticData';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { heldOutCriticProbe } from '../src/sage/run';
import { COMPACT_TEMPLATES } from '../src/sage/templates';
import { criticScores } from '../src/sage/validation';
import { warmupPairs } from '../src/sage/warmup';
import { DEFAULT_RUN } from '../src/sage/settings';
import { sessionRunModel, warmupSft } from '../src/sage/runModel';
import { DEFAULT_POLICY, ModelSession } from '../src/train/session';
import { rng } from '../src/util/random';

const [dir = 'data/models/tiny-curriculum', steps = '300', every = '50', lr = '2e-3', variants = '0', rows = '8', out] = process.argv.slice(2);
const templates = COMPACT_TEMPLATES;
const seeds = (await readProblemFile(SHIPPED_SPLITS.seeds.file)).problems;
const validation = (await readProblemFile(SHIPPED_SPLITS.validation.file)).problems;
// The probe a run validating on 400 or more problems measures.
const probe = heldOutCriticProbe(validation, validation.length);
const session = ModelSession.create(await Runtime.create(nodePlatform()), { kind: 'checkpoint', checkpoint: importCheckpoint(readCheckpointFolder(dir)), name: dir });
const model = sessionRunModel(session, {
  policy: DEFAULT_POLICY,
  warmup: warmupSft(session, 0, DEFAULT_RUN.warmupLr),
  checkpointSink: () => folderSink(out!),
});
const random = rng(7);
const pairs = Array.from({ length: 8 }, () => warmupPairs(seeds, { templates, challenger: 'seeds', solverTarget: 'answer', references: 3, maxSolution: 200, solverShare: 0, planVariants: Number(variants) }, random))
  .flat()
  .filter((p) => p.prompt.startsWith(templates.criticPlan.slice(0, templates.criticPlan.indexOf('{{'))));
console.log(`${pairs.length} Critic plan pairs from ${seeds.length} seeds; probe: ${probe.plans.length / 2} held-out problems`);

async function measure(step: number): Promise<void> {
  // Scored as a run's validation scores them (the compact Critic's token limit, an unparsable score 0.5).
  const scores = await criticScores(model, 'criticPlan', probe.plans.map(({ problem, plan }) => ({ problem, plan })), { templates, maxNewTokens: DEFAULT_LOOP.maxNewTokens, unparsableScore: DEFAULT_REWARDS.unparsableScore });
  const side = (matching: boolean) => scores.filter((_, i) => probe.plans[i]!.matching === matching);
  const counts = (xs: number[]) => JSON.stringify(Object.fromEntries([...new Set(xs)].map((x) => [+(x * 9 + 1).toFixed(1), xs.filter((y) => y === x).length])));
  console.log(`step ${step}: plan AUC ${auc(side(true), side(false))!.toFixed(3)} · own plans' scores ${counts(side(true))} · wrong plans' ${counts(side(false))} (5.5: unparsable)`);
}

await measure(0);
const trainer = await session.startSft(pairs, { ...warmupSft(session, 0, DEFAULT_RUN.warmupLr), batchSize: Number(rows), steps: Number(steps), lr: Number(lr), resetOptimizer: true });
for (let i = 1; i <= Number(steps); i++) {
  const { loss } = await trainer.step();
  if (i % 10 === 0) console.log(`sft ${i} loss ${loss.toFixed(4)}`);
  if (i % Number(every) === 0) await measure(i);
}
if (out) {
  await model.saveCheckpoint('plan-sft');
  console.log(`checkpoint written to ${out}`);
}
process.exit(0);
