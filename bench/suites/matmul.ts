/**
 * f32 matmul throughput: this project's autotuned kernels against jax-js and TensorFlow.js,
 * all on the page's WebGPU adapter. Every timed run includes reading the result back to the
 * host, because that is the only completion signal all three libraries share.
 */
import type { Array as JaxArray } from '@jax-js/jax';
import type { WebGPUBackend } from '@tensorflow/tfjs-backend-webgpu';
import { matmulTuner } from '../../src/gpu/ops/autotune';
import { matmul } from '../../src/gpu/ops/matmul';
import type { MatmulShape } from '../../src/gpu/ops/matmulVariants';
import { matmulRef } from '../../src/gpu/reference';
import { Runtime } from '../../src/gpu/runtime';
import { browserPlatform } from '../../src/platform/browser';
import {
  adapterSummary,
  errorMessage,
  median,
  rng,
  rowRelativeError,
  uniform,
  type AdapterInfoSummary,
  type Suite,
  type SuiteOptions,
  type Table,
} from '../suite';

interface Shape {
  M: number;
  K: number;
  N: number;
}

const FULL_SHAPES: Shape[] = [
  { M: 128, K: 128, N: 128 },
  { M: 256, K: 256, N: 256 },
  { M: 512, K: 512, N: 512 },
  { M: 1024, K: 1024, N: 1024 },
  // Transformer-block shapes: QKV/up projections, down projection, long-sequence tall-skinny.
  { M: 256, K: 128, N: 512 },
  { M: 256, K: 512, N: 128 },
  { M: 2048, K: 128, N: 128 },
];

const QUICK_SHAPES: Shape[] = [
  { M: 128, K: 128, N: 128 },
  { M: 256, K: 128, N: 512 },
];

/**
 * Error relative to the row's largest |value|. f32 accumulation over K ≤ 1024 with inputs
 * in [-1, 1) stays near 1e-6 here, while an indexing bug (a dropped or doubled term) costs
 * well over 1e-3, so this separates rounding from wrong answers with margin on both sides.
 */
const TOLERANCE = 1e-4;

const SEED = 0x5a6e;

/** Shapes whose calls are fast get up to MAX_RUNS timed runs, about RUN_BUDGET_MS per library. */
const RUN_BUDGET_MS = 300;
const MAX_RUNS = 41;

const CONTENDER_NAMES = ['ours', 'jax-js', 'tfjs'] as const;
type ContenderName = (typeof CONTENDER_NAMES)[number];

interface Prepared {
  /** One complete matmul, including the readback of C. */
  run(): Promise<Float32Array>;
  /** Frees the inputs; throws if the library reports leaked memory. */
  dispose(): void;
  detail: Record<string, unknown>;
}

interface Contender {
  name: ContenderName;
  adapter: AdapterInfoSummary | null;
  prepare(shape: Shape, a: Float32Array<ArrayBuffer>, b: Float32Array<ArrayBuffer>): Promise<Prepared>;
  close(): void;
}

async function oursContender(): Promise<Contender> {
  const rt = await Runtime.create(browserPlatform);
  const tuner = matmulTuner(rt);
  return {
    name: 'ours',
    adapter: adapterSummary(rt.device.adapterInfo),
    async prepare({ M, K, N }, aData, bData) {
      const shape: MatmulShape = { batch: 1, M, N, K, transA: false, transB: false };
      const t0 = performance.now();
      const tuneMs = await tuner.tune(shape);
      const tuneWallMs = performance.now() - t0;
      const a = rt.upload(aData, [M, K]);
      const b = rt.upload(bData, [K, N]);
      const out = rt.empty([M, N]);
      return {
        run: async () => {
          matmul(rt, { a, b, out });
          return rt.read(out);
        },
        dispose: () => rt.release(a, b, out),
        detail: { variant: tuner.choose(shape), tuneMedianMsByVariant: tuneMs, tuneWallMs },
      };
    },
    close: () => rt.destroy(),
  };
}

