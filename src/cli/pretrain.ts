/**
 * Language-model training on plain text on Dawn, the loss on every token:
 *   npm run pretrain -- --corpus corpus.txt --out ckpt/ [--preset tiny | --from DIR] [--holdout 0.01]
 *   npm run pretrain -- --resume ckpt/
 * The trainer and loop of `npm run sft` (a document is an example whose whole text is trained
 * on: SftDocument), packed by default. In --out:
 *   the checkpoint (Hugging Face layout, with AdamW's state and, in trainer_state.json's
 *   run_state, the run as recorded: corpus, settings, place in the data), written every
 *   --checkpoint-every steps and at the end, whole or not at all;
 *   log.jsonl, one line per logged step: step, loss, grad norm, lr, tokens so far, held-out loss.
 * --resume goes on exactly where the checkpoint was: the schedule, the optimizer and the data
 * order, so a run cut after step k and resumed matches the run never cut.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeCorpusFormat, DOCUMENT_SPLITS, holdOutDocuments, readCorpus, type DocumentSplit } from '../data/corpus';
import { fileChunks } from '../data/nodeFile';
import { Runtime } from '../gpu/runtime';
import { PRESETS, type PresetName } from '../model/config';
import { memoryEstimate } from '../model/memory';
import { nodePlatform } from '../platform/node';
import { ModelSession } from '../train/session';
import type { DataCursor, SftDocument } from '../train/sft';
import type { SftSettings } from '../train/sftSettings';
import { formatDuration, runSteps, stepLine } from '../train/trainLoop';
import { onInterrupt } from './interrupt';
import { isMain, runCli, UsageError, type CommandLine, type OptionValues } from './options';
import { folderSink, importCheckpointFolder, logShards } from './runFiles';

/** The step log beside the checkpoint. */
export const PRETRAIN_LOG = 'log.jsonl';
/** A checkpoint being written, then (renamed whole: the commit) one written, before its files move into the folder. */
const PARTIAL = '.checkpoint-partial';
const COMPLETE = '.checkpoint-complete';

export const pretrainCli = {
  name: 'pretrain',
  summary: 'Language-model training on plain text (the loss on every token), packed, on the GPU through Dawn; checkpoints that --resume continues exactly.',
  options: {
    corpus: { type: 'string', arg: 'FILE', exists: 'file', help: 'the documents: one a line (plain text, or JSONL with a "text" field, detected), or see --documents' },
    documents: { type: 'string', arg: 'HOW', choices: DOCUMENT_SPLITS, default: 'lines', help: 'how a text corpus is cut into documents: each line, or paragraphs between blank lines' },
    holdout: { type: 'number', arg: 'FRACTION', min: 0, minExclusive: true, max: 0.5, help: 'hold out this fraction of the distinct documents (drawn with --seed) for the held-out loss, never trained on' },
    'eval-corpus': { type: 'string', arg: 'FILE', exists: 'file', help: 'documents for the held-out loss instead (read as --corpus; corpus documents equal to one are left out of training)' },
    'eval-every': { type: 'int', min: 1, default: 100, help: 'the held-out loss every N steps, at step 0 and at the end' },
    preset: { type: 'string', choices: Object.keys(PRESETS), default: 'tiny', help: 'model preset trained from scratch' },
    from: { type: 'string', arg: 'DIR', exists: 'dir', help: 'continue this checkpoint\'s model (Hugging Face layout, e.g. trained elsewhere) on the corpus, with a fresh schedule and AdamW' },
    resume: { type: 'string', arg: 'DIR', exists: 'dir', help: 'continue a pretraining run from its checkpoint: its schedule, AdamW state and place in the data, its settings as recorded' },
    steps: { type: 'int', min: 1, default: 1000, help: 'optimizer steps of the whole schedule (warm-up, then cosine decay)' },
    'stop-at': { type: 'int', min: 1, help: 'end this invocation after this step, with a checkpoint (the schedule stays that of --steps): --resume continues' },
    batch: { type: 'int', min: 1, default: 8, help: 'rows per micro-batch' },
    seq: { type: 'int', min: 2, help: 'tokens per row (default the model\'s context, at most 256)' },
    accum: { type: 'int', min: 1, default: 1, help: 'micro-batches per optimizer step' },
    lr: { type: 'number', min: 0, minExclusive: true, default: 1e-3, help: 'peak learning rate' },
    warmup: { type: 'int', min: 0, default: 100, help: 'linear warm-up steps before the cosine decay' },
    seed: { type: 'int', min: 0, default: 0, help: 'seed of the initial weights, the data order and the held-out draw' },
    'no-packing': { type: 'flag', help: 'one document (or window of one) per row, padded, instead of packing several to a row' },
    out: { type: 'string', arg: 'DIR', help: `write the checkpoint and ${PRETRAIN_LOG} here` },
    'checkpoint-every': { type: 'int', min: 1, default: 200, help: 'with --out: a checkpoint every N steps (and at the end)' },
    'log-every': { type: 'int', min: 1, default: 10, help: `a progress line (and a line of ${PRETRAIN_LOG}) every N steps` },
  },
  notes: [
    'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader',
    'a document is BOS, its text and EOS, every token after BOS predicted; one longer than a row is cut into windows of a row',
    'Ctrl-C stops after the step in flight, with a checkpoint; a second Ctrl-C quits at once',
    'example: npm run pretrain -- --corpus corpus.txt --holdout 0.01 --steps 3000 --out ckpt/   then   npm run pretrain -- --resume ckpt/',
  ],
} as const;

