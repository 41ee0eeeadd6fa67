/**
 * llama.cpp's Vulkan backend beside the engine on the same card: the GPU report's two shapes
 * written as GGUF files (bench/peers/gguf.ts) with the weights the lab's random checkpoints
 * hold (f16 matrices, as the engine's f16 base), decoded by bench/peers/llama_decode.c at the
 * report's rows, prompt and new-token counts, sampled over the whole vocabulary. With the
 * report's JSON, the engine's pipelined figures are set beside llama.cpp's as ratios.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LlamaConfig } from '../../src/model/config';
import { decodePlan, GPU_MODELS } from '../gpuReport';
import { paddedByteTokenizer, randomCheckpoint } from '../randomCheckpoint';
import { writeGguf, type GgufTokens } from './gguf';

const run = promisify(execFile);

/** Where llama.cpp samples: on the CPU from the logits (its default), or on the device (experimental). */
export type LlamaSampling = 'host' | 'backend';

export interface LlamaRun {
  shortS: number;
  longS: number;
  /** null where both runs of the pair took the same time (JSON has no infinity). */
  tokensPerS: number | null;
}

/** One llama_decode measurement, as the program prints it. */
export interface LlamaDecode {
  rows: number;
  prompt: number;
  newTokens: number;
  /** Median of the runs. */
  tokensPerS: number | null;
  /** Where the tokens were sampled: `backend` only where the device sampled them. */
  sampling: LlamaSampling;
  device: string;
  runs: LlamaRun[];
}

export interface LlamaModelRecord {
  model: string;
  layers: number;
  vocab: number;
  ggufBytes: number;
  /** By rows, each sampling asked for. */
  decode: { rows: number; host?: LlamaDecode; backend?: LlamaDecode }[];
  errors: string[];
}

export interface LlamaRecord {
  /** node-llama-cpp's prebuilt Vulkan libraries and the llama.cpp release they are built from. */
  build: string;
  device: string;
  prompt: number;
  newTokens: number;
  quick: boolean;
  models: LlamaModelRecord[];
}

/** What the report's JSON (bench/gpuReport.ts) says of its runs, as far as the ratios read it. */
export interface EngineReport {
  prompt: number;
  newTokens: number;
  quick?: boolean;
  models: { model: string; layers: number; vocab: number; decode: { rows: number; tokensPerS: number }[] }[];
}

/** The lab's random-checkpoint tokenizer as GGUF tokens: its byte-level vocabulary, special tokens marked. */
export function ggufTokens(vocab: number): GgufTokens {
  const json = JSON.parse(paddedByteTokenizer(vocab).tokenizerJson) as {
    model: { vocab: Record<string, number> };
    added_tokens: { id: number; content: string }[];
  };
  const tokens: string[] = new Array<string>(vocab);
  for (const [s, id] of Object.entries(json.model.vocab)) tokens[id] = s;
  for (const t of json.added_tokens) tokens[t.id] = t.content;
  const byContent = new Map(json.added_tokens.map((t) => [t.content, t.id]));
  const missing = tokens.findIndex((t) => t === undefined);
  if (missing >= 0 || tokens.length !== vocab) throw new Error(`gguf tokens: no token ${missing} in a vocabulary of ${vocab}`);
  return { tokens, control: json.added_tokens.map((t) => t.id), eos: byContent.get('<|im_end|>')!, bos: byContent.get('<|bos|>') };
}

/** `config`'s model with randomCheckpoint's weights (f16 matrices), as a GGUF file at `path`; its bytes. */
export function writePeerModel(path: string, config: LlamaConfig, name: string): number {
  const weights = randomCheckpoint(config).weights;
  return writeGguf(path, config, (n) => weights.read(n), { dtype: 'f16', vocab: ggufTokens(config.vocab_size), name });
}

function lastLines(e: unknown): string {
  const err = e as { stderr?: string; message?: string };
  return String(err.stderr || err.message || e).trim().split('\n').slice(-3).join(' ');
}

/** Runs the peer; its stdout is one JSON object, its stderr llama.cpp's warnings. */
async function peer(binary: string, env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(binary, args, { env, maxBuffer: 1 << 30 });
    return stdout;
  } catch (e) {
    throw new Error(`llama_decode ${args.join(' ')}: ${lastLines(e)}`);
  }
}

export interface DecodeArgs {
  model: string;
  rows: readonly number[];
  prompt: number;
  newTokens: number;
  sampling: readonly LlamaSampling[];
  reps?: number;
}

/** Every rows count with every sampling, from one process (its device and pipelines set up once). */
export async function llamaDecode(binary: string, env: NodeJS.ProcessEnv, a: DecodeArgs): Promise<LlamaDecode[]> {
  const args = ['--model', a.model, '--rows', a.rows.join(','), '--prompt', String(a.prompt), '--new', String(a.newTokens), '--sampling', a.sampling.join(','), '--reps', String(a.reps ?? 3)];
  const out = await peer(binary, env, args);
  return out.trim().split('\n').map((line) => JSON.parse(line) as LlamaDecode);
}

/** The logits llama.cpp computes at every position of one prompt: [positions][vocab]. */
export async function llamaLogits(binary: string, env: NodeJS.ProcessEnv, model: string, tokens: readonly number[], gpuLayers = 0): Promise<number[][]> {
  const out = JSON.parse(await peer(binary, env, ['--model', model, '--logits', tokens.join(','), '--gpu-layers', String(gpuLayers)])) as { logits: number[][] };
  return out.logits;
}