async function jaxContender(): Promise<Contender> {
  const jax = await import('@jax-js/jax');
  const available = await jax.init('webgpu');
  if (!available.includes('webgpu')) throw new Error(`jax-js: no webgpu backend (got ${available.join(', ') || 'none'})`);
  jax.defaultDevice('webgpu');
  const np = jax.numpy;
  return {
    name: 'jax-js',
    adapter: adapterSummary(jax.getWebGPUDevice().adapterInfo),
    async prepare({ M, K, N }, aData, bData) {
      // Created once and resident on the device, so runs measure the matmul, not uploads.
      const a = np.array(aData, { shape: [M, K], dtype: np.float32, device: 'webgpu' });
      const b = np.array(bData, { shape: [K, N], dtype: np.float32, device: 'webgpu' });
      await jax.blockUntilReady([a, b]);
      // jit compiles once per input shape and replays the recorded kernels afterwards.
      const f = jax.jit((x: JaxArray, y: JaxArray) => np.matmul(x, y));
      return {
        // Every jax-js call takes ownership of its arguments: pass `.ref` to keep a and b
        // alive, and `data()` consumes (frees) the result.
        run: async () => (await f(a.ref, b.ref).data()) as Float32Array,
        dispose: () => {
          const counts = [a.refCount, b.refCount];
          a.dispose();
          b.dispose();
          f.dispose();
          if (counts[0] !== 1 || counts[1] !== 1) {
            throw new Error(`jax-js inputs ended with reference counts ${counts.join(', ')} (expected 1): leak or double free`);
          }
        },
        detail: { api: 'jit(np.matmul)' },
      };
    },
    close: () => {},
  };
}

async function tfjsContender(): Promise<Contender> {
  const tf = await import('@tensorflow/tfjs-core');
  // Imported for its side effect: registering the 'webgpu' backend.
  await import('@tensorflow/tfjs-backend-webgpu');
  if (!(await tf.setBackend('webgpu'))) throw new Error('tfjs: setBackend("webgpu") failed');
  await tf.ready();
  const backend = tf.backend() as WebGPUBackend;
  return {
    name: 'tfjs',
    adapter: adapterSummary(backend.device.adapterInfo),
    async prepare({ M, K, N }, aData, bData) {
      const before = tf.memory().numTensors;
      const a = tf.tensor2d(aData, [M, K], 'float32');
      const b = tf.tensor2d(bData, [K, N], 'float32');
      return {
        run: async () => {
          const c = tf.matMul(a, b);
          try {
            return (await c.data()) as Float32Array;
          } finally {
            c.dispose();
          }
        },
        dispose: () => {
          a.dispose();
          b.dispose();
          const after = tf.memory().numTensors;
          if (after !== before) throw new Error(`tfjs: ${after - before} tensors leaked`);
        },
        detail: { api: 'tf.matMul', backend: tf.getBackend() },
      };
    },
    close: () => {},
  };
}

interface Measurement {
  gflops: number;
  medianMs: number;
  samplesMs: number[];
  /** Warm-up runs, the first including shader compilation. */
  warmupMs: number[];
  maxRelError: number;
  detail: Record<string, unknown>;
}

interface ShapeResult extends Shape {
  gflop: number;
  /** Timed runs per library for this shape. */
  runs: number;
  results: Partial<Record<ContenderName, Measurement>>;
  errors: Partial<Record<ContenderName, string>>;
}

const label = (s: Shape) => `${s.M}×${s.K}×${s.N}`;
const fmt = (x: number | undefined) => (x === undefined ? 'FAILED' : x.toFixed(2));
const ratio = (x: number | undefined, y: number | undefined) =>
  x === undefined || y === undefined ? '-' : `${(x / y).toFixed(2)}×`;

