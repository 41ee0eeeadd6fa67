/** Helpers for the model's GPU-versus-reference tests. Not part of the app bundle. */
import { flatParamSize, paramSpecs, type LlamaConfig } from './config';
import type { RefBatch, RefParams } from './reference';
import type { Batch } from './transformer';

export function toFlat(config: LlamaConfig, params: RefParams): Float32Array {
  const flat = new Float32Array(flatParamSize(config));
  for (const s of paramSpecs(config)) flat.set(params.get(s.name)!, s.offset);
  return flat;
}

/** The reference computed on exactly the f32 weights the GPU holds. */
export function roundToF32(params: RefParams): RefParams {
  return new Map([...params].map(([k, v]) => [k, Float64Array.from(v, Math.fround)]));
}

export function makeBatch(config: LlamaConfig, B: number, T: number, padding: 'none' | 'left' | 'right', random: () => number): RefBatch {
  const N = B * T;
  const tokens = Int32Array.from({ length: N }, () => Math.floor(random() * config.vocab_size));
  const mask = new Uint8Array(N).fill(1);
  for (let b = 0; b < B && padding !== 'none'; b++) {
    const pad = b === 0 ? 2 : Math.floor(random() * 3);
    for (let i = 0; i < pad; i++) mask[b * T + (padding === 'left' ? i : T - 1 - i)] = 0;
  }
  const positions = new Int32Array(N);
  for (let b = 0; b < B; b++) {
    let p = 0;
    for (let t = 0; t < T; t++) {
      positions[b * T + t] = padding === 'left' ? Math.max(0, p - 1 + mask[b * T + t]!) : t;
      p += mask[b * T + t]!;
    }
  }
  const targets = Int32Array.from({ length: N }, (_, i) =>
    mask[i] && random() > 0.15 ? Math.floor(random() * config.vocab_size) : -1,
  );
  const weights = Float64Array.from(targets, (t) => (t >= 0 ? 0.05 + random() * 0.1 : 0));
  return { B, T, tokens, mask, positions, targets, weights };
}

export function gpuBatch(b: RefBatch): Batch {
  return { B: b.B, T: b.T, tokens: b.tokens, mask: b.mask, positions: b.positions, targets: b.targets, weights: b.weights };
}
