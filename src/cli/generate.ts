/**
 * Headless generation on Dawn:
 *   npm run generate -- --prompt "Q: 2+3=" [--preset tiny | --model <checkpoint dir>] [--max-new 64] ...
 *   npm run generate -- --prompts data/validation/curriculum-1000.jsonl --limit 8 --model ckpt/
 * Prints each completion with its finish reason, or with --json one JSON line per prompt
 * (token ids and both log-probabilities). `--help` lists every option.
 */
import { readJsonl } from '../data/jsonl';
import { fileChunks } from '../data/nodeFile';
import { recordToPair } from '../data/sftPairs';
import { Runtime } from '../gpu/runtime';
import type { BaseDtype, KvDtype } from '../model/memory';
import { PRESETS, type PresetName } from '../model/config';
import type { GeneratedRow } from '../model/generate';
import { DEFAULT_GENERATE, type GenerateOptions } from '../model/generateSettings';
import { nodePlatform } from '../platform/node';
import { ModelSession, type ModelSource } from '../train/session';
import { BASE_DTYPE_OPTION, KV_CACHE_OPTION, LORA_OPTIONS } from './loraOptions';
import { isMain, runCli, UsageError, type OptionValues } from './options';
import { importCheckpointFolder, logShards, readCheckpointFolder } from './runFiles';

export const generateCli = {
  name: 'generate',
  summary: 'Completes prompts with a preset or a Hugging Face checkpoint, batched on the GPU through Dawn (KV cache, GPU sampling).',
  options: {
    prompt: { type: 'string', help: 'one prompt (framed as in training: BOS, then its text)' },
    prompts: { type: 'string', arg: 'FILE', exists: 'file', help: 'JSONL of prompts: {"prompt": …} or seed records (question, problem…; their answer is shown as the reference)' },
    limit: { type: 'int', min: 1, help: 'with --prompts: the first N prompts only' },
    model: { type: 'string', arg: 'DIR', exists: 'dir', help: 'a checkpoint folder (Hugging Face layout: config.json, safetensors, tokenizer) instead of a preset' },
    adapter: LORA_OPTIONS.adapter,
    'base-dtype': BASE_DTYPE_OPTION,
    'kv-cache': KV_CACHE_OPTION,
    preset: { type: 'string', choices: Object.keys(PRESETS), default: 'tiny', help: 'model preset with fresh weights (a smoke test: it writes noise)' },
    'max-new': { type: 'int', min: 1, default: DEFAULT_GENERATE.maxNewTokens, help: 'new tokens per prompt at most' },
    temperature: { type: 'number', min: 0, default: DEFAULT_GENERATE.temperature, help: 'sampling temperature; 0 is greedy' },
    'top-k': { type: 'int', min: 0, default: DEFAULT_GENERATE.topK, help: 'keep the k most likely tokens; 0 keeps all' },
    'top-p': { type: 'number', min: 0, minExclusive: true, max: 1, default: DEFAULT_GENERATE.topP, help: 'keep the smallest set of tokens with this probability' },
    stop: { type: 'string', multiple: true, help: 'end a completion at this text (repeatable, or comma-separated)' },
    seed: { type: 'int', min: 0, max: 0xffffffff, default: DEFAULT_GENERATE.seed, help: 'sampling seed (and, with --preset, of the weights)' },
    batch: { type: 'int', min: 1, default: 32, help: 'prompts completed together' },
    json: { type: 'flag', help: 'print one JSON line per prompt: text, token ids, log-probabilities, finish reason' },
  },
  notes: [
    'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader',
    'example: npm run generate -- --model ckpt/ --prompts data/validation/curriculum-1000.jsonl --limit 8 --temperature 0',
  ],
} as const;

interface PromptLine {
  prompt: string;
  /** The seed record's answer, shown beside the completion. */
  reference?: string;
}

