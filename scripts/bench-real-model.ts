/**
 * The engine on a model of real size, in Node on Dawn: a random checkpoint with SmolLM2-135M's
 * exact configuration (scripts/fixtures/smollm2-135m.config.json), written as a Hub download
 * is (BF16, sharded), then
 *   - load: reading, checking and uploading it tensor by tensor, and the host memory it took;
 *   - generation tokens/s at B = 1 and B = 32 (KV cache, GPU sampling, no early stop);
 *   - LoRA SFT tokens/s (r 16 on every projection, the base frozen);
 *   - one policy-gradient update of the loop on LoRA (--rollouts), the loop's training half;
 *   - whole SAGE loop steps on LoRA with the smallest settings (one proposal, one problem);
 *   - the export written to disk a tensor at a time, and the host memory it took;
 *   - the memory estimates in full, LoRA and LoRA-on-f16 modes, and the KV cache at the loop's batch.
 * --base-dtype f16 holds the base weights in half precision throughout.
 *
 *   node --expose-gc --import tsx scripts/bench-real-model.ts [--phases generate,export,sft,update] [--base-dtype f16] [--out FILE]
 *
 * SAGE_GPU=hardware uses a real GPU instead of SwiftShader. The first call of each shape
 * compiles pipelines and tunes matmuls; every figure is taken on a later call.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMain, runCli, type OptionValues } from '../src/cli/options';
import { BASE_DTYPE_OPTION } from '../src/cli/loraOptions';
import { folderSink, readCheckpointFolder, writeCheckpointFolder } from '../src/cli/runFiles';
import { Runtime } from '../src/gpu/runtime';
import { readProblemFile } from '../src/data/nodeFile';
import { importCheckpoint } from '../src/model/checkpoint';
import { exportCheckpoint } from '../src/model/checkpointExport';
import { readConfigJson } from '../src/model/configJson';
import { detachedLoop } from '../src/sage/run';
import { METHODS } from '../src/sage/config';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { DEFAULT_RUN } from '../src/sage/settings';
import { COMPACT_TEMPLATES } from '../src/sage/templates';
import { detachedRunModel } from '../src/sage/runModel';
import { flatParamSize, paramCount, type LlamaConfig } from '../src/model/config';
import { DEFAULT_LORA } from '../src/model/lora';
import { generationEstimate, memoryEstimate, type BaseDtype } from '../src/model/memory';
import { ByteTokenizer } from '../src/model/tokenizer';
import { initialParams } from '../src/model/transformer';
import { nodePlatform } from '../src/platform/node';
import { ModelSession } from '../src/train/session';
import { rng } from '../src/util/random';

const cli = {
  name: 'bench-real-model',
  summary: 'Load, generation, LoRA SFT and one loop update on a random SmolLM2-135M-sized model, in Node on Dawn.',
  options: {
    config: { type: 'string', arg: 'FILE', exists: 'file', default: 'scripts/fixtures/smollm2-135m.config.json', help: 'config.json of the model to build' },
    'new-tokens': { type: 'int', min: 2, default: 16, help: 'tokens generated per row in the timed calls' },
    'sft-steps': { type: 'int', min: 2, default: 3, help: 'LoRA SFT steps (the first compiles and is left out)' },
    out: { type: 'string', arg: 'FILE', help: 'write the figures as JSON here' },
    phases: { type: 'string', multiple: true, choices: ['generate', 'export', 'sft', 'update', 'step'], help: 'what to measure after the load (default all)' },
    'base-dtype': BASE_DTYPE_OPTION,
    rollouts: { type: 'int', min: 1, default: 16, help: 'rollouts of the loop update (32 prompt and 32 completion tokens each)' },
    'loop-steps': { type: 'int', min: 1, default: 2, help: 'SAGE steps of the step phase (the first tunes new shapes)' },
  },
} as const;

const MiB = (n: number) => Math.round(n / 2 ** 20);

/**
 * The byte-level tokenizer (src/model/tokenizer.ts) widened to the model's vocabulary: the
 * bytes encode as always, and every further id decodes to a word of its own, so whatever a
 * random model samples turns into text through @huggingface/tokenizers.
 */
function wideTokenizer(vocabSize: number): Map<string, string> {
  const files = new ByteTokenizer().files();
  const json = JSON.parse(files.get('tokenizer.json')!) as { model: { vocab: Record<string, number> }; added_tokens: { id: number }[] };
  const used = new Set([...Object.values(json.model.vocab), ...json.added_tokens.map((t) => t.id)]);
  for (let id = 0; id < vocabSize; id++) if (!used.has(id)) json.model.vocab[`w${id}`] = id;
  files.set('tokenizer.json', JSON.stringify(json));
  return files;
}
const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** The model as a Hub download would bring it: BF16 shards of at most 100 MB, and a tokenizer. */
function writeRandomCheckpoint(config: LlamaConfig): string {
  const dir = mkdtempSync(join(tmpdir(), 'sage-real-model-'));
  writeCheckpointFolder(dir, exportCheckpoint(config, initialParams(config, 135, 0.05), wideTokenizer(config.vocab_size), { dtype: 'BF16', maxShardBytes: 100e6 }));
  return dir;
}