type Options = OptionValues<typeof pretrainCli.options>;
type Given = CommandLine<typeof pretrainCli.options>['given'];

/** Where the held-out loss comes from. */
type HeldOutSource = { holdout: number } | { file: string; sha256: string } | null;

/** What a pretraining checkpoint records of its run (trainer_state.json's run_state): what --resume reads back. */
export interface PretrainRecord {
  kind: 'pretrain';
  corpus: { file: string; sha256: string; documents: DocumentSplit };
  heldOut: HeldOutSource;
  /** The model the run began from. */
  start: { preset: string } | { from: string };
  /** steps: the schedule's last step. */
  settings: Omit<SftSettings, 'resetOptimizer'>;
  every: { log: number; eval: number; checkpoint: number };
  /** Where the next micro-batch comes from, and the tokens trained on so far. */
  cursor: DataCursor;
  tokens: number;
}

/** A run about to start: the record less what training makes, the rows' length left to the model's context when not given. */
type Plan = Omit<PretrainRecord, 'kind' | 'cursor' | 'tokens' | 'settings'> & { settings: Omit<PretrainRecord['settings'], 'seqLen'> & { seqLen?: number } };

/** Options a resumed run takes from its record: giving one is refused. */
const RECORDED: (keyof Options)[] = ['documents', 'holdout', 'preset', 'from', 'batch', 'seq', 'accum', 'lr', 'warmup', 'seed', 'no-packing', 'out'];