/** Prompts of a JSONL file: `prompt` fields, or the prompt side of seed records; bad lines are reported. */
async function readPrompts(file: string, limit: number | undefined): Promise<PromptLine[]> {
  const out: PromptLine[] = [];
  for await (const ev of readJsonl(fileChunks(file))) {
    if ('refused' in ev) throw new Error(`${file}: ${ev.refused}`);
    if ('error' in ev) {
      console.warn(`${file}:${ev.line}: skipped: ${ev.error}`);
      continue;
    }
    const r = ev.value;
    const pair = typeof r.prompt === 'string' ? { prompt: r.prompt } : recordToPair(r);
    if (typeof pair === 'string') console.warn(`${file}:${ev.line}: skipped: ${pair}`);
    else out.push('response' in pair ? { prompt: pair.prompt, reference: pair.response } : pair);
    if (limit !== undefined && out.length >= limit) break;
  }
  if (!out.length) throw new Error(`no prompts in ${file}`);
  return out;
}

function modelSource(o: OptionValues<typeof generateCli.options>): ModelSource {
  const baseDtype = o['base-dtype'] as BaseDtype;
  if (!o.model) return { kind: 'preset', preset: o.preset as PresetName, seed: o.seed, baseDtype };
  return { kind: 'checkpoint', checkpoint: importCheckpointFolder(o.model), name: o.model, onProgress: logShards, baseDtype };
}

function show(i: number, line: PromptLine, row: GeneratedRow): string {
  const mean = row.modelLogprobs.reduce((a, b) => a + b, 0) / Math.max(1, row.modelLogprobs.length);
  return [
    `[${i + 1}] ${row.finishReason} · ${row.completionIds.length} tokens · mean log p ${mean.toFixed(3)}`,
    `prompt: ${line.prompt}`,
    `completion: ${row.text}`,
    ...(line.reference !== undefined ? [`reference: ${line.reference}`] : []),
    '',
  ].join('\n');
}

async function main(o: OptionValues<typeof generateCli.options>): Promise<void> {
  if ((o.prompt === undefined) === (o.prompts === undefined)) throw new UsageError('give --prompt TEXT or --prompts FILE (one of them)');
  if (o.limit !== undefined && !o.prompts) throw new UsageError('--limit needs --prompts');
  const lines = o.prompts ? await readPrompts(o.prompts, o.limit) : [{ prompt: o.prompt! }];
  const options: Partial<GenerateOptions> = {
    maxNewTokens: o['max-new'],
    temperature: o.temperature,
    topK: o['top-k'],
    topP: o['top-p'],
    stop: o.stop,
    seed: o.seed,
    kvCache: o['kv-cache'] as KvDtype,
  };

  const rt = await Runtime.create(nodePlatform());
  const session = ModelSession.create(rt, modelSource(o));
  if (o.adapter) session.setLora(null, { adapterFiles: readCheckpointFolder(o.adapter) });
  if (!o.json) {
    console.log(`adapter ${rt.ctx.adapter.key} · ${session.origin} · ${(session.parameters / 1e6).toFixed(2)}M params · ${lines.length} prompt(s)`);
  }
  let tokens = 0;
  let ms = 0;
  for (let start = 0; start < lines.length; start += o.batch) {
    const group = lines.slice(start, start + o.batch);
    const out = await session.generate(group.map((l) => l.prompt), options);
    tokens += out.stats.newTokens;
    ms += out.stats.ms;
    out.rows.forEach((row, i) => {
      const line = group[i]!;
      if (o.json) console.log(JSON.stringify({ prompt: line.prompt, ...row, ...(line.reference !== undefined ? { reference: line.reference } : {}) }));
      else console.log(show(start + i, line, row));
    });
  }
  if (!o.json) console.log(`${tokens} new tokens in ${(ms / 1000).toFixed(1)} s (${((tokens * 1000) / ms).toFixed(1)} tokens/s, first call compiling)`);
  session.destroy();
  rt.destroy();
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(generateCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
