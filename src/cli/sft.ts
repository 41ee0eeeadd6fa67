/**
 * Headless supervised fine-tuning on Dawn:
 *   npm run sft -- --data seeds.jsonl [--preset tiny | --from <checkpoint dir>] [--steps 200]
 *                  [--batch 8] [--seq 128] [--accum 1] [--lr 1e-3] [--warmup 20] [--seed 0]
 *                  [--packing] [--reset-optimizer] [--out <dir>]
 * With --from, the checkpoint's AdamW moments and step are resumed (unless
 * --reset-optimizer) and --steps more steps follow on the same schedule; the data order
 * starts afresh from --seed.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sftPairsFromJsonl } from '../data/sftPairs';
import { Runtime } from '../gpu/runtime';
import { exportCheckpoint, importCheckpoint, type OptimizerState } from '../model/checkpoint';
import { PRESETS, paramCount, type PresetName } from '../model/config';
import { memoryEstimate } from '../model/memory';
import { ByteTokenizer, HFTokenizer, type Tokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import { nodePlatform } from '../platform/node';
import { SftTrainer } from '../train/sft';

const { values: o } = parseArgs({
  options: {
    data: { type: 'string' },
    preset: { type: 'string', default: 'tiny' },
    from: { type: 'string' },
    steps: { type: 'string', default: '200' },
    batch: { type: 'string', default: '8' },
    seq: { type: 'string', default: '128' },
    accum: { type: 'string', default: '1' },
    lr: { type: 'string', default: '1e-3' },
    warmup: { type: 'string', default: '20' },
    seed: { type: 'string', default: '0' },
    packing: { type: 'boolean', default: false },
    'reset-optimizer': { type: 'boolean', default: false },
    out: { type: 'string' },
    'log-every': { type: 'string', default: '10' },
  },
});

function fail(message: string): never {
  console.error(`sft: ${message}`);
  process.exit(1);
}

if (!o.data) fail('--data <file.jsonl> is required');
const { pairs, errors } = sftPairsFromJsonl(readFileSync(o.data, 'utf8'));
for (const e of errors.slice(0, 20)) console.warn(`${o.data}:${e.line}: skipped: ${e.reason}`);
if (errors.length > 20) console.warn(`... and ${errors.length - 20} more skipped lines`);
if (!pairs.length) fail(`no usable examples in ${o.data}`);

const rt = await Runtime.create(nodePlatform());
let model: Transformer;
let tokenizer: Tokenizer;
let resume: OptimizerState | undefined;
if (o.from) {
  const files = new Map(readdirSync(o.from).map((f) => [f, new Uint8Array(readFileSync(join(o.from!, f)))]));
  const ckpt = importCheckpoint(files);
  model = Transformer.fromFlat(rt, ckpt.config, ckpt.flatParams);
  tokenizer = ckpt.tokenizerJson ? HFTokenizer.fromJson(ckpt.tokenizerJson, ckpt.tokenizerConfigJson) : new ByteTokenizer();
  if (!o['reset-optimizer']) resume = ckpt.optimizer;
} else {
  if (!(o.preset in PRESETS)) fail(`unknown preset "${o.preset}" (${Object.keys(PRESETS).join(', ')})`);
  model = Transformer.init(rt, PRESETS[o.preset as PresetName], Number(o.seed));
  tokenizer = new ByteTokenizer();
}
const B = Number(o.batch);
const T = Number(o.seq);
const steps = Number(o.steps);
const startStep = resume?.step ?? 0;
const est = memoryEstimate(model.config, B, T);
console.log(
  `adapter ${rt.ctx.adapter.key} · model ${(paramCount(model.config) / 1e6).toFixed(2)}M params · ` +
    `${(est.total / 2 ** 20).toFixed(0)} MiB at ${B}×${T} · ${pairs.length} examples`,
);
const trainer = new SftTrainer(model, tokenizer, pairs, {
  batchSize: B,
  seqLen: T,
  accumulation: Number(o.accum),
  schedule: { lr: Number(o.lr), warmupSteps: Number(o.warmup), totalSteps: startStep + steps, kind: 'cosine' },
  packing: o.packing,
  seed: Number(o.seed),
});
if (resume) {
  trainer.optimizer.load(resume.m, resume.v, resume.step);
  console.log(`resuming AdamW at step ${resume.step}`);
}
const every = Number(o['log-every']);
let tokens = 0;
let ms = 0;
for (let i = 0; i < steps; i++) {
  const r = await trainer.step();
  // The first step compiles pipelines and autotunes matmuls: it would hide the rate.
  if (i > 0) {
    tokens += r.tokens;
    ms += r.ms;
  }
  if (!r.finite) console.warn(`step ${r.step}: non-finite gradient, update skipped`);
  if ((i + 1) % every === 0 || i === 0 || i === steps - 1) {
    console.log(
      `step ${String(r.step).padStart(5)}  loss ${r.loss.toFixed(4)}  grad-norm ${r.gradNorm.toFixed(3)}  ` +
        `lr ${r.lr.toExponential(2)}  ${ms > 0 ? `${(tokens / (ms / 1000)).toFixed(0)} tok/s` : `first step ${(r.ms / 1000).toFixed(1)} s (compiling, tuning)`}`,
    );
  }
}
if (o.out) {
  mkdirSync(o.out, { recursive: true });
  const files = exportCheckpoint(model.config, await model.readParams(), tokenizer.files(), {
    optimizer: {
      m: await rt.read(trainer.optimizer.m),
      v: await rt.read(trainer.optimizer.v),
      step: trainer.optimizer.step,
    },
    runState: { kind: 'sft', steps: trainer.optimizer.step, data: o.data, seed: Number(o.seed) },
  });
  for (const [name, bytes] of files) writeFileSync(join(o.out, name), bytes);
  console.log(`checkpoint written to ${o.out} (${[...files.keys()].join(', ')})`);
}
trainer.destroy();
model.destroy();
rt.destroy();
