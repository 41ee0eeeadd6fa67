/**
 * The work of one training step, counted (holds on any hardware): dispatches and workgroups of
 * each op of the forward pass, the loss and the backward pass, as a GPU's untuned runtime would
 * record them, for the tiny preset and a SmolLM2-135M-shaped model (random weights). Markdown,
 * or JSON with --json. With the SmolLM2-shaped model, also one policy-gradient micro-batch of an
 * update as packRollouts packs it (a prompt its samples share, then each completion), its LM head
 * on the completion tokens alone, beside the same micro-batch with the head on every row.
 *
 *   npm run train-counts -- [--rows 4] [--tokens 512] [--prompt 200] [--samples 4] [--completion 300]
 *                           [--micro-tokens 2048] [--lora] [--no-smollm] [--json]
 *
 * In Node on Dawn. Nothing is run, only recorded: the SmolLM2-shaped model's weights, gradients
 * and activations (about 2 GB at 4 × 512 tokens) are allocated but never computed.
 */
import { isMain, runCli, type CliDescription, type OptionValues } from '../src/cli/options';
import { Runtime } from '../src/gpu/runtime';
import { PRESETS, type LlamaConfig } from '../src/model/config';
import { Transformer } from '../src/model/transformer';
import { nodePlatform } from '../src/platform/node';
import { DEFAULT_LORA, initialLora } from '../src/model/lora';
import { opRows } from './decodeCounts';
import { policyStepCounts, SMOLLM2_135M, trainStepCounts, type PolicyCounts, type TrainCounts } from './trainCounts';
import { POSITION_GRANULE } from '../src/train/session';

const options = {
  rows: { type: 'number', default: 4, min: 1, help: 'rows per step (B)' },
  tokens: { type: 'number', default: 512, min: 2, help: 'tokens per row of the SmolLM2-shaped model (T; the tiny preset takes its 256 positions)' },
  prompt: { type: 'number', default: 200, min: 1, help: "the policy micro-batch's prompt tokens a problem's samples share" },
  samples: { type: 'number', default: 4, min: 1, help: 'completions a prompt (the Solver samples of one problem)' },
  completion: { type: 'number', default: 300, min: 1, help: 'tokens a completion' },
  'micro-tokens': { type: 'number', default: 2048, min: 2, help: "tokens a policy micro-batch (the loop's default budget)" },
  lora: { type: 'flag', help: 'train a rank-16 adapter on every projection, the base frozen (as the lab trains a pretrained model)' },
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

function policyTable(title: string, p: PolicyCounts): string {
  const ops = [...new Set([...Object.keys(p.everyRow.ops), ...Object.keys(p.ops)])].sort();
  const cell = (c: TrainCounts, op: string) => [String(c.ops[op]?.dispatches ?? 0), String(c.ops[op]?.workgroups ?? 0)];
  const rows = [
    ...ops.map((op) => [op, ...cell(p.everyRow, op), ...cell(p, op)]),
    ['**total**', String(p.everyRow.dispatches), String(p.everyRow.workgroups), String(p.dispatches), String(p.workgroups)],
    ['**matmul GFLOP**', p.everyRow.matmulGflop.toFixed(1), '', p.matmulGflop.toFixed(1), ''],
  ];
  return [
    title, '',
    `LM head rows: ${p.B * p.T} (every row) → ${p.lossRows} (the completion tokens).`, '',
    '| op | dispatches, head on every row | workgroups | dispatches, head on the loss rows | workgroups |', '|:--|--:|--:|--:|--:|',
    ...rows.map((r) => `| ${r.join(' | ')} |`), '',
  ].join('\n');
}

async function main(o: OptionValues<typeof options>): Promise<void> {
  // [name, shape, tokens a row of the step, whether to count a policy micro-batch]
  const models: [string, LlamaConfig, number, boolean][] = [['tiny preset', PRESETS.tiny, PRESETS.tiny.max_position_embeddings, false]];
  if (!o['no-smollm']) models.push(['SmolLM2-135M-shaped', SMOLLM2_135M, o.tokens, true]);
  const adapter = o.lora ? `, LoRA r${DEFAULT_LORA.rank}` : '';
  const out: Record<string, TrainCounts | PolicyCounts> = {};
  for (const [name, config, T, policy] of models) {
    const rt = await Runtime.create(nodePlatform(), { serialRows: false });
    const model = Transformer.init(rt, config, 1);
    if (o.lora) model.enableLora(DEFAULT_LORA, initialLora(config, DEFAULT_LORA, 1));
    out[name] = trainStepCounts(model, o.rows, T);
    if (!o.json) console.log(table(`### ${name}${adapter}, ${o.rows} × ${T} tokens: a GPU's untuned plan`, out[name]));
    if (policy) {
      const shape = { prompt: o.prompt, samples: o.samples, completion: o.completion, tokens: o['micro-tokens'], granule: POSITION_GRANULE };
      const counts = policyStepCounts(model, shape);
      out[`${name}, policy micro-batch`] = counts;
      const what = `a prompt of ${shape.prompt} tokens shared by ${shape.samples} completions of ${shape.completion}, ${counts.B} × ${counts.T} tokens`;
      if (!o.json) console.log(policyTable(`### ${name}${adapter}, one policy micro-batch (${what}): a GPU's untuned plan`, counts));
    }
    model.destroy();
    rt.destroy();
  }
  if (o.json) console.log(JSON.stringify(out, null, 2));
}

if (isMain(import.meta.url)) await runCli(trainCountsCli, main);
