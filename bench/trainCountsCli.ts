/**
 * The work of one training step, counted (holds on any hardware): dispatches and workgroups of
 * each op of the forward pass, the loss and the backward pass, as a GPU's untuned runtime would
 * record them, for the tiny preset and a SmolLM2-135M-shaped model (random weights). Markdown,
 * or JSON with --json.
 *
 *   npm run train-counts -- [--rows 4] [--tokens 512] [--no-smollm] [--json]
 *
 * In Node on Dawn. Nothing is run, only recorded: the SmolLM2-shaped model's weights, gradients
 * and activations (about 2 GB at 4 × 512 tokens) are allocated but never computed.
 */
import { isMain, runCli, type CliDescription, type OptionValues } from '../src/cli/options';
import { Runtime } from '../src/gpu/runtime';
import { PRESETS, type LlamaConfig } from '../src/model/config';
import { Transformer } from '../src/model/transformer';
import { nodePlatform } from '../src/platform/node';
import { opRows } from './decodeCounts';
import { SMOLLM2_135M, trainStepCounts, type TrainCounts } from './trainCounts';

const options = {
  rows: { type: 'number', default: 4, min: 1, help: 'rows per step (B)' },
  tokens: { type: 'number', default: 512, min: 2, help: 'tokens per row of the SmolLM2-shaped model (T; the tiny preset takes its 256 positions)' },
  'no-smollm': { type: 'flag', help: 'the tiny preset only' },
  json: { type: 'flag', help: 'print the counts as JSON' },
} as const;

export const trainCountsCli: CliDescription<typeof options> = {
  name: 'train-counts',
  summary: "Dispatches and workgroups of one training step, per op, on a GPU's untuned plan.",
  options,
};

function table(title: string, c: TrainCounts): string {
  const rows = [...opRows({ ...c, weightBytes: 0, modelBytes: 0 }), ['**total**', String(c.dispatches), String(c.workgroups)]];
  return [title, '', '| op | dispatches | workgroups |', '|:--|--:|--:|', ...rows.map((r) => `| ${r.join(' | ')} |`), ''].join('\n');
}

async function main(o: OptionValues<typeof options>): Promise<void> {
  const models: [string, LlamaConfig, number][] = [['tiny preset', PRESETS.tiny, PRESETS.tiny.max_position_embeddings]];
  if (!o['no-smollm']) models.push(['SmolLM2-135M-shaped', SMOLLM2_135M, o.tokens]);
  const out: Record<string, TrainCounts> = {};
  for (const [name, config, T] of models) {
    const rt = await Runtime.create(nodePlatform(), { serialRows: false });
    const model = Transformer.init(rt, config, 1);
    out[name] = trainStepCounts(model, o.rows, T);
    if (!o.json) console.log(table(`### ${name}, ${o.rows} × ${T} tokens: a GPU's untuned plan`, out[name]));
    model.destroy();
    rt.destroy();
  }
  if (o.json) console.log(JSON.stringify(out, null, 2));
}

if (isMain(import.meta.url)) await runCli(trainCountsCli, main);
