/**
 * The work of one decode token, counted (holds on any hardware): dispatches and workgroups of
 * each op, and the weight bytes the matmuls request against the model's size, for the tiny
 * preset and a Qwen2.5-0.5B-shaped model (random weights, f16 base), as this adapter's runtime
 * records it and as a GPU's untuned runtime would (split-K matmuls, flash-decoding). Markdown.
 *
 *   npm run decode-counts -- [--rows 1] [--prompt 16] [--no-qwen] [--plan-only] [--lora]
 *
 * In Node on Dawn (SwiftShader here; SAGE_GPU=hardware for a GPU). The Qwen-shaped model takes
 * about 1 GB of GPU memory and runs a few steps: a minute or two on SwiftShader.
 */
import { isMain, runCli, type CliDescription, type OptionValues } from '../src/cli/options';
import { Runtime } from '../src/gpu/runtime';
import { PRESETS, type LlamaConfig } from '../src/model/config';
import { DEFAULT_LORA, initialLora } from '../src/model/lora';
import { nodePlatform } from '../src/platform/node';
import { decodeCounts, opRows, QWEN25_05B, type DecodeCounts } from './decodeCounts';
import { randomModel } from './hostCost';

const options = {
  rows: { type: 'number', default: 1, min: 1, help: 'rows decoded together (B)' },
  prompt: { type: 'number', default: 16, min: 1, help: 'prompt tokens per row' },
  'no-qwen': { type: 'flag', help: 'the tiny preset only' },
  'plan-only': { type: 'flag', help: "count the GPU plans without running them (the Qwen-shaped one takes too long on SwiftShader); this adapter's plans still run" },
  lora: { type: 'flag', help: "with the lab's LoRA adapter (rank 16 on every projection): kept apart from an f16 base at inference, as the loop's rollouts run" },
} as const;

export const decodeCountsCli: CliDescription<typeof options> = {
  name: 'decode-counts',
  summary: 'Dispatches, workgroups and weight bytes of one decode token, per op.',
  options,
};

const MiB = 2 ** 20;

function table(title: string, c: DecodeCounts): string {
  const rows = [...opRows(c), ['**total**', String(c.dispatches), String(c.workgroups)]];
  return [
    `${title}`,
    '',
    '| op | dispatches | workgroups |',
    '|:--|--:|--:|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `Weight bytes the matmuls request per step: ${(c.weightBytes / MiB).toFixed(2)} MiB, the model's weights ${(c.modelBytes / MiB).toFixed(2)} MiB ` +
      `(${((100 * c.weightBytes) / c.modelBytes).toFixed(1)}%).`,
    '',
  ].join('\n');
}

async function main(o: OptionValues<typeof options>): Promise<void> {
  const models: [string, LlamaConfig, 'f32' | 'f16'][] = [['tiny preset (f32)', PRESETS.tiny, 'f32']];
  if (!o['no-qwen']) models.push(['Qwen2.5-0.5B-shaped (f16 base, random weights)', QWEN25_05B, 'f16']);
  for (const [name, config, dtype] of models) {
    for (const gpuPlan of [false, true]) {
      // A GPU's runtime: rows shared by a workgroup and prologues fused, as on a non-SwiftShader adapter.
      const rt = await Runtime.create(nodePlatform(), gpuPlan ? { serialRows: false, fusedPrologues: true } : {});
      const model = randomModel(rt, config, dtype);
      if (o.lora) model.enableLora(DEFAULT_LORA, initialLora(config, DEFAULT_LORA, 1));
      const c = await decodeCounts(model, o.rows, { prompt: o.prompt, gpuPlan, execute: !(gpuPlan && o['plan-only']) });
      const plan = gpuPlan ? "a GPU's untuned plan" : `this adapter (${rt.ctx.adapter.architecture || rt.ctx.adapter.description || 'unknown'})`;
      console.log(table(`### ${name}${o.lora ? `, LoRA r${DEFAULT_LORA.rank} on every projection` : ''}, B = ${o.rows}, prompt ${o.prompt}: ${plan}`, c));
      model.destroy();
      rt.destroy();
    }
  }
}

if (isMain(import.meta.url)) await runCli(decodeCountsCli, main);
