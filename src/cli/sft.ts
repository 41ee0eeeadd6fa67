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
import { importCheckpoint } from '../model/checkpoint';
import { PRESETS, type PresetName } from '../model/config';
import { memoryEstimate } from '../model/memory';
import { nodePlatform } from '../platform/node';
import { ModelSession, RateMeter, type ModelSource } from '../train/session';
import { DEFAULT_SFT, type SftSettings } from '../train/sftSettings';

const { values: o } = parseArgs({
  options: {
    data: { type: 'string' },
    preset: { type: 'string', default: 'tiny' },
    from: { type: 'string' },
    steps: { type: 'string', default: String(DEFAULT_SFT.steps) },
    batch: { type: 'string', default: String(DEFAULT_SFT.batchSize) },
    seq: { type: 'string', default: String(DEFAULT_SFT.seqLen) },
    accum: { type: 'string', default: String(DEFAULT_SFT.accumulation) },
    lr: { type: 'string', default: String(DEFAULT_SFT.lr) },
    warmup: { type: 'string', default: String(DEFAULT_SFT.warmupSteps) },
    seed: { type: 'string', default: String(DEFAULT_SFT.seed) },
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
let source: ModelSource;
if (o.from) {
  const files = new Map(readdirSync(o.from).map((f) => [f, new Uint8Array(readFileSync(join(o.from!, f)))]));
  source = { kind: 'checkpoint', checkpoint: importCheckpoint(files), name: o.from };
} else {
  if (!(o.preset in PRESETS)) fail(`unknown preset "${o.preset}" (${Object.keys(PRESETS).join(', ')})`);
  source = { kind: 'preset', preset: o.preset as PresetName, seed: Number(o.seed) };
}
const session = ModelSession.create(rt, source);
const settings: SftSettings = {
  batchSize: Number(o.batch),
  seqLen: Number(o.seq),
  accumulation: Number(o.accum),
  steps: Number(o.steps),
  lr: Number(o.lr),
  warmupSteps: Number(o.warmup),
  seed: Number(o.seed),
  packing: o.packing,
  resetOptimizer: o['reset-optimizer'],
};
const est = memoryEstimate(session.config, settings.batchSize, settings.seqLen);
console.log(
  `adapter ${rt.ctx.adapter.key} · model ${(session.parameters / 1e6).toFixed(2)}M params · ` +
    `${(est.total / 2 ** 20).toFixed(0)} MiB at ${settings.batchSize}×${settings.seqLen} · ${pairs.length} examples`,
);
const trainer = await session.startSft(pairs, settings);
if (trainer.optimizer.step > 0) console.log(`resuming AdamW at step ${trainer.optimizer.step}`);
const every = Number(o['log-every']);
const rate = new RateMeter();
for (let i = 0; i < settings.steps; i++) {
  const r = await trainer.step();
  rate.add(r);
  if (!r.finite) console.warn(`step ${r.step}: non-finite gradient, update skipped`);
  if ((i + 1) % every === 0 || i === 0 || i === settings.steps - 1) {
    console.log(
      `step ${String(r.step).padStart(5)}  loss ${r.loss.toFixed(4)}  grad-norm ${r.gradNorm.toFixed(3)}  ` +
        `lr ${r.lr.toExponential(2)}  ${rate.tokensPerS > 0 ? `${rate.tokensPerS.toFixed(0)} tok/s` : `first step ${(r.ms / 1000).toFixed(1)} s (compiling, tuning)`}`,
    );
  }
}
if (o.out) {
  mkdirSync(o.out, { recursive: true });
  const files = await session.exportFiles({ kind: 'sft', data: o.data, seed: settings.seed });
  for (const [name, bytes] of files) writeFileSync(join(o.out, name), bytes);
  console.log(`checkpoint written to ${o.out} (${[...files.keys()].join(', ')})`);
}
session.destroy();
rt.destroy();
