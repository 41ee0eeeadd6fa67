/** The LoRA tests' float64 side: random adapters, the weights they adapt, and the gradients they get (lora.test.ts, train.f16.test.ts). */
import type { LlamaConfig } from './config';
import { loraName, loraScale, loraSize, loraSpecs, targetWeightName, type LoraConfig } from './lora';
import type { RefParams } from './reference';

/** A random adapter (B non-zero, unlike a fresh one, so every gradient is exercised), f32-exact. */
export function randomAdapter(c: LlamaConfig, l: LoraConfig, random: () => number): Float32Array {
  return Float32Array.from({ length: loraSize(c, l) }, () => Math.fround((2 * random() - 1) * 0.3));
}

/** Every adapted weight: its name, the adapter's A and B specs, and the matrix sizes (out, r, in). */
function* adapted(c: LlamaConfig, l: LoraConfig) {
  const specs = new Map(loraSpecs(c, l).map((s) => [s.name, s]));
  for (let layer = 0; layer < c.num_hidden_layers; layer++) {
    for (const t of l.targets) {
      const A = specs.get(loraName(c, layer, t, 'A'))!;
      const B = specs.get(loraName(c, layer, t, 'B'))!;
      yield { weight: targetWeightName(c, layer, t), A, B, rows: B.shape[0]!, r: l.rank, cols: A.shape[1]! };
    }
  }
}

/**
 * The reference weights with scale·B·A added to every adapted weight; with `round`, each step
 * rounded to it (Math.fround: the sum in f32, as the GPU makes it).
 */
export function merged(c: LlamaConfig, base: RefParams, l: LoraConfig, flat: Float32Array, round = (x: number) => x): RefParams {
  const out: RefParams = new Map([...base].map(([k, v]) => [k, Float64Array.from(v)]));
  const s = loraScale(l);
  for (const { weight, A, B, rows, r, cols } of adapted(c, l)) {
    const W = out.get(weight)!;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        let acc = 0;
        for (let k = 0; k < r; k++) acc = round(acc + round(flat[B.offset + i * r + k]! * flat[A.offset + k * cols + j]!));
        W[i * cols + j] = round(W[i * cols + j]! + round(s * acc));
      }
    }
  }
  return out;
}

/** dB = scale·dW·Aᵀ and dA = scale·Bᵀ·dW from the reference's gradient of each adapted weight. */
export function adapterGrads(c: LlamaConfig, l: LoraConfig, flat: Float32Array, dW: RefParams): Map<string, Float64Array> {
  const s = loraScale(l);
  const out = new Map<string, Float64Array>();
  for (const { weight, A, B, rows, r, cols } of adapted(c, l)) {
    const g = dW.get(weight)!;
    const dA = new Float64Array(r * cols);
    const dB = new Float64Array(rows * r);
    for (let i = 0; i < rows; i++) {
      for (let k = 0; k < r; k++) {
        const b = flat[B.offset + i * r + k]!;
        let acc = 0;
        for (let j = 0; j < cols; j++) {
          acc += g[i * cols + j]! * flat[A.offset + k * cols + j]!;
          dA[k * cols + j] = dA[k * cols + j]! + s * b * g[i * cols + j]!;
        }
        dB[i * r + k] = s * acc;
      }
    }
    out.set(A.name, dA);
    out.set(B.name, dB);
  }
  return out;
}
