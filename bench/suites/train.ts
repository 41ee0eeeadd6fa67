/**
 * Training throughput: tokens/s of a whole training step (forward, backward, AdamW, and the
 * host reads a real loop needs every step) for the built-in presets, ours against the same
 * model trained with jax-js (bench/peers/jaxLlama.ts: valueAndGrad + AdamW under one jit).
 * Everything starts from the same weights and sees the same batches, so the losses double
 * as a check that all contenders train the same model. Our Node (Dawn) figure comes from
 * bench/node/train.ts, run by scripts/bench.mjs before the page opens.
 */
import { Runtime } from '../../src/gpu/runtime';
import { browserPlatform } from '../../src/platform/browser';
import { createJaxLlamaTrainer } from '../peers/jaxLlama';
import { errorMessage, type Suite, type SuiteOptions, type Table } from '../suite';
import {
  ADAMW,
  initialWeights,
  isolatedCache,
  LR,
  makeBatches,
  measure,
  oursTrainer,
  presetConfig,
  profileOurs,
  workloadLabel,
  workloads,
  type Entrant,
  type KernelProfile,
  type Measurement,
  type NodeTrainResult,
  type Workload,
} from '../trainCore';

const OURS = 'ours';
const OURS_NODE = 'ours (Node)';
const JAX_GPU = 'jax-js webgpu';
const JAX_WASM = 'jax-js wasm';

/** Fresh weights give every next token probability ≈ 1/vocab. */
const INITIAL_LOSS_SLACK = 0.15;
/**
 * The contenders start from identical weights and batches, so their first losses differ by
 * f32 summation order only (~1e-6 measured); a wrong layer, mask or scale moves it by > 1e-2.
 */
const FIRST_LOSS_TOLERANCE = 1e-3;

interface WorkloadResult {
  workload: Workload;
  results: Record<string, Measurement>;
  errors: Record<string, string>;
  node?: NodeTrainResult;
  profile: KernelProfile | null;
  /** Largest |loss − ours| per peer over the steps both ran. */
  lossGap: Record<string, number>;
}

const fmt = (x: number | undefined, digits = 0) => (x === undefined ? 'FAILED' : x.toFixed(digits));
const ratio = (x: number | undefined, y: number | undefined) =>
  x === undefined || y === undefined ? '-' : `${(x / y).toFixed(2)}×`;

