// What a checkpoint's Challenger proposes before any RL: N proposals sampled from prompts drawn
// as the loop's first step draws them (reference seeds, the loop's temperature, top-k, top-p and
// token limit for the checkpoint's prompts), read as the environment reads them: parse rate,
// the curriculum levels of the problems it writes, the share with a right answer, the share
// whose expression no seed holds, and a few examples.
// Usage: node scripts/node-gpu.mjs scripts/challenger-probe.ts --model DIR [--proposals 200] [--seeds FILE] [--out FILE]
import { writeFileSync } from 'node:fs';
import { isMain, runCli, type OptionValues } from '../src/cli/options';
import { checkpointRecord, checkpointTemplates, logShards, readCheckpointFolder, SHIPPED_MODEL } from '../src/cli/runFiles';
import { readSplit } from '../src/cli/runInputs';
import { SHIPPED_SPLITS } from '../src/data/curriculum';
import { Runtime } from '../src/gpu/runtime';
import { importCheckpoint, PROMPT_SETS } from '../src/model/checkpoint';
import { nodePlatform } from '../src/platform/node';
import { expressionKey, probePrompts, probeTable, readProposal, tallyProposals } from '../src/research/challengerProbe';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { modelDefaults } from '../src/sage/settings';
import { stopStrings, TEMPLATE_SETS } from '../src/sage/templates';
import { sessionGenerate } from '../src/sage/runModel';
import { ModelSession } from '../src/train/session';
import { rng } from '../src/util/random';

export const probeCli = {
  name: 'challenger-probe',
  summary: "What a checkpoint's Challenger proposes before any RL: parse rate, levels, right answers, novel expressions, examples.",
  options: {
    model: { type: 'string', arg: 'DIR', exists: 'dir', default: SHIPPED_MODEL, help: 'the checkpoint folder (Hugging Face layout; a run\'s warmup/, best/ or last/)' },
    seeds: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.seeds.file, help: 'the seed problems the references are drawn from (the bank at the loop\'s first step)' },
    proposals: { type: 'int', min: 1, default: 200, help: 'proposals to sample' },
    references: { type: 'int', min: 1, default: DEFAULT_LOOP.references, help: 'reference problems in each prompt (the loop\'s K)' },
    templates: { type: 'string', choices: PROMPT_SETS, help: 'role prompts (default: those the checkpoint records)' },
    seed: { type: 'int', min: 0, default: 0, help: 'seed of the references drawn and of the sampling' },
    examples: { type: 'int', min: 0, default: 8, help: 'proposals printed whole' },
    out: { type: 'string', arg: 'FILE', help: 'write every proposal with its prompt and reading (JSONL)' },
  },
  notes: ['env SAGE_GPU=hardware  use a real GPU instead of SwiftShader'],
} as const;

async function main(o: OptionValues<typeof probeCli.options>): Promise<void> {
  const seeds = await readSplit(o.seeds, 'seeds');
  const templates = checkpointTemplates(checkpointRecord(o.model), o.model, o.templates);
  const t = TEMPLATE_SETS[templates];
  const random = rng(o.seed);
  const prompts = probePrompts(seeds, o.proposals, { templates: t, references: o.references }, random);
  const maxNewTokens = modelDefaults(templates, false).maxNewTokens.challenger;
  const rt = await Runtime.create(nodePlatform());
  const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpoint(readCheckpointFolder(o.model)), name: o.model, onProgress: logShards });
  const l = DEFAULT_LOOP;
  console.log(`model ${o.model} · ${templates} prompts · ${o.proposals} proposals, ${o.references} references each · temperature ${l.temperature}, top-k ${l.topK}, top-p ${l.topP}, at most ${maxNewTokens} tokens`);
  const started = Date.now();
  const outs = await sessionGenerate(session)({ prompts, maxNewTokens, temperature: l.temperature, topK: l.topK, topP: l.topP, seed: o.seed, stop: stopStrings('challenger') });
  session.destroy();
  rt.destroy();
  const known = new Set(seeds.flatMap((p) => (p.kind === 'math' && p.expression ? [expressionKey(p.expression)] : [])));
  const readings = outs.map((c) => readProposal(c.text, known));
  console.log(`\nsampled in ${((Date.now() - started) / 1000).toFixed(0)} s\n${probeTable(tallyProposals(readings))}\n`);
  for (const r of readings.slice(0, o.examples)) {
    const verdict = r.value !== null ? `${r.level ? `L${r.level}` : 'no curriculum style'}: ${r.expression} = ${r.value}, claimed ${r.claimed}: ${r.right ? 'right' : 'wrong'}${r.novel ? ', no seed\'s' : ', a seed\'s expression'}` : r.error ?? (r.parsed ? 'no expression read' : 'unparsable');
    console.log(`${JSON.stringify(r.text)}  → ${verdict}`);
  }
  if (o.out) {
    writeFileSync(o.out, readings.map((r, i) => JSON.stringify({ prompt: prompts[i], ...r }) + '\n').join(''));
    console.log(`\nevery proposal with its prompt and reading in ${o.out}`);
  }
}

if (isMain(import.meta.url)) await runCli(probeCli, main);
