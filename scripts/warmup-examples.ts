// The warm-up's examples as `npm run evolve`'s warm-up builds them (src/sage/run.ts
// warmupExamples: every role's pairs on the seeds, the corpus's problems for the Solver, corpus
// documents rehearsed), tokenised as the engine's SFT trainer tokenises them (byte-level,
// encodeExample at the warm-up's row length), one JSON line each: {"ids": [...], "mask": [...]},
// mask 1 where a token is trained on. For a reference trainer on the CPU
// (scripts/fixtures/sft_base.py), where the engine on SwiftShader takes hours. The Challenger's
// `own` warm-up takes the model's own writing from a file (scripts/own-problems.ts).
// Usage: npx tsx scripts/warmup-examples.ts --out FILE [--warmup-corpus-problems 6000 ...]
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { SHIPPED_SPLITS } from '../src/data/curriculum';
import { readProblemFile } from '../src/data/nodeFile';
import { ByteTokenizer } from '../src/model/tokenizer';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { warmupExamples, type WarmupExampleSettings } from '../src/sage/run';
import { parseJsonl } from '../src/sage/runRecords';
import { DEFAULT_RUN, RUN_SPECS, warmupRecipe } from '../src/sage/settings';
import { COMPACT_TEMPLATES } from '../src/sage/templates';
import { CHALLENGER_WARMUP_NAMES, SOLVER_TARGET_NAMES, type ChallengerWarmup, type SolverTarget } from '../src/sage/warmup';
import { encodeExample } from '../src/train/sft';
import { isMain, runCli, UsageError, type OptionValues } from '../src/cli/options';

/** The warm-up's row length (src/train/runModel.ts warmupSft): an example longer is cut as the engine cuts it. */
const WARMUP_SEQ = 128;

export const warmupExamplesCli = {
  name: 'warmup-examples',
  summary: "Writes the warm-up's examples, tokenised as the engine trains on them, for a reference trainer.",
  options: {
    out: { type: 'string', arg: 'FILE', required: true, help: 'JSONL of {ids, mask}, one example (or a long document\'s window) a line' },
    seeds: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.seeds.file, help: 'the seeds whose pairs teach every role' },
    validation: {
      type: 'string', arg: 'FILE', exists: 'file', multiple: true,
      help: `held-out problem files: no corpus problem or document states one of their expressions, whole or as a part (default ${SHIPPED_SPLITS.validation.file})`,
    },
    seed: { type: 'int', min: 0, default: 0, help: 'seed of the pairs, the corpus problems and the rehearsal, as a run\'s --seed' },
    'warmup-solver-share': { type: 'number', min: 0, max: 1, default: DEFAULT_RUN.warmupSolverShare, help: RUN_SPECS.warmupSolverShare.help },
    'warmup-rehearsal': { type: 'number', min: 0, max: 0.9, default: DEFAULT_RUN.warmupRehearsal, help: RUN_SPECS.warmupRehearsal.help },
    'warmup-corpus-problems': { type: 'int', min: 0, default: DEFAULT_RUN.warmupCorpusProblems, help: RUN_SPECS.warmupCorpusProblems.help },
    'warmup-plan-variants': { type: 'int', min: 0, default: DEFAULT_RUN.warmupPlanVariants, help: RUN_SPECS.warmupPlanVariants.help },
    'warmup-answer-pairs': { type: 'int', min: 0, default: DEFAULT_RUN.warmupAnswerPairs, help: RUN_SPECS.warmupAnswerPairs.help },
    'warmup-solver-target': { type: 'string', choices: SOLVER_TARGET_NAMES, default: warmupRecipe(false).warmupSolverTarget, help: 'what the Solver\'s targets work before the answer' },
    'challenger-warmup': { type: 'string', choices: CHALLENGER_WARMUP_NAMES, default: 'none', help: 'how the Challenger is taught (own: with --own-problems)' },
    'own-problems': { type: 'string', arg: 'FILE', exists: 'file', help: 'the problems the base wrote, JSONL of {question, answer} (scripts/own-problems.ts), for --challenger-warmup own' },
  },
} as const;

async function main(o: OptionValues<typeof warmupExamplesCli.options>): Promise<void> {
  if (!o.out) throw new UsageError('--out is required');
  const read = async (file: string) => (await readProblemFile(file)).problems;
  const seeds = await read(o.seeds);
  const heldOutFiles = o.validation.length ? o.validation : [SHIPPED_SPLITS.validation.file];
  const heldOut = (await Promise.all(heldOutFiles.map(read))).flat();
  const settings: WarmupExampleSettings = {
    templates: COMPACT_TEMPLATES,
    references: DEFAULT_LOOP.references,
    seed: o.seed,
    warmupSolverShare: o['warmup-solver-share'],
    warmupRehearsal: o['warmup-rehearsal'],
    warmupCorpusProblems: o['warmup-corpus-problems'],
    warmupPlanVariants: o['warmup-plan-variants'],
    warmupAnswerPairs: o['warmup-answer-pairs'],
    warmupSolverTarget: o['warmup-solver-target'] as SolverTarget,
    challengerWarmup: o['challenger-warmup'] as ChallengerWarmup,
  };
  const own = o['own-problems'];
  if ((settings.challengerWarmup === 'own') !== (own !== undefined)) throw new UsageError('--challenger-warmup own and --own-problems FILE go together');
  const ownProblems = own === undefined ? undefined : parseJsonl<{ question: string; answer: string }>(readFileSync(own, 'utf8'), own);
  const { pairs, rehearsal } = warmupExamples(settings, seeds, heldOut, ownProblems);
  const tokenizer = new ByteTokenizer();
  const lines = [...pairs, ...rehearsal].flatMap((x) => encodeExample(tokenizer, x, WARMUP_SEQ)).map((s) => JSON.stringify({ ids: s.ids, mask: s.lossMask }) + '\n');
  const text = lines.join('');
  writeFileSync(o.out, text);
  const sha = createHash('sha256').update(text).digest('hex');
  console.log(`${pairs.length} role pairs (${o['warmup-corpus-problems']} corpus problems for the Solver among them) and ${rehearsal.length} corpus documents, ${lines.length} sequences, to ${o.out}; held out: ${heldOut.length} problems of ${heldOutFiles.join(', ')}; sha256 ${sha}`);
}

if (isMain(import.meta.url)) await runCli(warmupExamplesCli, main);
