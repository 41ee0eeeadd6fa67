/**
 * Host time per dispatch of one decode step (hostCost.ts) for SmolLM2-135M- and
 * Qwen2.5-0.5B-shaped models (random weights, f16 base) at 1 and 32 rows. Markdown.
 *
 *   npm run host-cost -- [--model tiny] [--layers 2] [--vocab 4096] [--steps 50] [--prompt 64] [--slots 512] [--backend null] [--lora] [--profile submits]
 *
 * Each figure twice, in one run: the step replayed from its captured plan (as generation makes
 * it) and recorded through the model's code every token (as before plans), and their ratio.
 * With --profile, the replayed step again in a runtime that profiles it that way (ProfileMode),
 * and its cost over the unprofiled one's: what timing a run adds to the host's share of it.
 *
 * In Node on Dawn (SwiftShader here; SAGE_GPU=hardware for a GPU). --layers and --vocab cut
 * the models (the widths stay theirs) so that SwiftShader runs the steps in seconds; the host's
 * work per dispatch hardly depends on them. The clock is the main thread's CPU time where Linux
 * tells it (threadClock.ts): on SwiftShader the submitted work runs on other threads of
 * the same CPUs, and on a shared machine other processes do, neither of which is host work.
 * That clock advances in scheduler ticks (4 ms here), and an emulated GPU sharing two cores
 * slows the host's own thread, so on a machine without a GPU `--backend null` is the clean
 * measure: Dawn's null backend validates and records every call as on a GPU and runs nothing,
 * so the wall clock times the host's work alone (its kernels are those Dawn offers a GPU:
 * subgroups, f16, no row-per-invocation kernels).
 */
import { isMain, runCli, type CliDescription, type OptionValues } from '../src/cli/options';
import type { ProfileMode } from '../src/gpu/profiler';
import { Runtime } from '../src/gpu/runtime';
import { PRESETS, type LlamaConfig } from '../src/model/config';
import { DEFAULT_LORA } from '../src/model/lora';
import { nodePlatform } from '../src/platform/node';
import { QWEN25_05B } from './decodeCounts';
import { hostCostPerDispatch, type HostCost } from './hostCost';
import { threadCpuClock } from './threadClock';
import { SMOLLM2_135M } from './trainCounts';
import { isolatedCache } from './trainCore';

const MODELS: Record<string, LlamaConfig> = { 'smollm2-135m': SMOLLM2_135M, 'qwen2.5-0.5b': QWEN25_05B, tiny: PRESETS.tiny };

const options = {
  model: { type: 'string', multiple: true, choices: Object.keys(MODELS), help: 'model shapes, random weights in f16 (default smollm2-135m,qwen2.5-0.5b)' },
  layers: { type: 'int', min: 1, help: 'decoder layers kept (default: the model\'s)' },
  vocab: { type: 'int', min: 256, help: 'vocabulary kept (default: the model\'s)' },
  steps: { type: 'int', default: 50, min: 1, help: 'decode steps timed per figure' },
  prompt: { type: 'int', default: 64, min: 1, help: 'prompt tokens per row' },
  slots: { type: 'int', default: 512, min: 2, help: 'cache slots per prefill (the steps a prefill serves: slots − prompt)' },
  backend: { type: 'string', choices: ['default', 'null'], default: 'default', help: "Dawn's backend: its default (Vulkan), or null (no GPU work: the host's alone, on the wall clock)" },
  lora: { type: 'flag', help: "with the lab's LoRA adapter (rank 16 on every projection), kept apart from the f16 base as the loop's rollouts run" },
  profile: { type: 'string', multiple: true, choices: ['submits', 'dispatches'], help: 'also the replayed step profiled so (timestamps a submit, or a pass a dispatch), beside it unprofiled' },
} as const;

export const hostCostCli: CliDescription<typeof options> = {
  name: 'host-cost',
  summary: 'Host time per dispatch of one decode step (recording and submitting it), at 1 and 32 rows.',
  options,
};

async function main(o: OptionValues<typeof options>): Promise<void> {
  // An isolated tuning cache and no tuning: every run records the same untuned plan.
  const nullBackend = o.backend === 'null';
  const platform = () => isolatedCache(nodePlatform(nullBackend ? { dawnFlags: ['backend=null'] } : {}));
  const rt = await Runtime.create(platform(), { tuning: false });
  const profiled = o.profile.length ? await Runtime.create(platform(), { tuning: false, profile: true }) : null;
  if (profiled && !profiled.profiler) {
    profiled.destroy();
    rt.destroy();
    throw new Error('host-cost: --profile needs an adapter with timestamp queries, and this one has none');
  }
  const lora = o.lora ? DEFAULT_LORA : undefined;
  const a = rt.ctx.adapter;
  const clock = nullBackend ? undefined : (threadCpuClock() ?? undefined);
  const adapter = nullBackend ? "Dawn's null backend (no GPU work)" : [a.vendor, a.architecture, a.description].filter(Boolean).join(' / ');
  console.log(`adapter: ${adapter}; clock: ${clock ? "the main thread's CPU time" : 'wall'}; ${o.steps} steps timed per figure, ${o.prompt}-token prompts, ${o.slots} cache slots\n`);
  console.log('| model | layers | vocab | rows | step | dispatches/step | host µs/step | host µs/dispatch | of which recording | of which submitting | recorded / replayed |');
  console.log('|:--|--:|--:|--:|:--|--:|--:|--:|--:|--:|--:|');
  try {
    for (const name of o.model.length ? o.model : ['smollm2-135m', 'qwen2.5-0.5b']) {
      const full = MODELS[name]!;
      const config = { ...full, num_hidden_layers: o.layers ?? full.num_hidden_layers, vocab_size: o.vocab ?? full.vocab_size };
      for (const rows of [1, 32]) {
        const [recorded, replayed] = await hostCostPerDispatch(rt, config, rows, [false, true].map((replay) => ({ steps: o.steps, prompt: o.prompt, slots: o.slots, clock, replay })), lora);
        const line = (h: HostCost, step: string, ratio: string) => {
          const cells = [`${name}${lora ? ' + LoRA r16' : ''}`, config.num_hidden_layers, config.vocab_size, rows, step, h.dispatches, h.usPerStep.toFixed(0), ...[h.usPerDispatch, h.usRecordPerDispatch, h.usSubmitPerDispatch].map((x) => x.toFixed(1)), ratio];
          console.log(`| ${cells.join(' | ')} |`);
        };
        line(recorded!, 'recorded', '');
        line(replayed!, 'replayed', `${(recorded!.usPerDispatch / replayed!.usPerDispatch).toFixed(2)}×`);
        for (const mode of o.profile as ProfileMode[]) {
          profiled!.profiler!.mode = mode;
          const [h] = await hostCostPerDispatch(profiled!, config, rows, [{ steps: o.steps, prompt: o.prompt, slots: o.slots, clock }], lora);
          await profiled!.profile();
          profiled!.profiler!.reset();
          line(h!, `replayed, profiled (${mode})`, `${(h!.usPerDispatch / replayed!.usPerDispatch).toFixed(2)}× the unprofiled`);
        }
      }
    }
  } finally {
    rt.destroy();
    profiled?.destroy();
  }
}

if (isMain(import.meta.url)) await runCli(hostCostCli, main);
