import type { Runtime } from '../gpu/runtime';
import { PRESETS } from '../model/config';
import { ByteTokenizer } from '../model/tokenizer';
import { Transformer } from '../model/transformer';
import type { SftPair } from '../data/sftPairs';
import { SftTrainer } from './sft';

/** Short answers, so that a working engine drives the loss close to zero in tens of steps. */
export const MEMORISE_PAIRS: SftPair[] = [
  { prompt: 'Q: 2+3=', response: '5' },
  { prompt: 'Q: capital of France?', response: 'Paris' },
  { prompt: 'Q: reverse abc', response: 'cba' },
  { prompt: 'Q: first prime?', response: '2' },
];

/**
 * The tiny preset, from a fixed seed, set up to memorise MEMORISE_PAIRS in `steps` steps:
 * the lab's training check and the engine's loss-goes-down test. Tests that need a
 * fine-tuned model quickly keep fewer `layers`.
 */
export function memorisationRun(
  rt: Runtime,
  steps: number,
  autotune = true,
  layers = PRESETS.tiny.num_hidden_layers,
): { model: Transformer; trainer: SftTrainer } {
  const model = Transformer.init(rt, { ...PRESETS.tiny, num_hidden_layers: layers }, 1234);
  const trainer = new SftTrainer(model, new ByteTokenizer(), MEMORISE_PAIRS, {
    batchSize: 4,
    seqLen: 32,
    accumulation: 1,
    schedule: { lr: 3e-3, warmupSteps: 5, totalSteps: steps, kind: 'cosine' },
    adamw: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
    seed: 7,
    autotune,
  });
  return { model, trainer };
}