async function main(o: Options, given: Given): Promise<void> {
  const record = o.resume ? readRecord(o.resume) : null;
  const plan = record ? resumedPlan(record, o, given) : freshPlan(o, given);
  const out = o.resume ?? o.out;
  if (!out && given.has('checkpoint-every')) throw new UsageError('--checkpoint-every needs --out');
  if (!out && o['stop-at'] !== undefined) throw new UsageError('--stop-at needs --out (where the run is kept to resume)');
  if (out && !record) {
    const held = [PRETRAIN_LOG, 'trainer_state.json'].find((f) => existsSync(join(out, f)));
    if (held) throw new UsageError(`--out ${out} already holds a run (${held}): give another folder, or --resume ${out} to continue it`);
  }

  const corpus = await readDocuments(plan.corpus.file, plan.corpus.documents, 'corpus');
  if (record && corpus.sha256 !== record.corpus.sha256) throw new UsageError(`${plan.corpus.file} is not the corpus the run began with (its content differs from the recorded one)`);
  const split = await heldOutSplit(corpus.documents, plan.heldOut, plan.settings.seed, plan.corpus.documents);
  if (record && record.heldOut && 'sha256' in record.heldOut && split.sha256 !== record.heldOut.sha256) {
    throw new UsageError(`${split.file} is not the eval corpus the run began with (its content differs from the recorded one)`);
  }

  const rt = await Runtime.create(nodePlatform());
  const checkpointDir = o.resume ?? ('from' in plan.start ? plan.start.from : null);
  const checkpoint = checkpointDir ? importCheckpointFolder(checkpointDir) : null;
  if (record && !checkpoint?.optimizer) throw new Error(`${o.resume} has no AdamW state (optimizer.safetensors) to resume: --from ${o.resume} continues its model afresh`);
  const session = checkpoint
    ? ModelSession.create(rt, { kind: 'checkpoint', checkpoint, name: checkpointDir!, onProgress: logShards })
    : ModelSession.create(rt, { kind: 'preset', preset: (plan.start as { preset: PresetName }).preset, seed: plan.settings.seed });
  const context = session.config.max_position_embeddings;
  const s: PretrainRecord['settings'] = { ...plan.settings, seqLen: plan.settings.seqLen ?? Math.min(256, context) };
  if (s.seqLen > context) throw new UsageError(`--seq ${s.seqLen} exceeds the model's context of ${context} tokens`);
  const start = record ? session.optimizerStep : 0;
  if (start >= s.steps) throw new UsageError(`the run is at step ${start} of its ${s.steps}: --steps more than ${start} goes on`);
  const stopAt = o['stop-at'] ?? s.steps;
  if (stopAt <= start || stopAt > s.steps) throw new UsageError(`--stop-at must lie after step ${start} and at most at --steps ${s.steps} (got ${stopAt})`);

  const tokensOf = (docs: readonly string[]) => docs.reduce((n, d) => n + session.tokenizer.encode(d).length + 2, 0);
  const trainTokens = tokensOf(split.train);
  const rowTokens = s.batchSize * s.seqLen * s.accumulation;
  const est = memoryEstimate(session.config, s.batchSize, s.seqLen, { lora: session.lora, baseDtype: session.baseDtype });
  console.log(
    `adapter ${rt.ctx.adapter.key} · model ${session.origin}, ${(session.parameters / 1e6).toFixed(2)}M params · ` +
      `${(est.total / 2 ** 20).toFixed(0)} MiB at ${s.batchSize}×${s.seqLen}${s.packing ? ' packed' : ''}, accumulation ${s.accumulation}`,
  );
  console.log(
    `${plan.corpus.file}: ${corpus.documents.length} documents (${describeCorpusFormat(corpus.format, plan.corpus.documents)}) · ` +
      `trained on ${split.train.length}, ${trainTokens} tokens · ${split.note} · ` +
      `${s.steps} steps of ≤ ${rowTokens} tokens ≈ ${((s.steps * rowTokens) / trainTokens).toFixed(1)} epochs, lr ${s.lr}, warm-up ${s.warmupSteps}`,
  );
  if (!out) console.log('no --out: the model is not saved');

  const trainer = await session.startSft(
    split.train.map((text): SftDocument => ({ text })),
    { ...s, steps: s.steps - start, resetOptimizer: !record },
    record?.cursor,
  );
  if (record) console.log(`resuming at step ${start} of ${s.steps} (epoch ${record.cursor.epoch}, batch ${record.cursor.batch}; ${record.tokens} tokens trained)`);
  const tuned = await trainer.prepare();
  if (tuned) console.log(`tuned ${tuned} matmul shape classes for this machine`);
  const heldBatches = split.heldOut.length ? trainer.batchesOf(split.heldOut.map((text) => ({ text }))) : null;

  let tokens = record?.tokens ?? 0;
  const every = plan.every;
  const recordNow = (): PretrainRecord => ({
    kind: 'pretrain', corpus: { ...plan.corpus, sha256: corpus.sha256 }, heldOut: plan.heldOut && 'file' in plan.heldOut ? { file: plan.heldOut.file, sha256: split.sha256! } : plan.heldOut,
    start: plan.start, settings: s, every, cursor: trainer.cursor, tokens,
  });
  let savedAt = start;
  const save = async () => {
    if (!out) return;
    await saveCheckpoint(out, session, recordNow());
    savedAt = session.optimizerStep;
  };
  const log = (line: Record<string, unknown>) => {
    if (!out) return;
    mkdirSync(out, { recursive: true });
    appendFileSync(join(out, PRETRAIN_LOG), JSON.stringify(line) + '\n');
  };
  const heldOutLoss = async (step: number) => {
    const t0 = performance.now();
    const loss = await trainer.meanLoss(heldBatches!);
    console.log(`held-out loss ${loss.toFixed(4)} at step ${step} (${split.heldOut.length} documents, ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    return loss;
  };
  if (record) rewindLog(out!, start);
  else if (heldBatches) log({ step: 0, loss: null, gradNorm: null, lr: null, tokens: 0, heldOutLoss: await heldOutLoss(0) });

  let stop = false;
  onInterrupt(() => {
    console.log('\nstopping after the step in flight, with a checkpoint (Ctrl-C again to quit now) ...');
    stop = true;
  });
  const t0 = performance.now();
  const done = await runSteps(trainer, {
    steps: stopAt - start,
    stopped: () => stop,
    async onStep(p) {
      tokens += p.tokens;
      if (!p.finite) console.warn(`step ${p.step}: non-finite gradient, update skipped`);
      const end = p.step === s.steps;
      const evaluate = heldBatches !== null && (p.step % every.eval === 0 || end);
      const logged = p.step % every.log === 0 || end || evaluate;
      if (logged || p.first || p.last) console.log(stepLine(p, s.steps));
      const held = evaluate ? await heldOutLoss(p.step) : null;
      if (logged) log({ step: p.step, loss: p.loss, gradNorm: p.gradNorm, lr: p.lr, tokens, heldOutLoss: held });
      if (p.step % every.checkpoint === 0 || end) await save();
    },
  });
  const step = session.optimizerStep;
  if (step > savedAt) await save();
  const took = `${done.steps} steps in ${formatDuration((performance.now() - t0) / 1000)}, ${done.tokensPerS.toFixed(0)} tok/s`;
  if (step < s.steps) console.log(`stopped at step ${step} of ${s.steps} (${took})${out ? `: npm run pretrain -- --resume ${out} continues it` : ''}`);
  else console.log(`done: step ${step} (${took})${out ? `, checkpoint and ${PRETRAIN_LOG} in ${out}` : ''}`);
  session.destroy();
  rt.destroy();
}

/** The run as the options start it. */
function freshPlan(o: Options, given: Given): Plan {
  if (!o.corpus) throw new UsageError('--corpus FILE is required (or --resume DIR)');
  if (o.from && given.has('preset')) throw new UsageError('--preset and --from are exclusive (a preset starts from scratch; --from continues a model)');
  if (o.holdout !== undefined && o['eval-corpus']) throw new UsageError('--holdout and --eval-corpus are exclusive (the held-out documents come from one or the other)');
  return {
    corpus: { file: o.corpus, sha256: '', documents: o.documents as DocumentSplit },
    heldOut: o.holdout !== undefined ? { holdout: o.holdout } : o['eval-corpus'] ? { file: o['eval-corpus'], sha256: '' } : null,
    start: o.from ? { from: o.from } : { preset: o.preset },
    settings: { batchSize: o.batch, seqLen: o.seq, accumulation: o.accum, steps: o.steps, lr: o.lr, warmupSteps: o.warmup, seed: o.seed, packing: !o['no-packing'] },
    every: { log: o['log-every'], eval: o['eval-every'], checkpoint: o['checkpoint-every'] },
  };
}

/** The run as recorded, with what the options may still change (the schedule's length, the intervals, where the files now are). */
function resumedPlan(r: PretrainRecord, o: Options, given: Given): Plan {
  for (const name of RECORDED) {
    if (given.has(name)) throw new UsageError(`--resume continues the run as it began (its settings in ${o.resume}/trainer_state.json): --${name} does not apply`);
  }
  if (given.has('eval-corpus') && !(r.heldOut && 'file' in r.heldOut)) throw new UsageError('--eval-corpus does not apply: the run began without an eval corpus');
  const replaced = (name: string, now: number, was: number) => {
    if (now !== was) console.log(`--${name} ${now} replaces the recorded ${was}${name === 'steps' ? ` (the cosine now ends at step ${now})` : ''}`);
    return now;
  };
  const every = {
    log: given.has('log-every') ? replaced('log-every', o['log-every'], r.every.log) : r.every.log,
    eval: given.has('eval-every') ? replaced('eval-every', o['eval-every'], r.every.eval) : r.every.eval,
    checkpoint: given.has('checkpoint-every') ? replaced('checkpoint-every', o['checkpoint-every'], r.every.checkpoint) : r.every.checkpoint,
  };
  const steps = given.has('steps') ? replaced('steps', o.steps, r.settings.steps) : r.settings.steps;
  return {
    // A file given again is the same one moved (checked by its content).
    corpus: { ...r.corpus, file: o.corpus ?? r.corpus.file },
    heldOut: r.heldOut && 'file' in r.heldOut ? { ...r.heldOut, file: o['eval-corpus'] ?? r.heldOut.file } : r.heldOut,
    start: r.start,
    settings: { ...r.settings, steps },
    every,
  };
}

/** The run record of a pretraining checkpoint folder, a staged checkpoint settled first. */
function readRecord(dir: string): PretrainRecord {
  settleCheckpoint(dir);
  const path = join(dir, 'trainer_state.json');
  if (!existsSync(path)) throw new UsageError(`${dir} has no checkpoint to resume from (no trainer_state.json)`);
  let state: { run_state?: Partial<PretrainRecord> };
  try {
    state = JSON.parse(readFileSync(path, 'utf8')) as typeof state;
  } catch (e) {
    throw new Error(`${path}: not valid JSON (${(e as Error).message})`);
  }
  const r = state.run_state;
  if (r?.kind !== 'pretrain') throw new UsageError(`${dir} is not a pretraining run's checkpoint (--from ${dir} continues its model with a fresh schedule)`);
  const missing = (['corpus', 'start', 'settings', 'every', 'cursor', 'tokens'] as const).filter((k) => r[k] === undefined);
  if (missing.length) throw new Error(`${path}: run_state lacks ${missing.join(', ')}`);
  return r as PretrainRecord;
}

/** A corpus file's documents and the SHA-256 of its bytes (what a resumed run checks). */
async function readDocuments(file: string, documents: DocumentSplit, what: string): Promise<{ documents: string[]; format: 'text' | 'jsonl'; sha256: string }> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  const r = await readCorpus(fileChunks(file), documents);
  if (r.refused) throw new Error(`${file}: ${r.refused}`);
  for (const e of r.errors.slice(0, 20)) console.warn(`${file}:${e.line}: skipped: ${e.reason}`);
  if (r.errors.length > 20) console.warn(`... and ${r.errors.length - 20} more skipped lines`);
  if (!r.documents.length) throw new Error(`no documents in ${file} (the ${what} is empty)`);
  return { documents: r.documents, format: r.format, sha256: hash.digest('hex') };
}

/** The documents trained on and those held out, with a note for the summary line. */
async function heldOutSplit(
  documents: string[],
  source: HeldOutSource,
  seed: number,
  split: DocumentSplit,
): Promise<{ train: string[]; heldOut: string[]; note: string; file?: string; sha256?: string }> {
  if (!source) return { train: documents, heldOut: [], note: 'no held-out loss (--holdout or --eval-corpus)' };
  if ('holdout' in source) {
    let parts: { train: string[]; heldOut: string[] };
    try {
      parts = holdOutDocuments(documents, source.holdout, seed);
    } catch (e) {
      throw new UsageError(`--holdout: ${(e as Error).message}`);
    }
    return { ...parts, note: `${parts.heldOut.length} held out (${source.holdout} of the distinct documents)` };
  }
  const evalSet = await readDocuments(source.file, split, 'eval corpus');
  const held = new Set(evalSet.documents);
  const train = documents.filter((d) => !held.has(d));
  if (!train.length) throw new UsageError(`every document of the corpus is also in ${source.file}: nothing left to train on`);
  const dropped = documents.length - train.length;
  const note = `${evalSet.documents.length} held out in ${source.file}${dropped ? `, ${dropped} corpus documents equal to one left out of training` : ''}`;
  return { train, heldOut: evalSet.documents, note, file: source.file, sha256: evalSet.sha256 };
}

/**
 * Writes the checkpoint into `dir` whole or not at all: its files go to a staging folder,
 * which is renamed as one (the commit) and then emptied into `dir`. A crash before the rename
 * leaves the previous checkpoint; after it, settleCheckpoint finishes the move.
 */
async function saveCheckpoint(dir: string, session: ModelSession, record: PretrainRecord): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const partial = join(dir, PARTIAL);
  rmSync(partial, { recursive: true, force: true });
  await session.writeCheckpoint(folderSink(partial), record as unknown as Record<string, unknown>);
  rmSync(join(dir, COMPLETE), { recursive: true, force: true });
  renameSync(partial, join(dir, COMPLETE));
  settleCheckpoint(dir);
}

/** Finishes a committed checkpoint's move into `dir`, and drops one a crash left half written. */
function settleCheckpoint(dir: string): void {
  rmSync(join(dir, PARTIAL), { recursive: true, force: true });
  const complete = join(dir, COMPLETE);
  if (!existsSync(complete)) return;
  for (const name of readdirSync(complete, { recursive: true, encoding: 'utf8' })) {
    if (!statSync(join(complete, name)).isFile()) continue;
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    renameSync(join(complete, name), join(dir, name));
  }
  rmSync(complete, { recursive: true, force: true });
}

/** The log as of the checkpoint: lines of steps after it (run again now) are dropped. */
function rewindLog(dir: string, step: number): void {
  const path = join(dir, PRETRAIN_LOG);
  if (!existsSync(path)) return;
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim());
  const kept = lines.filter((l) => (JSON.parse(l) as { step: number }).step <= step);
  if (kept.length < lines.length) writeFileSync(path, kept.map((l) => l + '\n').join(''));
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(pretrainCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
