/**
 * One SAGE step on a Qwen2.5-0.5B-shaped model as the lab runs a pretrained model: the base in
 * f16 and frozen, a LoRA adapter training (DEFAULT_LORA), the instruct prompts and the settings
 * the lab resolves for a pretrained checkpoint through LoRA (resolveRunSettings: lr 1e-5, the
 * pretrained token limits), on the shipped curriculum seeds. Per phase: wall and GPU time (each
 * dispatch timed by timestamp queries), counts, generation against the decode rate of its batch
 * size; and the GPU's busy share of the step.
 *
 * The weights are random (bench/randomCheckpoint.ts), so this is the cost of a step, not its
 * outcome: every completion runs to its token limit (no EOS is ever likely), no proposed problem
 * parses, so no problem is admitted and the difficulty phase has nothing to sample; the Solver
 * solves seeds. Prompts are byte-level (a token a byte, about 4× what Qwen's tokenizer makes of
 * them), the LM head Qwen's 151,936 columns.
 */
import type { Problem } from '../src/data/problem';
import type { Runtime } from '../src/gpu/runtime';
import { DEFAULT_LORA } from '../src/model/lora';
import { resolveRunSettings, checkpointStart } from '../src/sage/runSpec';
import { QWEN25_05B } from './decodeCounts';
import { benchLoopMethod, LOOP_PHASES, type LoopBenchRow } from './loopCore';
import { randomCheckpoint } from './randomCheckpoint';
import type { Table } from './suite';

export interface SageStepFigures {
  model: string;
  layers: number;
  vocab: number;
  quick: boolean;
  /** The settings the step ran with, as the lab resolved them. */
  settings: { templates: string; lr: number; maxNewTokens: Record<string, number>; proposals: number; trainProblems: number; solverSamples: number; loraRank: number };
  row: LoopBenchRow;
  /** The phases' GPU time over the step's wall time (medians over the steps). */
  gpuBusyShare: number;
}

/** Token limits of a quick run (a smoke test of the measurement on a CPU adapter). */
const QUICK_TOKENS = { challenger: 8, planner: 8, solver: 8, critic: 8 };

/** `rt` must profile (Runtime.create with profile: true) for the GPU times. */
export async function sageStep(
  rt: Runtime,
  { quick, seeds, log, steps = quick ? 1 : 2 }: { quick: boolean; seeds: readonly Problem[]; log(m: string): void; steps?: number },
): Promise<SageStepFigures> {
  const config = quick ? { ...QWEN25_05B, num_hidden_layers: 1, vocab_size: 4096 } : QWEN25_05B;
  const resolved = resolveRunSettings({ start: checkpointStart(true), templates: 'instruct', lora: true, method: 'sage' });
  const settings = quick ? { ...resolved, maxNewTokens: QUICK_TOKENS } : resolved;
  const shape = `${config.num_hidden_layers} layer(s) of width ${config.hidden_size}, vocabulary ${config.vocab_size}`;
  log(`sage step: ${shape}${quick ? ', 8 new tokens a role (quick)' : ''}, f16 base, LoRA r${DEFAULT_LORA.rank}, ${steps} step(s)`);
  const row = await benchLoopMethod(
    rt,
    { source: { kind: 'checkpoint', checkpoint: randomCheckpoint(config), name: 'Qwen2.5-0.5B-shaped (random)', baseDtype: 'f16' }, lora: DEFAULT_LORA },
    seeds, settings, steps, log,
  );
  if (row.error) throw new Error(`sage step: ${row.error}`);
  const gpuS = Object.values(row.phases).reduce((n, p) => n + p.gpuS, 0);
  return {
    model: 'Qwen2.5-0.5B', layers: config.num_hidden_layers, vocab: config.vocab_size, quick,
    settings: {
      templates: 'instruct', lr: settings.lr, maxNewTokens: { ...settings.maxNewTokens }, proposals: settings.proposals,
      trainProblems: settings.trainProblems, solverSamples: settings.solverSamples, loraRank: DEFAULT_LORA.rank,
    },
    row,
    gpuBusyShare: row.seconds.total > 0 ? gpuS / row.seconds.total : 0,
  };
}

const fmt = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const pct = (x: number) => `${fmt(100 * x, 0)}%`;

export function sageStepTables(f: SageStepFigures, where: string): Table[] {
  const r = f.row;
  const t = f.settings.maxNewTokens;
  return [
    {
      title: `One SAGE step, ${f.model} shape (random, f16 base, LoRA r${f.settings.loraRank}), ${where}${f.quick ? ', QUICK (1 layer, vocabulary 4,096, 8 tokens a role, untuned: a smoke test)' : ''}`,
      columns: ['phase', 'wall s', 'GPU s', 'GPU busy', 'rows', 'tokens generated', 'generated tok/s', 'decode tok/s at rows'],
      rows: [
        ...LOOP_PHASES.filter((p) => r.phases[p]).map((p) => {
          const ph = r.phases[p]!;
          const g = ph.generation;
          return [p, fmt(ph.wallS, 2), fmt(ph.gpuS, 2), pct(ph.gpuS / ph.wallS), g ? String(g.rows) : '-', g ? fmt(g.tokens, 0) : '-', g ? fmt(g.tokens / g.seconds, 0) : '-', g ? fmt(g.decodeTokensPerS, 0) : '-'];
        }),
        ['step', fmt(r.seconds.total, 2), fmt(f.gpuBusyShare * r.seconds.total, 2), pct(f.gpuBusyShare), '', fmt(r.generatedTokens, 0), fmt(r.generationTokensPerS, 0), ''],
      ],
      notes: [
        `the lab's settings for a pretrained checkpoint through LoRA: ${f.settings.templates} prompts, lr ${f.settings.lr}, token limits Challenger ${t.challenger}, Planner ${t.planner}, Solver ${t.solver}, Critic ${t.critic};`,
        `${f.settings.proposals} proposals, ${f.settings.trainProblems} problems × ${f.settings.solverSamples} Solver samples; medians over ${r.stepSeconds.length} step(s) after the run's kernels were tuned (${fmt(r.prepare.seconds, 0)} s, ${r.prepare.tuned} shapes);`,
        'GPU s: the time the GPU spent on the phase\'s submits (two timestamps a command buffer, the work encoded as unprofiled: the union of their spans); GPU busy: GPU s over wall s;',
        'decode tok/s at rows: the same model decoding that many rows of 64-token prompts on the pipelined path, for scale (the report\'s way: rows·(N−1) over t(N) − t(1));',
        'Random weights: completions run to their limits, no proposal parses (nothing admitted), the Solver solves seeds; prompts byte-level.',
      ],
    },
    {
      title: `Where the step's GPU time goes: each phase's slowest kernels, ${where}`,
      columns: ['phase', 'kernel', 'workgroups', 'dispatches a step', 'GPU ms a step', 'share of the phase\'s GPU time'],
      rows: LOOP_PHASES.flatMap((p) => {
        const ph = r.phases[p];
        if (!ph || ph.kernelsGpuS <= 0) return [];
        return ph.kernels.map((k) => [p, k.label, String(k.workgroups), fmt(k.perStep, 0), fmt(k.usPerStep / 1e3, 2), pct(k.usPerStep / (1e6 * ph.kernelsGpuS))]);
      }),
      notes: [
        'one step after the timed ones, each dispatch timed in a pass of its own (slower than a plain step: passes run one after another); per (kernel, workgroups); ' +
          "the share is of that step's kernel time in the phase, which the phase's other kernels make up.",
      ],
    },
  ];
}
