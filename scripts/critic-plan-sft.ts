// Can a model learn the plan Critic's comparison from plan pairs alone? Fine-tunes a checkpoint
// on the warm-up's Critic plan pairs only (a problem's own plan 9, a wrong plan 3 or 2; fresh
// wrong plans in each of 8 renderings of the seeds) and prints the Critic's AUC on the run's
// plan probe (the validation's 100 held-out problems, greedy, as `npm run evolve` measures it)
// every EVERY steps, with the greedy scores' counts.
// Usage: node scripts/node-gpu.mjs scripts/critic-plan-sft.ts [MODEL_DIR] [STEPS] [EVERY] [LR]
import { readCheckpointFolder } from '../src/cli/runFiles';
import { readProblemFile } from '../src/data/nodeFile';
import { SHIPPED_SPLITS } from '../src/data/curriculum';
import { Runtime } from '../src/gpu/runtime';
import { importCheckpoint } from '../src/model/checkpoint';
import { nodePlatform } from '../src/platform/node';
import { auc, criticProbe } from '../src/sage/criticData';
import { criticScore, parseOutput } from '../src/sage/parse';
import { CRITIC_PROBE_PROBLEMS, CRITIC_PROBE_SEED, stratified } from '../src/sage/run';
import { COMPACT_TEMPLATES as t, OUTPUTS, render, stopStrings } from '../src/sage/templates';
import { warmupPairs } from '../src/sage/warmup';
import { warmupSft } from '../src/train/runModel';
import { ModelSession } from '../src/train/session';
import { rng } from '../src/util/random';

const [dir = 'data/models/tiny-curriculum', steps = '300', every = '50', lr = '2e-3'] = process.argv.slice(2);
const seeds = (await readProblemFile(SHIPPED_SPLITS.seeds.file)).problems;
const validation = (await readProblemFile(SHIPPED_SPLITS.validation.file)).problems;
const probe = criticProbe(stratified(validation, CRITIC_PROBE_PROBLEMS), rng(CRITIC_PROBE_SEED));
const session = ModelSession.create(await Runtime.create(nodePlatform()), { kind: 'checkpoint', checkpoint: importCheckpoint(readCheckpointFolder(dir)), name: dir });
const random = rng(7);
const pairs = Array.from({ length: 8 }, () => warmupPairs(seeds, { templates: t, references: 3, maxSolution: 200, solverShare: 0, planVariants: 0 }, random))
  .flat()
  .filter((p) => p.prompt.startsWith(t.criticPlan.slice(0, t.criticPlan.indexOf('{{'))));
console.log(`${pairs.length} Critic plan pairs from ${seeds.length} seeds; probe: ${probe.plans.length / 2} held-out problems`);

async function measure(step: number): Promise<void> {
  const prompts = probe.plans.map((x) => session.tokenizer.encodePrompt(render(t.criticPlan, { problem: x.problem, plan: x.plan })));
  const { rows } = await session.generate(prompts, { maxNewTokens: 24, temperature: 0, topK: 0, topP: 1, seed: 0, stop: stopStrings('criticPlan') });
  const scores = rows.map((r) => criticScore(parseOutput(r.text, OUTPUTS.criticPlan).fields.score));
  const side = (matching: boolean) => scores.filter((_, i) => probe.plans[i]!.matching === matching);
  const counts = (xs: (number | null)[]) => JSON.stringify(Object.fromEntries([...new Set(xs)].map((x) => [x === null ? 'unparsable' : Math.round(x * 9 + 1), xs.filter((y) => y === x).length])));
  // An unparsable score counts 0.5, as the loop's consumers count it.
  const value = (xs: (number | null)[]) => xs.map((x) => x ?? 0.5);
  console.log(`step ${step}: plan AUC ${auc(value(side(true)), value(side(false)))!.toFixed(3)} · own plans ${counts(side(true))} · wrong plans ${counts(side(false))}`);
}

await measure(0);
const trainer = await session.startSft(pairs, { ...warmupSft(session, 0), steps: Number(steps), lr: Number(lr), resetOptimizer: true });
for (let i = 1; i <= Number(steps); i++) {
  const { loss } = await trainer.step();
  if (i % 10 === 0) console.log(`sft ${i} loss ${loss.toFixed(4)}`);
  if (i % Number(every) === 0) await measure(i);
}
process.exit(0);
