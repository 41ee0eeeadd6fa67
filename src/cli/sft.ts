/**
 * Headless supervised fine-tuning on Dawn:
 *   npm run sft -- --data seeds.jsonl [--preset tiny | --from <checkpoint dir>] [--steps 200] ...
 * With --from, the checkpoint's AdamW moments and step are resumed (unless
 * --reset-optimizer) and --steps more steps follow on the same schedule; the data order
 * starts afresh from --seed. `--help` lists every option.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SHIPPED_SPLITS } from '../data/curriculum';
import { describeCounts } from '../data/import';
import { fileChunks, readProblemFile } from '../data/nodeFile';
import { parseFieldMapping, type MathProblem } from '../data/problem';
import { problemToPair, readSftPairs, type SftPairsReport } from '../data/sftPairs';
import { Runtime } from '../gpu/runtime';
import { PRESETS, type PresetName } from '../model/config';
import { memoryEstimate, type BaseDtype } from '../model/memory';
import { nodePlatform } from '../platform/node';
import { accuracyByLevel, firstPerLevel, type LevelAccuracy } from '../train/evaluate';
import { ModelSession, type ModelSource } from '../train/session';
import { runSteps, stepLine } from '../train/trainLoop';
import { DEFAULT_SFT, type SftSettings } from '../train/sftSettings';
import { isMain, runCli, UsageError, type OptionValues } from './options';
import { applyLora, describeTraining, LORA_OPTIONS } from './loraOptions';
import { folderSink, importCheckpointFolder, logShards } from './runFiles';

export const sftCli = {
  name: 'sft',
  summary: 'Supervised fine-tuning on prompt → response pairs from a JSONL file, on the GPU through Dawn.',
  options: {
    data: {
      type: 'string',
      arg: 'FILE',
      exists: 'file',
      default: SHIPPED_SPLITS.seeds.file,
      help: 'seed JSONL (question/answer, problem/solution, prompt/completion…)',
    },
    fields: { type: 'string', arg: 'ROLE=FIELD,…', help: 'field mapping instead of detection, e.g. question=q,answer=a (roles: question, answer, solution, context, id)' },
    preset: { type: 'string', choices: Object.keys(PRESETS), default: 'tiny', help: 'model preset trained from scratch' },
    from: { type: 'string', arg: 'DIR', exists: 'dir', help: 'continue from a checkpoint folder (Hugging Face layout) instead of a preset' },
    steps: { type: 'int', min: 1, default: DEFAULT_SFT.steps, help: 'optimizer steps' },
    batch: { type: 'int', min: 1, default: DEFAULT_SFT.batchSize, help: 'sequences per micro-batch' },
    seq: { type: 'int', min: 2, default: DEFAULT_SFT.seqLen, help: 'tokens per sequence' },
    accum: { type: 'int', min: 1, default: DEFAULT_SFT.accumulation, help: 'micro-batches per optimizer step' },
    lr: { type: 'number', min: 0, minExclusive: true, default: DEFAULT_SFT.lr, help: 'peak learning rate' },
    warmup: { type: 'int', min: 0, default: DEFAULT_SFT.warmupSteps, help: 'linear warm-up steps before the cosine decay' },
    seed: { type: 'int', min: 0, default: DEFAULT_SFT.seed, help: 'seed of the initial weights and the data order' },
    packing: { type: 'flag', help: 'pack whole examples several to a row, each attending only itself (padding-free), instead of padding each' },
    'reset-optimizer': { type: 'flag', help: 'with --from: start AdamW afresh' },
    out: { type: 'string', arg: 'DIR', help: 'write the checkpoint here when done' },
    dtype: { type: 'string', choices: ['f32', 'bf16', 'f16'], default: 'f32', help: 'with --out: the weights\' dtype (the optimizer state stays f32)' },
    'max-shard-mb': { type: 'int', min: 1, default: 5000, help: 'with --out: above this many MB of weights, shards with model.safetensors.index.json' },
    'log-every': { type: 'int', min: 1, default: 10, help: 'print a line every N steps' },
    eval: { type: 'string', arg: 'FILE', exists: 'file', help: 'math problems to answer greedily (exact match, accuracy per level), e.g. a validation split' },
    'eval-every': { type: 'int', min: 1, default: 100, help: 'with --eval: evaluate every N steps (and after the last)' },
    'eval-per-level': { type: 'int', min: 1, default: 50, help: 'with --eval: problems per level (the first in the file)' },
    'eval-out': { type: 'string', arg: 'FILE', help: 'with --eval: append one JSON line per evaluation' },
    ...LORA_OPTIONS,
  },
  notes: [
    'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader',
    'example: npm run sft -- --data data/seeds/gsm8k-148.jsonl --steps 200 --out ckpt/',
    'LoRA: the checkpoint holds the merged model (loads anywhere) and the adapter alone in adapter/ (PEFT layout)',
  ],
} as const;

async function main(o: OptionValues<typeof sftCli.options>): Promise<void> {
  if (o['reset-optimizer'] && !o.from) throw new UsageError('--reset-optimizer needs --from (a preset starts afresh anyway)');
  const { pairs, errors, refused } = await readPairs(o.data, o.fields);
  if (refused) throw new Error(`${o.data}: ${refused}`);
  for (const e of errors.slice(0, 20)) console.warn(`${o.data}:${e.line}: skipped: ${e.reason}`);
  if (errors.length > 20) console.warn(`... and ${errors.length - 20} more skipped lines`);
  if (!pairs.length) throw new Error(`no usable examples in ${o.data}`);

  const evalSet = o.eval ? await readEvalSet(o.eval, o['eval-per-level']) : null;

  const rt = await Runtime.create(nodePlatform());
  let source: ModelSource;
  if (o.from) {
    source = { kind: 'checkpoint', checkpoint: importCheckpointFolder(o.from), name: o.from, onProgress: logShards };
  } else {
    source = { kind: 'preset', preset: o.preset as PresetName, seed: o.seed };
  }
  const session = ModelSession.create(rt, { ...source, baseDtype: o['base-dtype'] as BaseDtype });
  applyLora(session, o, o.seed);
  const settings: SftSettings = {
    batchSize: o.batch,
    seqLen: o.seq,
    accumulation: o.accum,
    steps: o.steps,
    lr: o.lr,
    warmupSteps: o.warmup,
    seed: o.seed,
    packing: o.packing,
    resetOptimizer: o['reset-optimizer'],
  };
  const est = memoryEstimate(session.config, settings.batchSize, settings.seqLen, { lora: session.lora, baseDtype: session.baseDtype });
  console.log(
    `adapter ${rt.ctx.adapter.key} · model ${(session.parameters / 1e6).toFixed(2)}M params · ${describeTraining(session, est.trainable)} · ` +
      `${(est.total / 2 ** 20).toFixed(0)} MiB at ${settings.batchSize}×${settings.seqLen} · ${pairs.length} examples`,
  );
  const trainer = await session.startSft(pairs, settings);
  if (trainer.optimizer.step > 0) console.log(`resuming AdamW at step ${trainer.optimizer.step}`);
  await trainer.prepare();
  const every = o['log-every'];
  let trainingMs = 0;
  const evaluate = async (step: number) => {
    if (!evalSet) return;
    const t0 = performance.now();
    const levels = await accuracyByLevel(session, evalSet, 8);
    console.log(`eval step ${step} (${(trainingMs / 1000).toFixed(0)} s of training): ${levels.map(describeLevel).join(' · ')} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    if (o['eval-out']) appendFileSync(o['eval-out'], JSON.stringify({ step, trainingSeconds: Math.round(trainingMs / 1000), levels }) + '\n');
  };
  await runSteps(trainer, {
    steps: settings.steps,
    onStep(p) {
      trainingMs += p.ms;
      if (!p.finite) console.warn(`step ${p.step}: non-finite gradient, update skipped`);
      if (p.step % every === 0 || p.first || p.last) console.log(stepLine(p));
      if (p.step % o['eval-every'] === 0 || p.last) return evaluate(p.step);
    },
  });
  if (o.out) {
    // Written a weight at a time: the model is never whole in host memory.
    const sink = folderSink(o.out);
    await session.writeCheckpoint(
      sink,
      { kind: 'sft', data: o.data, seed: settings.seed },
      { dtype: o.dtype.toUpperCase() as 'F32' | 'BF16' | 'F16', maxShardBytes: o['max-shard-mb'] * 1e6 },
    );
    console.log(`checkpoint written to ${o.out} (${sink.written.join(', ')})`);
  }
  session.destroy();
  rt.destroy();
}

/** Pairs from the file: detected per record, or built from the mapped problems. */
async function readPairs(file: string, fields: string | undefined): Promise<SftPairsReport> {
  if (!fields) return readSftPairs(fileChunks(file));
  const mapping = parseFieldMapping(fields);
  if (typeof mapping === 'string') throw new UsageError(`--fields: ${mapping}`);
  const report = await readProblemFile(file, mapping);
  if (report.refused) return { pairs: [], errors: [], refused: report.refused };
  return { pairs: report.problems.map(problemToPair), errors: report.errors };
}

async function readEvalSet(file: string, perLevel: number): Promise<MathProblem[]> {
  const report = await readProblemFile(file);
  if (report.refused) throw new Error(`${file}: ${report.refused}`);
  const math = report.problems.filter((p): p is MathProblem => p.kind === 'math');
  if (!math.length) throw new Error(`${file}: no math problems to evaluate on`);
  const chosen = firstPerLevel(math, perLevel);
  console.log(`evaluating on ${chosen.length} problems of ${file} (${describeCounts(report.counts)})`);
  return chosen;
}

function describeLevel(a: LevelAccuracy): string {
  return `L${a.level} ${a.correct}/${a.total} (${((100 * a.correct) / a.total).toFixed(0)}%)`;
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(sftCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
