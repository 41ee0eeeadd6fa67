/**
 * Host time per dispatch of one decode step (hostCost.ts) for SmolLM2-135M- and
 * Qwen2.5-0.5B-shaped models (random weights, f16 base) at 1 and 32 rows. Markdown.
 *
 *   npm run host-cost -- [--model tiny] [--layers 2] [--vocab 4096] [--steps 50]
 *
 * In Node on Dawn (SwiftShader here; SAGE_GPU=hardware for a GPU). --layers and --vocab cut
 * the models (the widths stay theirs) so that SwiftShader runs the steps in seconds; the host's
 * work per dispatch hardly depends on them. The clock is the main thread's CPU time where Linux
 * tells it (threadClock.ts): on SwiftShader the submitted work runs on other threads of
 * the same CPUs, and on a shared machine other processes do, neither of which is host work.
 */
import { isMain, runCli, type CliDescription, type OptionValues } from '../src/cli/options';
import { Runtime } from '../src/gpu/runtime';
import { PRESETS, type LlamaConfig } from '../src/model/config';
import { nodePlatform } from '../src/platform/node';
import { QWEN25_05B } from './decodeCounts';
import { hostCostPerDispatch } from './hostCost';
import { threadCpuClock } from './threadClock';
import { SMOLLM2_135M } from './trainCounts';
import { isolatedCache } from './trainCore';

const MODELS: Record<string, LlamaConfig> = { 'smollm2-135m': SMOLLM2_135M, 'qwen2.5-0.5b': QWEN25_05B, tiny: PRESETS.tiny };

const options = {
  model: { type: 'string', multiple: true, choices: Object.keys(MODELS), help: 'model shapes, random weights in f16 (default smollm2-135m,qwen2.5-0.5b)' },
  layers: { type: 'int', min: 1, help: 'decoder layers kept (default: the model\'s)' },
  vocab: { type: 'int', min: 256, help: 'vocabulary kept (default: the model\'s)' },
  steps: { type: 'int', default: 50, min: 1, help: 'decode steps timed per figure' },
} as const;

export const hostCostCli: CliDescription<typeof options> = {
  name: 'host-cost',
  summary: 'Host time per dispatch of one decode step (recording and submitting it), at 1 and 32 rows.',
  options,
};

async function main(o: OptionValues<typeof options>): Promise<void> {
  // An isolated tuning cache and no tuning: every run records the same untuned plan.
  const rt = await Runtime.create(isolatedCache(nodePlatform()), { tuning: false });
  const a = rt.ctx.adapter;
  const clock = threadCpuClock() ?? undefined;
  console.log(`adapter: ${[a.vendor, a.architecture, a.description].filter(Boolean).join(' / ')}; clock: ${clock ? "the main thread's CPU time" : 'wall'}; ${o.steps} steps timed per figure\n`);
  console.log('| model | layers | vocab | rows | dispatches/step | host µs/step | host µs/dispatch | of which recording | of which submitting |');
  console.log('|:--|--:|--:|--:|--:|--:|--:|--:|--:|');
  try {
    for (const name of o.model.length ? o.model : ['smollm2-135m', 'qwen2.5-0.5b']) {
      const full = MODELS[name]!;
      const config = { ...full, num_hidden_layers: o.layers ?? full.num_hidden_layers, vocab_size: o.vocab ?? full.vocab_size };
      for (const rows of [1, 32]) {
        const h = await hostCostPerDispatch(rt, config, rows, { steps: o.steps, clock });
        const cells = [name, config.num_hidden_layers, config.vocab_size, rows, h.dispatches, h.usPerStep.toFixed(0), ...[h.usPerDispatch, h.usRecordPerDispatch, h.usSubmitPerDispatch].map((x) => x.toFixed(1))];
        console.log(`| ${cells.join(' | ')} |`);
      }
    }
  } finally {
    rt.destroy();
  }
}

if (isMain(import.meta.url)) await runCli(hostCostCli, main);
