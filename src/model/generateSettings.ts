/**
 * Settings of a generation call: plain data, shared by the engine, the CLI and the lab's
 * controls (which must not load the GPU code of src/model/generate.ts).
 */
import type { KvDtype } from './memory';

/** How the next token is drawn from the logits (see shaders/sampling.wgsl). */
export interface SamplingSettings {
  /** 0 = greedy (arg-max). */
  temperature: number;
  /** Keep the k most likely tokens (ties at the k-th kept); 0 = all. */
  topK: number;
  /** Keep the smallest top set with at least this probability; 1 = all. */
  topP: number;
  /** Seeds every row's random stream. */
  seed: number;
}

export function checkSampling(s: SamplingSettings): void {
  if (!(s.temperature >= 0) || !Number.isFinite(s.temperature)) throw new Error(`temperature must be ≥ 0 (got ${s.temperature})`);
  if (!Number.isInteger(s.topK) || s.topK < 0) throw new Error(`topK must be an integer ≥ 0 (got ${s.topK})`);
  if (!(s.topP > 0 && s.topP <= 1)) throw new Error(`topP must be in (0, 1] (got ${s.topP})`);
  if (!Number.isInteger(s.seed) || s.seed < 0 || s.seed > 0xffffffff) throw new Error(`seed must be an integer in 0..2³²−1 (got ${s.seed})`);
}

export interface GenerateOptions extends SamplingSettings {
  /** Most tokens a row may add (EOS included). */
  maxNewTokens: number;
  /** A row ends once its decoded text contains one of these; the text keeps it. */
  stop: string[];
  /** Ids that end a row (kept as its last token, left out of its text); default the tokenizer's EOS. */
  eosTokenIds?: number[];
  /** Time prefill, decode, sampling and readback apart (the GPU is synced between them). */
  timing?: boolean;
  /** False recomputes every step from the whole sequences: the reference and benchmark baseline. */
  useCache?: boolean;
  /**
   * Decode steps recorded ahead of the host's reads (default 2): the GPU feeds each sampled
   * token to the next step itself, and the host reads a step's tokens while later steps run.
   * A row that ends costs at most this many extra steps, their tokens discarded; the tokens
   * kept are the same as with 0 (every step read before the next is recorded). 0 when timing
   * or recomputing.
   */
  stepsInFlight?: number;
  /** What the KV cache holds (default f32); f16 needs head_dim a multiple of 4. */
  kvCache?: KvDtype;
  /**
   * Replay each decode step from the plan its shape's first step captured (default true; see
   * Decoder): the same dispatches and results for a fraction of the host's time. False records
   * every step through the model's code (what the decode counts count, a step's own dispatches).
   */
  replay?: boolean;
}

export const DEFAULT_GENERATE: GenerateOptions = { maxNewTokens: 64, temperature: 1, topK: 0, topP: 1, seed: 0, stop: [] };

/** Throws, naming the setting, on options a generation call cannot run with. */
export function checkGenerateOptions(o: GenerateOptions): void {
  checkSampling(o);
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 1) throw new Error(`maxNewTokens must be an integer ≥ 1 (got ${o.maxNewTokens})`);
  if (o.stepsInFlight !== undefined && !(Number.isInteger(o.stepsInFlight) && o.stepsInFlight >= 0)) {
    throw new Error(`stepsInFlight must be an integer ≥ 0 (got ${o.stepsInFlight})`);
  }
}