export const matmulSuite: Suite = async ({ quick, log }: SuiteOptions) => {
  const shapes = quick ? QUICK_SHAPES : FULL_SHAPES;
  const warmup = quick ? 1 : 2;
  const runs = quick ? 3 : 7;
  const failures: string[] = [];

  const contenders: Contender[] = [];
  for (const [name, make] of [
    ['ours', oursContender],
    ['jax-js', jaxContender],
    ['tfjs', tfjsContender],
  ] as const) {
    try {
      contenders.push(await make());
    } catch (e) {
      failures.push(`${name}: initialisation failed: ${errorMessage(e)}`);
    }
  }
  const adapters = Object.fromEntries(contenders.map((c) => [c.name, c.adapter]));
  const keys = new Set(contenders.map((c) => JSON.stringify(c.adapter)));
  if (keys.size > 1) failures.push(`libraries run on different adapters: ${JSON.stringify(adapters)}`);
  log(`matmul: adapters ${JSON.stringify(adapters)}`);

  const results: ShapeResult[] = [];
  for (const [index, shape] of shapes.entries()) {
    const { M, K, N } = shape;
    const gflop = (2 * M * N * K) / 1e9;
    const random = rng(SEED + index);
    const a = uniform(M * K, random);
    const b = uniform(K * N, random);
    const ref = matmulRef({ a, b, batch: 1, M, N, K });
    const row: ShapeResult = { ...shape, gflop, runs, results: {}, errors: {} };
    results.push(row);

    const fail = (name: ContenderName, what: string) => {
      row.errors[name] ??= what;
      failures.push(`${name} ${label(shape)}: ${what}`);
    };
    const check = (name: ContenderName, got: Float32Array): number => {
      const err = rowRelativeError(got, ref, N).error;
      if (!(err <= TOLERANCE)) throw new Error(`wrong result: relative error ${err.toExponential(2)} > ${TOLERANCE}`);
      return err;
    };

    interface Live {
      c: Contender;
      p: Prepared;
      warmupMs: number[];
      samples: number[];
      maxErr: number;
    }
    const live: Live[] = [];
    for (const c of contenders) {
      try {
        log(`matmul ${label(shape)}: ${c.name} prepare + ${warmup} warm-up`);
        const p = await c.prepare(shape, a, b);
        const entry: Live = { c, p, warmupMs: [], samples: [], maxErr: 0 };
        live.push(entry);
        for (let i = 0; i < warmup; i++) {
          const t0 = performance.now();
          const got = await p.run();
          entry.warmupMs.push(performance.now() - t0);
          entry.maxErr = Math.max(entry.maxErr, check(c.name, got));
        }
      } catch (e) {
        fail(c.name, errorMessage(e));
      }
    }

    // Fast shapes get more runs (the same number for every library), so that a median over
    // millisecond calls is not at the mercy of a few noisy ones.
    const slowest = Math.max(...live.map((e) => e.warmupMs[e.warmupMs.length - 1] ?? 0));
    const shapeRuns = Math.max(runs, Math.min(MAX_RUNS, Math.ceil(RUN_BUDGET_MS / Math.max(slowest, 1e-3))));
    row.runs = shapeRuns;
    // Runs interleave the libraries, rotating who goes first, so drift in machine load
    // lands on all of them alike instead of on whichever ran last.
    for (let r = 0; r < shapeRuns; r++) {
      const order = live.map((_, i) => live[(i + r) % live.length]!);
      for (const entry of order) {
        if (row.errors[entry.c.name]) continue;
        try {
          const t0 = performance.now();
          const got = await entry.p.run();
          entry.samples.push(performance.now() - t0);
          entry.maxErr = Math.max(entry.maxErr, check(entry.c.name, got));
        } catch (e) {
          fail(entry.c.name, errorMessage(e));
        }
      }
    }

    for (const entry of live) {
      try {
        entry.p.dispose();
      } catch (e) {
        fail(entry.c.name, errorMessage(e));
      }
      if (row.errors[entry.c.name]) continue;
      const medianMs = median(entry.samples);
      row.results[entry.c.name] = {
        gflops: gflop / (medianMs / 1e3),
        medianMs,
        samplesMs: entry.samples,
        warmupMs: entry.warmupMs,
        maxRelError: entry.maxErr,
        detail: entry.p.detail,
      };
    }
    log(
      `matmul ${label(shape)}: ` +
        CONTENDER_NAMES.map((n) => `${n} ${fmt(row.results[n]?.gflops)} GFLOP/s`).join(', '),
    );
  }

  for (const c of contenders) c.close();

  const table: Table = {
    title: `f32 matmul, GFLOP/s (median of ${runs}–${Math.max(...results.map((r) => r.runs))} runs after ${warmup} warm-up, each including readback)`,
    columns: ['M×K×N', 'runs', 'ours', 'jax-js', 'tfjs', 'ours/jax', 'ours/tfjs', 'ours/best peer', 'our kernel'],
    rows: results.map((r) => {
      const g = (n: ContenderName) => r.results[n]?.gflops;
      const peers = [g('jax-js'), g('tfjs')].filter((x): x is number => x !== undefined);
      const best = peers.length ? Math.max(...peers) : undefined;
      const variant = r.results.ours?.detail.variant;
      return [
        label(r),
        String(r.runs),
        fmt(g('ours')),
        fmt(g('jax-js')),
        fmt(g('tfjs')),
        ratio(g('ours'), g('jax-js')),
        ratio(g('ours'), g('tfjs')),
        ratio(g('ours'), best),
        typeof variant === 'string' ? variant : '-',
      ];
    }),
    notes: [
      'ours: matmulTuner(rt).tune(shape) then matmul(rt, {a, b, out}); jax-js: jit(np.matmul) on webgpu, inputs resident;',
      'tfjs: tf.matMul on the webgpu backend. Inputs uniform in [-1, 1); every result checked against a float64 reference',
      `(max error relative to the row's largest |value| ≤ ${TOLERANCE}).`,
    ],
  };

  return {
    suite: 'matmul',
    tables: [table],
    data: { quick, warmup, runs, seed: SEED, tolerance: TOLERANCE, adapters, shapes: results },
    failures,
  };
};