async function main(o: OptionValues<typeof cli.options>): Promise<void> {
  const config = readConfigJson(readFileSync(o.config, 'utf8'));
  const dir = writeRandomCheckpoint(config);
  const rt = await Runtime.create(nodePlatform());
  // What the host holds from here on is the load's own doing: the writer's garbage is
  // collected, and its array buffers freed (their sweeper runs after the collection).
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 500));
  const a = rt.ctx.adapter;
  const device = [a.vendor, a.architecture, a.description].filter(Boolean).join(' / ');
  console.log(`${(paramCount(config) / 1e6).toFixed(1)} M parameters on ${device}`);

  // Load: what a user's dropped folder goes through.
  const host = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const before = host();
  let peak = before;
  const t0 = performance.now();
  const checkpoint = importCheckpoint(readCheckpointFolder(dir));
  const fileBytes = checkpoint.weights.shards.reduce((n, s) => n + s.bytes, 0);
  const baseDtype = o['base-dtype'] as BaseDtype;
  const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint, name: 'smollm2-135m-random', baseDtype, onProgress: () => (peak = Math.max(peak, host())) });
  await rt.sync();
  const result: Record<string, unknown> = { date: new Date().toISOString().slice(0, 10), device, parameters: paramCount(config), baseDtype };
  // Each phase's figures are written as it ends: a run cut short keeps what it measured.
  const record = (key: string, value: unknown) => {
    result[key] = value;
    if (o.out) writeFileSync(o.out, JSON.stringify(result, null, 2) + '\n');
  };
  const load = { seconds: seconds(performance.now() - t0), shards: checkpoint.weights.shards.length, fileMiB: MiB(fileBytes), float32MiB: MiB(4 * flatParamSize(config)), peakHostMiB: MiB(peak - before) };
  console.log(`load: ${load.seconds} s, ${load.shards} BF16 shards, ${load.fileMiB} MiB of weights; host memory (JS heap and array buffers) at most +${load.peakHostMiB} MiB over the start, the float32 model being ${load.float32MiB} MiB`);
  rmSync(dir, { recursive: true });
  record('load', load);
  const full = memoryEstimate(config, 8, 512);
  const lora = memoryEstimate(config, 8, 512, { lora: DEFAULT_LORA });
  const loraF16 = memoryEstimate(config, 8, 512, { lora: DEFAULT_LORA, baseDtype: 'f16' });
  const kv = generationEstimate(config, 32, 256, 256);
  const memory = {
    at: '8×512',
    fullMiB: { weights: MiB(full.weights), gradients: MiB(full.gradients), adam: MiB(full.adamMoments), activations: MiB(full.activations), total: MiB(full.total) },
    loraMiB: { weights: MiB(lora.weights), gradients: MiB(lora.gradients), adam: MiB(lora.adamMoments), activations: MiB(lora.activations), total: MiB(lora.total) },
    loraF16MiB: { weights: MiB(loraF16.weights), total: MiB(loraF16.total) },
    kvCacheMiB: { at: '32 rows × 511 positions', value: MiB(kv.kvCache) },
  };
  console.log(`memory at 8×512: full ${memory.fullMiB.total} MiB, LoRA ${memory.loraMiB.total} MiB, LoRA on an f16 base ${memory.loraF16MiB.total} MiB; KV cache ${memory.kvCacheMiB.value} MiB at 32 rows × 511 positions`);
  record('memory', memory);
  const phases = new Set(o.phases.length ? o.phases : ['generate', 'sft', 'update']);

  // Generation: fixed-length rows (no EOS), prompts of 32 random ids.
  const random = rng(7);
  const prompt = () => Array.from({ length: 32 }, () => 1 + Math.floor(random() * (config.vocab_size - 1)));
  const generation: Record<string, number> = {};
  for (const B of phases.has('generate') ? [1, 32] : []) {
    const prompts = Array.from({ length: B }, prompt);
    await session.generate(prompts, { maxNewTokens: 2, temperature: 1, eosTokenIds: [] });
    const r = await session.generate(prompts, { maxNewTokens: o['new-tokens'], temperature: 1, eosTokenIds: [] });
    generation[`B${B}`] = Math.round((10 * r.stats.newTokens) / (r.stats.ms / 1000)) / 10;
    console.log(`generate B=${B}: ${r.stats.newTokens} tokens in ${seconds(r.stats.ms)} s, ${generation[`B${B}`]} tokens/s`);
  }
  if (phases.has('generate')) record('generation', { newTokens: o['new-tokens'], tokensPerS: generation });

  // Export: BF16 shards written a tensor at a time, as `npm run sft -- --out` writes them.
  if (phases.has('export')) {
    const out = mkdtempSync(join(tmpdir(), 'sage-real-export-'));
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((r) => setTimeout(r, 500));
    const start = host();
    let top = start;
    const sink = folderSink(out);
    const e0 = performance.now();
    await session.writeCheckpoint({ file: (name, chunks) => sink.file(name, (async function* () {
      for await (const c of chunks) {
        top = Math.max(top, host());
        yield c;
      }
    })()) }, {}, { dtype: 'BF16', maxShardBytes: 100e6 });
    const exported = { seconds: seconds(performance.now() - e0), files: sink.written.length, peakHostMiB: MiB(top - start) };
    console.log(`export: ${exported.seconds} s, ${exported.files} files; host memory at most +${exported.peakHostMiB} MiB over the start`);
    rmSync(out, { recursive: true });
    record('export', exported);
  }

  // LoRA SFT on byte-level pairs (the ids fit the vocabulary; the weights are random anyway).
  session.setLora(DEFAULT_LORA, { seed: 0 });
  const pairs = Array.from({ length: 32 }, (_, i) => ({ prompt: `Question ${i}: what is ${i} + ${i}? Think step by step.`, response: ` ${i} + ${i} = ${2 * i}. The answer is ${2 * i}.` }));
  const sftSteps = phases.has('sft') ? o['sft-steps'] : 0;
  const trainer = await session.startSft(pairs, { batchSize: 4, seqLen: 64, accumulation: 1, steps: o['sft-steps'], lr: 1e-4, warmupSteps: 0, seed: 0, packing: true });
  let tokens = 0;
  let ms = 0;
  for (let i = 0; i < sftSteps; i++) {
    const r = await trainer.step();
    if (i > 0) {
      tokens += r.tokens;
      ms += r.ms;
    }
    console.log(`LoRA SFT step ${r.step}: loss ${r.loss.toFixed(3)}, ${r.tokens} tokens in ${seconds(r.ms)} s`);
  }
  if (sftSteps) record('sft', { tokensPerS: Math.round((10 * tokens) / (ms / 1000)) / 10, batch: '4×64', trainable: session.model.trainable.size });

  // One update of the loop on LoRA: rollouts of 32 prompt and 32 completion tokens.
  if (phases.has('update')) await measureUpdate();
  if (phases.has('step')) await measureSteps();
  finish();

  async function measureUpdate(): Promise<void> {
    const rollouts = Array.from({ length: o.rollouts }, (_, i) => ({ promptIds: prompt(), completionIds: prompt(), oldLogprobs: new Array<number>(32).fill(-10.8), advantage: i % 2 ? 1 : -1 }));
    await session.trainPolicy(rollouts, 1e-5);
    const u0 = performance.now();
    const update = await session.trainPolicy(rollouts, 1e-5);
    const policy = { seconds: seconds(performance.now() - u0), rollouts: o.rollouts, tokens: update.tokens };
    console.log(`loop update (LoRA): ${policy.seconds} s for ${policy.rollouts} rollouts (${policy.tokens} trained tokens)`);
    record('policy', policy);
  }

  /** SAGE steps on the curriculum's seeds, every role sampled once or twice: the first tunes the step's new shapes. */
  async function measureSteps(): Promise<void> {
    const seeds = (await readProblemFile('data/seeds/curriculum-500.jsonl')).problems.slice(0, 8);
    const model = detachedRunModel(session, DEFAULT_RUN.warmupLr);
    const settings = {
      ...DEFAULT_LOOP, method: METHODS.sage, templates: COMPACT_TEMPLATES,
      proposals: 1, references: 1, difficultySamples: 2, trainProblems: 1, solverSamples: 2,
      maxNewTokens: { challenger: 16, planner: 16, solver: 16, critic: 8 },
    };
    const loop = detachedLoop(model, seeds, settings);
    const steps: { seconds: number; generated: number; trained: number; phases: Record<string, number> }[] = [];
    for (let i = 0; i < o['loop-steps']; i++) {
      const { metrics } = await loop.runStep();
      const phasesS = Object.fromEntries(Object.entries(metrics.seconds.phases).map(([k, v]) => [k, seconds(1000 * (v ?? 0))]));
      steps.push({ seconds: seconds(1000 * metrics.seconds.total), generated: metrics.tokens.generated, trained: metrics.tokens.trained, phases: phasesS });
      console.log(`SAGE step ${i + 1}${i === 0 ? ' (tunes the step\'s new shapes)' : ''}: ${steps[i]!.seconds} s, ${metrics.tokens.generated} tokens generated, ${metrics.tokens.trained} trained; ${JSON.stringify(phasesS)}`);
      record('step', { settings: 'proposals 1, references 1, difficulty samples 2, train problems 1, solver samples 2; new tokens 16/16/16/8', steps });
    }
  }

  function finish(): void {
    session.destroy();
    rt.destroy();
  }
}

if (isMain(import.meta.url)) await runCli(cli, main);