export const trainSuite: Suite = async ({ quick, log, node }: SuiteOptions) => {
  const failures: string[] = [];
  const nodeResults = node as NodeTrainResult[] | { error: string } | undefined;
  if (nodeResults && !Array.isArray(nodeResults)) failures.push(`${OURS_NODE}: ${nodeResults.error}`);
  if (!nodeResults) log('train: no Node results were handed to the page (run through npm run bench for them)');

  const jax = await import('@jax-js/jax');
  const devices = await jax.init('webgpu', 'wasm');
  const peers = ([
    ['webgpu', JAX_GPU],
    ['wasm', JAX_WASM],
  ] as const).filter(([device, name]) => {
    if (devices.includes(device)) return true;
    failures.push(`${name}: backend unavailable (jax-js initialised ${devices.join(', ') || 'nothing'})`);
    return false;
  });
  const jaxAdapter = devices.includes('webgpu') ? jax.getWebGPUDevice().adapterInfo : null;
  log(`train: jax-js devices ${devices.join(', ')}; jax-js webgpu adapter ${jaxAdapter?.architecture ?? '-'}`);

  const platform = isolatedCache(browserPlatform);
  const out: WorkloadResult[] = [];
  for (const w of workloads(quick)) {
    const config = presetConfig(w);
    const flat = initialWeights(w);
    const batches = makeBatches(w.B, w.T);
    const rt = await Runtime.create(platform);
    if (jaxAdapter && rt.device.adapterInfo.architecture !== jaxAdapter.architecture) {
      failures.push(`ours and jax-js run on different adapters (${rt.device.adapterInfo.architecture} vs ${jaxAdapter.architecture})`);
    }
    const entrants: Entrant[] = [{ name: OURS, trainer: oursTrainer(rt, w, flat) }];
    for (const [device, name] of peers) {
      try {
        entrants.push({
          name,
          trainer: createJaxLlamaTrainer(jax, config, flat, { device, B: w.B, T: w.T, lr: LR, adamw: ADAMW }),
        });
      } catch (e) {
        failures.push(`${name} ${workloadLabel(w)}: ${errorMessage(e)}`);
      }
    }
    log(`train ${workloadLabel(w)}: ${w.warmup} warm-up + ${w.steps} timed steps, interleaved: ${entrants.map((e) => e.name).join(', ')}`);
    const { results, errors } = await measure(w, entrants, batches, log);
    rt.destroy();
    for (const [name, error] of Object.entries(errors)) failures.push(`${name} ${workloadLabel(w)}: ${error}`);

    log(`train ${workloadLabel(w)}: ours, profiled pass of ${w.profileSteps} step(s)`);
    let profile: KernelProfile | null = null;
    try {
      profile = await profileOurs((options) => Runtime.create(platform, options), w, flat, batches);
      if (!profile) log('train: the adapter has no timestamp-query; no per-kernel breakdown');
    } catch (e) {
      failures.push(`ours ${workloadLabel(w)} profile: ${errorMessage(e)}`);
    }

    const nodeRun = Array.isArray(nodeResults)
      ? nodeResults.find((r) => r.workload.preset === w.preset && r.workload.B === w.B && r.workload.T === w.T)
      : undefined;
    if (Array.isArray(nodeResults) && !nodeRun) failures.push(`${OURS_NODE} ${workloadLabel(w)}: no result`);
    if (nodeRun?.error) failures.push(`${OURS_NODE} ${workloadLabel(w)}: ${nodeRun.error}`);

    // Every contender must start near ln(vocab), agree with ours on the first loss, and learn.
    const lnV = Math.log(config.vocab_size);
    const runs: [string, Measurement | undefined][] = [
      ...Object.entries(results),
      [OURS_NODE, nodeRun?.result],
    ];
    const lossGap: Record<string, number> = {};
    const ours = results[OURS];
    for (const [name, m] of runs) {
      if (!m) continue;
      const first = m.losses[0]!;
      const last = m.losses[m.losses.length - 1]!;
      if (Math.abs(first - lnV) > INITIAL_LOSS_SLACK) {
        failures.push(`${name} ${workloadLabel(w)}: first loss ${first.toFixed(4)} is not ≈ ln(${config.vocab_size}) = ${lnV.toFixed(4)}`);
      }
      if (!(last < first)) failures.push(`${name} ${workloadLabel(w)}: loss did not fall (${first.toFixed(4)} → ${last.toFixed(4)})`);
      if (ours && name !== OURS) {
        const gap = Math.abs(first - ours.losses[0]!);
        if (!(gap <= FIRST_LOSS_TOLERANCE)) {
          failures.push(`${name} ${workloadLabel(w)}: first loss ${first.toFixed(6)} differs from ours ${ours.losses[0]!.toFixed(6)}: not the same model`);
        }
        const n = Math.min(m.losses.length, ours.losses.length);
        lossGap[name] = Math.max(...Array.from({ length: n }, (_, i) => Math.abs(m.losses[i]! - ours.losses[i]!)));
      }
    }
    out.push({ workload: w, results, errors, node: nodeRun, profile, lossGap });
    log(
      `train ${workloadLabel(w)}: tokens/s ` +
        [...runs].map(([n, m]) => `${n} ${fmt(m?.tokensPerS)}`).join(', '),
    );
  }

  const tps = (r: WorkloadResult, name: string) => r.results[name]?.tokensPerS;
  const steps = (w: Workload) => `median of ${w.steps} after ${w.warmup} warm-up`;
  const throughput: Table = {
    title: 'Training throughput, tokens/s (forward + backward + AdamW + per-step host reads)',
    columns: ['preset B×T', 'steps', 'ours', OURS_NODE, JAX_GPU, JAX_WASM, 'ours/jax webgpu', 'ours/jax wasm', 'ours/best jax-js'],
    rows: out.map((r) => {
      const o = tps(r, OURS);
      const jg = tps(r, JAX_GPU);
      const jw = tps(r, JAX_WASM);
      const best = [jg, jw].filter((x): x is number => x !== undefined);
      return [
        workloadLabel(r.workload),
        steps(r.workload),
        fmt(o, 1),
        r.node ? fmt(r.node.result?.tokensPerS, 1) : '-',
        fmt(jg, 1),
        fmt(jw, 1),
        ratio(o, jg),
        ratio(o, jw),
        ratio(o, best.length ? Math.max(...best) : undefined),
      ];
    }),
    notes: [
      'ours: zeroGrad, forwardLoss, backward, AdamW.update (GPU grad-norm clip), then the grad-norm stats and the per-token',
      'losses are read back every step (browser page and Node/Dawn, same adapter kind). jax-js: valueAndGrad of the same',
      'model + global-norm clip + AdamW, all under one jit; the loss is read back every step. All start from identical',
      `weights, see the same batches (a fresh upload every step) and use AdamW(lr ${LR}, β ${ADAMW.beta1}/${ADAMW.beta2}, wd ${ADAMW.weightDecay} on matrices, clip ${ADAMW.maxGradNorm}).`,
      'jax-js wasm runs on the CPU (a worker per core), not WebGPU: listed because on a machine without a GPU it is what',
      "a jax-js user would pick. Ours starts with an empty autotune cache and tunes its matmul shapes after the first warm-up step.",
    ],
  };

  const contenders = [OURS, OURS_NODE, JAX_GPU, JAX_WASM];
  const lossTable: Table = {
    title: 'Step time and loss (first step → last step)',
    columns: ['preset B×T', 'contender', 'ms/step', 'first step ms', 'loss first', 'loss last', 'max |Δloss| vs ours'],
    rows: out.flatMap((r) =>
      contenders.flatMap((name) => {
        const m = name === OURS_NODE ? r.node?.result : r.results[name];
        if (!m) return [];
        return [[
          workloadLabel(r.workload),
          name,
          fmt(m.medianMs),
          fmt(m.warmupMs[0]),
          m.losses[0]!.toFixed(4),
          m.losses[m.losses.length - 1]!.toFixed(4),
          name === OURS ? '-' : r.lossGap[name] !== undefined ? r.lossGap[name]!.toExponential(1) : '-',
        ]];
      }),
    ),
    notes: [
      `Losses are the mean next-token cross-entropy of each step's batch; ln(264) = ${Math.log(264).toFixed(4)}. The first step`,
      'includes compiling every pipeline (and, for jax-js, tracing and compiling the jitted step).',
    ],
  };

  const kernelTable = (where: string, r: (typeof out)[number], p: KernelProfile, wall: number | undefined): Table => ({
    title: `Ours (${where}), GPU time per kernel, ${workloadLabel(r.workload)} (timestamp queries, ${p.steps} profiled step(s))`,
    columns: ['kernel', 'calls/step', 'GPU ms/step', 'share'],
    rows: [
      ...p.kernels.map((k) => [k.label, fmt(k.callsPerStep, k.callsPerStep % 1 ? 1 : 0), k.msPerStep.toFixed(1), `${(100 * k.share).toFixed(1)}%`]),
      ['Σ GPU', fmt(p.kernels.reduce((n, k) => n + k.callsPerStep, 0)), p.gpuMsPerStep.toFixed(1), '100%'],
    ],
    notes: [
      `Wall time per step: ${fmt(wall)} ms unprofiled (median above), ${fmt(p.wallMsPerStep)} ms in this profiled pass, where every`,
      'dispatch gets its own compute pass; wall − Σ GPU is host work, submission and readback.',
    ],
  });
  const kernelTables: Table[] = out.flatMap((r) => [
    ...(r.profile ? [kernelTable('browser', r, r.profile, r.results[OURS]?.medianMs)] : []),
    ...(r.node?.profile ? [kernelTable('Node', r, r.node.profile, r.node.result?.medianMs)] : []),
  ]);

  return {
    suite: 'train',
    tables: [throughput, lossTable, ...kernelTables],
    data: {
      quick,
      lr: LR,
      adamw: ADAMW,
      jaxDevices: devices,
      workloads: out,
    },
    failures,
  };
};
