/** The LoRA options `npm run sft` and `npm run evolve` share, and how they apply to a session. */
import { DEFAULT_LORA, LORA_TARGETS, type LoraConfig, type LoraTarget } from '../model/lora';
import type { ModelSession } from '../train/session';
import { UsageError } from './options';
import { readCheckpointFolder } from './runFiles';

/** What generation's KV cache holds (every CLI that generates). */
export const KV_CACHE_OPTION = {
  type: 'string',
  choices: ['f32', 'f16'],
  default: 'f32',
  help: "what generation's KV cache holds: f16 halves its memory and the bytes each decode step's attention reads (each k and v rounded to half once; head_dim a multiple of 4)",
} as const;

/** How the base weights are held on the GPU (every CLI that loads a model). */
export const BASE_DTYPE_OPTION = {
  type: 'string',
  choices: ['f32', 'f16'],
  default: 'f32',
  help: 'how the base weights are stored on the GPU: f16 halves their memory and freezes them (train with --lora-rank or --adapter)',
} as const;

export const LORA_OPTIONS = {
  'lora-rank': { type: 'int', min: 1, max: 1024, help: 'train a LoRA adapter of this rank on the frozen model instead of the whole model' },
  'lora-alpha': { type: 'number', min: 0, minExclusive: true, help: 'with --lora-rank: the adapter scale is alpha / rank (default 2 × rank)' },
  'lora-targets': {
    type: 'string',
    multiple: true,
    choices: LORA_TARGETS,
    help: `with --lora-rank: the projections that get an adapter (default all: ${DEFAULT_LORA.targets.join(',')})`,
  },
  adapter: { type: 'string', arg: 'DIR', exists: 'dir', help: 'add this PEFT adapter folder (adapter_config.json, adapter_model.safetensors) to the model and train it' },
  'base-dtype': BASE_DTYPE_OPTION,
} as const;

interface LoraValues {
  'lora-rank': number | undefined;
  'lora-alpha': number | undefined;
  'lora-targets': string[];
  adapter: string | undefined;
  'base-dtype': string;
}

/** The adapter the options ask for, or null for full training; refuses contradictory options. */
export function loraFromOptions(o: LoraValues): LoraConfig | null {
  const rank = o['lora-rank'];
  if (rank === undefined) {
    if (o['lora-alpha'] !== undefined) throw new UsageError('--lora-alpha needs --lora-rank');
    if (o['lora-targets'].length) throw new UsageError('--lora-targets needs --lora-rank');
    return null;
  }
  if (o.adapter) throw new UsageError('--lora-rank and --adapter are exclusive (the adapter folder sets its own rank)');
  const targets = o['lora-targets'].length ? (o['lora-targets'] as LoraTarget[]) : DEFAULT_LORA.targets;
  return { rank, alpha: o['lora-alpha'] ?? 2 * rank, targets: [...new Set(targets)] };
}

/**
 * Puts the asked-for adapter on the session's model. A checkpoint that already carries one
 * (a LoRA run's adapter/) keeps training it; asking for another is refused.
 */
export function applyLora(session: ModelSession, o: LoraValues, seed: number): void {
  const lora = loraFromOptions(o);
  if (lora || o.adapter) {
    if (session.lora) throw new UsageError('the checkpoint already trains a LoRA adapter (its adapter/ folder); --lora-rank and --adapter do not apply');
    if (o.adapter) session.setLora(null, { adapterFiles: readCheckpointFolder(o.adapter) });
    else session.setLora(lora, { seed });
  }
  if (session.baseDtype === 'f16' && !session.lora) throw new UsageError('--base-dtype f16 freezes the base: train an adapter with --lora-rank or --adapter');
}

/** One line on what trains: the whole model, or the adapter with its size. */
export function describeTraining(session: ModelSession, trainable: number): string {
  const l = session.lora;
  if (!l) return 'full fine-tuning';
  return `LoRA r ${l.rank} alpha ${l.alpha} on ${l.targets.join(',')} (${(trainable / 1e6).toFixed(2)}M trainable, base frozen in ${session.baseDtype})`;
}