export interface PeerOptions {
  binary: string;
  env: NodeJS.ProcessEnv;
  /** Where the GGUF files are written (and removed after). */
  dir: string;
  build: string;
  rows: readonly number[];
  sampling: readonly LlamaSampling[];
  /** The report's run decides the counts and each shape's layers and vocabulary. */
  engine?: EngineReport;
  quick: boolean;
  log: (line: string) => void;
  /** Called with the record so far after each shape, so that a run stopped part-way keeps the shapes it finished. */
  save?: (record: LlamaRecord) => void;
}

/** The report's shapes through llama.cpp, one GGUF file at a time. */
export async function llamaCppPeer(o: PeerOptions): Promise<LlamaRecord> {
  // The engine's run decides, also for a shape its report does not hold (one cut short).
  const quick = o.engine?.quick ?? o.quick;
  const plan = decodePlan(quick);
  const [prompt, newTokens] = o.engine ? [o.engine.prompt, o.engine.newTokens] : [plan.prompt, plan.newTokens];
  const record: LlamaRecord = { build: o.build, device: 'unknown', prompt, newTokens, quick, models: [] };
  for (const { name, config: full } of GPU_MODELS) {
    const cut = o.engine?.models.find((m) => m.model === name);
    const config = cut ? { ...full, num_hidden_layers: cut.layers, vocab_size: cut.vocab } : plan.shape(full);
    const m: LlamaModelRecord = { model: name, layers: config.num_hidden_layers, vocab: config.vocab_size, ggufBytes: 0, decode: [], errors: [] };
    record.models.push(m);
    const file = join(o.dir, `${name}.gguf`);
    try {
      m.ggufBytes = writePeerModel(file, config, name);
      o.log(`llama.cpp: ${name}: ${(m.ggufBytes / 2 ** 20).toFixed(0)} MiB of GGUF written`);
      const figures = await llamaDecode(o.binary, o.env, { model: file, rows: o.rows, prompt, newTokens, sampling: o.sampling });
      o.rows.forEach((rows, i) => {
        const fig: LlamaModelRecord['decode'][number] = { rows };
        o.sampling.forEach((sampling, j) => {
          const d = figures[i * o.sampling.length + j]!;
          fig[sampling] = d;
          record.device = d.device;
          o.log(`llama.cpp: ${name} B=${rows} sampling ${sampling} (ran on the ${d.sampling}): ${fmt(d.tokensPerS ?? undefined)} tokens/s on ${d.device}`);
        });
        m.decode.push(fig);
      });
    } catch (e) {
      m.errors.push((e as Error).message);
    } finally {
      rmSync(file, { force: true });
    }
    o.save?.(record);
  }
  return record;
}

/** The faster of a row count's samplings. */
export function bestDecode(fig: LlamaModelRecord['decode'][number]): LlamaDecode | undefined {
  const all = [fig.host, fig.backend].filter((d): d is LlamaDecode => d !== undefined);
  return all.sort((a, b) => (b.tokensPerS ?? -Infinity) - (a.tokensPerS ?? -Infinity))[0];
}

const fmt = (x: number | null | undefined, digits = 1) =>
  x === undefined || x === null || !Number.isFinite(x) ? '—' : x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** How llama.cpp ran: ggml reports its CPU backend where Vulkan offered it no GPU (it passes over CPU drivers). */
const where = (device: string) => (device === 'cpu' ? 'its CPU backend: Vulkan offered it no GPU' : 'Vulkan, every layer on the GPU');

/** Markdown: the engine's pipelined decode beside llama.cpp's, and engine / llama.cpp (above 1 the engine is faster). */
export function llamaRatioTable(peer: LlamaRecord, engine: EngineReport): string {
  const lines = [
    `Decode tokens/s on ${peer.device}, ${peer.prompt}-token prompts, ${peer.newTokens} new tokens, random weights, f16 matrices ` +
      `(engine: WebGPU through Dawn; llama.cpp: ${peer.build}, ${where(peer.device)})${peer.quick ? ', QUICK: a smoke test, not a measurement' : ''}`,
    '',
    '| model | rows | engine (pipelined) | llama.cpp, host sampling | llama.cpp, device sampling | ratio (engine / faster) |',
    '|:--|--:|--:|--:|--:|--:|',
  ];
  for (const pm of peer.models) {
    const em = engine.models.find((m) => m.model === pm.model);
    for (const fig of pm.decode) {
      const e = em?.decode.find((d) => d.rows === fig.rows)?.tokensPerS;
      const best = bestDecode(fig);
      // Asked for on the device but sampled on the host: llama.cpp fell back, and the column says so.
      const backend = fig.backend && (fig.backend.sampling === 'backend' ? fmt(fig.backend.tokensPerS) : `${fmt(fig.backend.tokensPerS)} (fell back to host)`);
      lines.push(`| ${pm.model} | ${fig.rows} | ${fmt(e)} | ${fmt(fig.host?.tokensPerS)} | ${backend ?? '—'} | ${e !== undefined && best?.tokensPerS ? fmt(e / best.tokensPerS, 2) : '—'} |`);
    }
    for (const err of pm.errors) lines.push(`| ${pm.model} | | | failed: ${err.replace(/\|/g, '/')} | | |`);
  }
  return lines.join('\n');
}
