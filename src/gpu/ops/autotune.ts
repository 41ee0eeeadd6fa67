/**
 * The matmul autotuner: shape classes, the variants measured per adapter and class and kept in
 * the platform's persistent cache, the plan a run records and a rerun replays. Apart from the
 * op (matmul.ts), which only asks it for a variant: tuning times and checks the op's variants
 * (matmulVariants.ts).
 */
import type { GpuContext, OptionalFeature } from '../device';
import type { Runtime } from '../runtime';
import type { Tensor } from '../tensor';
import { view } from '../tensor';
import { f32ToHalves, halvesToF32 } from '../../util/half';
import { rng } from '../../util/random';
import { fill } from './elementwise';
import { bigSlices, MATMUL_VARIANTS, mmaFits, plan, resolveShape, runMatmul, untunedVariant, type MatmulArgs, type MatmulShape, type MatmulVariant } from './matmulVariants';
import type { SubgroupMatrixShape } from '../device';

/**
 * Shapes fall into classes by transposes, the log2 size of M, N and K, B's dtype, the
 * prologue, alignment, f16 products and scaled rows (the last five named only where they
 * differ from f32, none, aligned, f32, unscaled).
 */
export function shapeClass(s: MatmulShape): string {
  const b = log2Class;
  const extra = `${s.bDtype === 'f16' ? '|f16' : ''}${s.prologue ? `|${s.prologue}` : ''}${s.aligned === false ? '|u' : ''}${s.half ? '|h' : ''}${s.scaled ? 's' : ''}`;
  return `${s.transA ? 'T' : 'N'}${s.transB ? 'T' : 'N'}|m${b(s.M)}|n${b(s.N)}|k${b(s.K)}${extra}`;
}

/** A size's class: its log2, rounded up. */
const log2Class = (x: number) => Math.ceil(Math.log2(Math.max(1, x)));

const PROLOGUES = [undefined, 'norm', 'swiglu'] as const;

/**
 * shapeClass as a number (the same classes: a shape's sizes' log2 in 6 bits each, then its
 * flags), which a matmul computes without building a string.
 */
function shapeClassId(s: MatmulShape): number {
  const sizes = (log2Class(s.M) * 64 + log2Class(s.N)) * 64 + log2Class(s.K);
  const flags = (s.scaled ? 32 : 0) + (s.half ? 16 : 0) + (s.transA ? 8 : 0) + (s.transB ? 4 : 0) + (s.bDtype === 'f16' ? 2 : 0) + (s.aligned === false ? 1 : 0);
  return (sizes * 64 + flags) * PROLOGUES.length + PROLOGUES.indexOf(s.prologue);
}

/**
 * Below both, a matmul is left to the untuned plan: on a GPU it takes a few microseconds,
 * less than its dispatch, so no variant can gain what tuning it costs (a pipeline compile per
 * variant and timed runs at the run's start). A LoRA adapter's rank-r products and a small
 * model's decode steps were most of the classes a run tuned (176 for the tiny preset's LoRA
 * run over an f16 base, 3.4 minutes of its start on SwiftShader). A real model's layers are
 * above: Qwen2.5-0.5B's decode reads 3.2 MB per projection.
 */
const TUNED_MIN_FLOPS = 2 ** 25;
const TUNED_MIN_B_BYTES = 2 ** 20;

/** Whether a shape's class is worth measuring (see TUNED_MIN_FLOPS). */
export function worthTuning(s: MatmulShape): boolean {
  const bBytes = s.batch * s.N * s.K * (s.bDtype === 'f16' ? 2 : 4);
  return 2 * s.batch * s.M * s.N * s.K >= TUNED_MIN_FLOPS || bBytes >= TUNED_MIN_B_BYTES;
}

// v12: mma (subgroup matrices); v11: rows (rollout batches); v10: tiled-128-splitk; v9: split-K timed up to 64 rows (rollout batches); v8: split-K slices a long K (v7: timed by GPU timestamps, outputs checked, dtype, prologue
// and alignment in the class; v6: tiled-128; v5: the split-K decode variants).
/** The tuning table's key prefix in the platform's cache (bumped when variants change meaning). */
export const CACHE_VERSION = 'matmul-autotune:v12';
/** The most elements a tuning operand holds: a larger N or M is tuned on a slice (a full LM head's B is 544 MB). */
const TUNE_ELEMENTS = 2 ** 22;
/** GPU time one timed sample spans at least: many quanta of a browser's rounded timestamps (100 µs in Chrome). */
const TIMED_SPAN_MS = 5;
const MAX_TIMED_REPS = 512;
/** Output entries a variant is checked at against float64 before it may win. */
const CHECKED_ENTRIES = 64;
/** Relative to Σ|op(A)||op(B)| over K: f32 rounding is far below it, a wrong kernel far above. */
const CHECK_TOLERANCE = 1e-3;
/** The same for a class whose products may be in f16: its error bound, 5·2^-11 (MatmulArgs.halfMath). */
const CHECK_TOLERANCE_HALF = 5 * 2 ** -11;

/** The matmul part of a run's kernel plan (see MatmulTuner.plan). */
export interface MatmulPlan {
  /** The untuned heuristic's inputs (see untunedVariant): the adapter's architecture and whether it has subgroups. */
  architecture: string;
  subgroups: boolean;
  /** Shape class → the variant its matmuls ran (measured, or replayed). */
  matmul: Record<string, MatmulVariant>;
  /** Classes that ran the heuristic's choice (not worth tuning, or tuning off). */
  untuned: string[];
  /** Classes a replay met that the plan it followed lacked: chosen and tuned on the replaying machine. */
  added?: string[];
}

/** One class's tuning: each accepted variant's time in ms (a loser's may be its one sample), and the refused. */
export interface TuneMeasurement {
  ms: Partial<Record<MatmulVariant, number>>;
  refused: MatmulVariant[];
}

/**
 * Measures the variants once per adapter and shape class and remembers the fastest in the
 * platform's persistent cache. Untuned classes use a heuristic until `tune` runs.
 */
export class MatmulTuner {
  private readonly table: Record<string, MatmulVariant>;
  private readonly cacheKey: string;
  /** Shape classes used without a measurement, with a representative shape each. */
  private readonly pending = new Map<string, MatmulShape>();
  /** Every shape class chosen for since the runtime started: what plan() records. */
  private readonly used = new Set<string>();
  /** A recorded plan this runtime follows instead of its own table (see replay). */
  private replayed: { plan: MatmulPlan; untuned: ReadonlySet<string>; ctx: Pick<GpuContext, 'adapter' | 'features'> } | null = null;
  /**
   * The choice for each class seen since the table or the pending list last changed (see
   * shapeClassId): a decode step's matmuls choose without building their class's name.
   */
  private readonly chosen = new Map<number, MatmulVariant>();
  forced: MatmulVariant | null = null;

  constructor(protected readonly rt: Runtime) {
    // A runtime told not to use the device's subgroup matrices keeps a table of its own, so
    // that neither reads the other's winners (an `mma` it cannot run, or a class never timed against it).
    this.cacheKey = `${CACHE_VERSION}:${rt.ctx.adapter.key}${rt.ctx.subgroupMatrix && !rt.subgroupMatrix ? ':without-subgroup-matrices' : ''}`;
    let table: Record<string, MatmulVariant> = {};
    try {
      table = JSON.parse(rt.cacheGet(this.cacheKey) ?? '{}') as Record<string, MatmulVariant>;
    } catch {
      table = {};
    }
    this.table = table;
  }

  /** The tuned table (shape class → variant). */
  entries(): Readonly<Record<string, MatmulVariant>> {
    return this.table;
  }

  /** Whether this shape's class has a measured winner (now or from an earlier run). */
  isTuned(s: MatmulShape): boolean {
    return shapeClass(s) in this.table;
  }

  choose(s: MatmulShape): MatmulVariant {
    if (this.forced) return this.forced;
    const id = shapeClassId(s);
    const known = this.chosen.get(id);
    if (known) return known;
    const key = shapeClass(s);
    this.used.add(key);
    const replayed = this.replayed;
    if (replayed) {
      const variant = replayed.plan.matmul[key];
      if (variant) return variant;
      // The recorded run's heuristic, as its adapter made it (a GPU's plan on SwiftShader too).
      if (replayed.untuned.has(key)) return untunedVariant(s, replayed.ctx);
      // A class the recorded run never used: this machine's table and tuning decide (plan() names it).
    }
    const tuned = this.table[key];
    if (tuned) {
      this.chosen.set(id, tuned);
      return tuned;
    }
    // A runtime without tuning records nothing: no step or run start measures anything.
    if (this.rt.tuning && worthTuning(s) && !this.pending.has(key)) {
      const { batch, M, N, K, transA, transB, bDtype, prologue, aligned, half, scaled } = s;
      this.pending.set(key, { batch, M, N, K, transA, transB, bDtype, prologue, aligned, half, scaled });
    }
    const untuned = untunedVariant(s, this.rt.ctx);
    this.chosen.set(id, untuned);
    return untuned;
  }

  /**
   * Follows a recorded plan (see plan()) instead of this machine's table: its classes run the
   * recorded variants, and those it ran untuned the recorded adapter's heuristic, so that a
   * rerun's sums round as the recorded run's did. A class missing from it is chosen and
   * tuned as without a plan, and plan() lists it under `added`. Nothing is written to the
   * machine's cache but what is tuned here.
   */
  replay(plan: MatmulPlan): void {
    const features = new Set<OptionalFeature>(plan.subgroups ? ['subgroups'] : []);
    this.replayed = { plan, untuned: new Set(plan.untuned), ctx: { adapter: { ...this.rt.ctx.adapter, architecture: plan.architecture }, features } };
    // Choices remembered before the plan came are this machine's, not the plan's.
    this.chosen.clear();
  }

  /**
   * The variants this runtime's matmuls ran on, by shape class: measured (here or by an
   * earlier run on this adapter) or replayed in `matmul`, untuned in `untuned` with the
   * heuristic's inputs; with a replayed plan, all of its classes and those it lacked (`added`).
   */
  plan(): MatmulPlan {
    const base = this.replayed?.plan;
    const matmul: Record<string, MatmulVariant> = { ...base?.matmul };
    const untuned = new Set(base?.untuned);
    const added = new Set(base?.added);
    for (const key of [...this.used].sort()) {
      if (key in matmul || untuned.has(key)) continue;
      if (base) added.add(key);
      const tuned = this.table[key];
      if (tuned) matmul[key] = tuned;
      else untuned.add(key);
    }
    const ctx = this.replayed?.ctx ?? this.rt.ctx;
    return {
      architecture: ctx.adapter.architecture,
      subgroups: ctx.features.has('subgroups'),
      matmul,
      untuned: [...untuned].sort(),
      ...(added.size ? { added: [...added].sort() } : {}),
    };
  }

  /**
   * Tunes every shape class used since the last call that has no measurement yet (e.g.
   * after a model's first training step); returns how many were tuned.
   */
  async tunePending(runs = 3, onProgress: (done: number, total: number) => void = () => {}): Promise<number> {
    const shapes = [...this.pending.values()];
    this.pending.clear();
    // Classes left untuned are listed again when next used.
    this.chosen.clear();
    onProgress(0, shapes.length);
    for (let i = 0; i < shapes.length; i++) {
      await this.tune(shapes[i]!, runs);
      onProgress(i + 1, shapes.length);
    }
    return shapes.length;
  }

  /** Shape classes used since the last tunePending that have no measurement yet. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Variants refused by the last tune: their kernel did not compile on this adapter, or their outputs differed from float64 at a checked entry. */
  refused: MatmulVariant[] = [];

  /** What tune measured in this runtime, by shape class (see measurements). */
  private readonly measured = new Map<string, TuneMeasurement>();

  /** Every class tuned in this runtime: each accepted variant's time and the refused variants (the GPU report's record of why a class runs what it runs). */
  measurements(): Record<string, TuneMeasurement> {
    return Object.fromEntries([...this.measured].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  /**
   * Times every variant on this shape (random inputs; a large N or M on a slice of at most
   * TUNE_ELEMENTS per operand) and records the fastest for its class. Each variant's first timed
   * run (its output poisoned with NaN first) is checked against float64 at CHECKED_ENTRIES
   * entries, the corners among them: one that differs is refused, whatever its speed.
   * Timing: GPU timestamps where the adapter has them (repetitions in one pass spanning
   * TIMED_SPAN_MS, the median of `runs` such samples), else the wall clock around each run.
   * Returns the accepted variants' times in ms.
   */
  async tune(shape: MatmulShape, runs = 3): Promise<Partial<Record<MatmulVariant, number>>> {
    const rt = this.rt;
    const s = tuningSlice(shape);
    const inputs = tuningInputs(rt, s);
    const times: Partial<Record<MatmulVariant, number>> = {};
    this.refused = [];
    const subgroups = rt.ctx.features.has('subgroups');
    const mma = rt.subgroupMatrix;
    const candidates = tuneCandidates(s, subgroups, mma);
    // Every candidate's pipeline compiles now, together, and before any clock starts. One
    // that does not compile on this adapter (an experimental feature's driver) is refused
    // unrun: its dispatch would be a validation error.
    const g = resolveShape(inputs.args);
    const kernels = candidates.map((variant) => rt.pipelines.prepare(plan(variant, g, subgroups, inputs.args, mma).kernel));
    await rt.pipelines.ready();
    try {
      for (const [i, variant] of candidates.entries()) {
        if (kernels[i]!.failure !== null) {
          this.refused.push(variant);
          continue;
        }
        const run = () => this.run(variant, inputs.args);
        fill(rt, inputs.args.out!, Number.NaN);
        // The first timed run is also the one checked.
        const first = await this.timeOnce(run);
        if (!matchesReference(await rt.readF32(inputs.args.out!), inputs.reference, s.half ? CHECK_TOLERANCE_HALF : CHECK_TOLERANCE)) {
          this.refused.push(variant);
          continue;
        }
        times[variant] = await this.time(run, first, runs, Math.min(...Object.values(times)));
      }
    } finally {
      inputs.release();
    }
    this.measured.set(shapeClass(shape), { ms: { ...times }, refused: [...this.refused] });
    const tried = Object.keys(times) as MatmulVariant[];
    // Nothing correct to choose from: the class stays untuned (its heuristic) rather than wrong.
    if (tried.length === 0) return times;
    const best = tried.reduce((x, y) => (times[y]! < times[x]! ? y : x));
    this.table[shapeClass(shape)] = best;
    this.chosen.clear();
    rt.cacheSet(this.cacheKey, JSON.stringify(this.table));
    return times;
  }

  /** Records one run of `variant` (a method, so that a test can plant a wrong variant). */
  protected run(variant: MatmulVariant, args: MatmulArgs): void {
    runMatmul(this.rt, { ...args, variant }, () => variant);
  }

  /** One run's time in ms: by GPU timestamps where the adapter has them, else by the wall clock to its completion. */
  private async timeOnce(run: () => void): Promise<{ ms: number; gpu: boolean }> {
    const rt = this.rt;
    const gpu = await rt.gpuTime(run);
    if (gpu !== null) return { ms: gpu, gpu: true };
    const t0 = performance.now();
    run();
    await rt.sync();
    return { ms: performance.now() - t0, gpu: false };
  }

  /**
   * The median time of `run` in ms (see tune), given its first run's. A variant already twice
   * as slow as `best` keeps that one sample: repeating a loser only lengthens tuning (on a CPU
   * device, a slow variant's repetitions were most of a run's start-up).
   */
  private async time(run: () => void, first: { ms: number; gpu: boolean }, runs: number, best: number): Promise<number> {
    if (first.ms > 2 * best) return first.ms;
    const median = (x: number[]) => x.sort((p, q) => p - q)[Math.floor(x.length / 2)]!;
    const samples: number[] = [];
    if (first.gpu) {
      // Enough repetitions in one pass that a sample spans TIMED_SPAN_MS; where a run alone
      // does, the first run is the first sample.
      const reps = Math.min(MAX_TIMED_REPS, Math.ceil(TIMED_SPAN_MS / Math.max(first.ms, 1e-3)));
      if (reps === 1) samples.push(first.ms);
      while (samples.length < runs) {
        samples.push((await this.rt.gpuTime(() => {
          for (let r = 0; r < reps; r++) run();
        }))! / reps);
      }
      return median(samples);
    }
    // Short kernels get more runs (up to ~30 ms of them): a millisecond is within the wall clock's noise.
    samples.push(first.ms);
    const n = Math.max(runs, Math.min(5 * runs, Math.ceil(30 / first.ms)));
    for (let i = 1; i < n; i++) samples.push((await this.timeOnce(run)).ms);
    return median(samples);
  }
}

/**
 * The shape tuned for `s`: N, then M, cut so that no operand holds more than TUNE_ELEMENTS, then
 * M (and if need be N) so that the output does not either (multiples of 4 kept). A short K makes
 * wide outputs: a LoRA up-projection of 4,200 tokens to 9,728 columns over rank 16 would write
 * 163 MB, past a 128 MiB binding limit.
 */
function tuningSlice(s: MatmulShape): MatmulShape {
  const cut = (x: number, other: number) => {
    if (s.batch * x * other <= TUNE_ELEMENTS) return x;
    const y = Math.max(Math.min(x, 64), Math.floor(TUNE_ELEMENTS / (s.batch * other)));
    // Multiples of 16 kept too: matmul_mma takes whole blocks of N (the LM head's 151,936).
    const q = x % 16 === 0 ? 16 : x % 4 === 0 ? 4 : 1;
    return Math.max(q, y - (y % q));
  };
  const N = cut(s.N, s.K);
  const M = cut(cut(s.M, s.K), N);
  return { ...s, M, N: cut(N, M) };
}

interface TuningInputs {
  args: MatmulArgs;
  reference: { index: number; value: number; scale: number }[];
  release(): void;
}

/**
 * Random inputs for a tuning shape, laid out as the calls of its class are (B in its dtype, A
 * as the prologue reads it, offset by one element where the class is unaligned; with scaled
 * rows, rows from 2^-40 to 2^20, past f16's range either way, so that a variant that rounds
 * them unscaled fails its check), and float64 values of the product at sampled entries.
 */
function tuningInputs(rt: Runtime, s: MatmulShape): TuningInputs {
  const r = rng((s.M * 31 + s.N) * 31 + s.K);
  const width = s.prologue === 'swiglu' ? 2 : 1;
  const [aRows, aCols] = s.transA ? [s.K, s.M * width] : [s.M, s.K * width];
  const [bRows, bCols] = s.transB ? [s.N, s.K] : [s.K, s.N];
  const skew = s.aligned === false ? 1 : 0;
  const aHost = Float32Array.from({ length: s.batch * aRows * aCols }, (_, i) => (r() - 0.5) * (s.scaled ? rowMagnitude(Math.floor(i / aCols)) : 1));
  const bHost = Float32Array.from({ length: s.batch * bRows * bCols }, () => r() - 0.5);
  const wHost = Float32Array.from({ length: s.K }, () => 0.5 + r());
  const aBuf = rt.upload(padded(aHost, skew), [aHost.length + skew]);
  const a = view(aBuf, [s.batch, aRows, aCols], skew);
  let bBuf: Tensor;
  if (s.bDtype === 'f16') {
    const halves = f32ToHalves(bHost);
    bHost.set(halvesToF32(halves));
    const whole = new Uint16Array(Math.ceil((halves.length + skew) / 2) * 2);
    whole.set(halves, skew);
    bBuf = rt.upload(whole, [whole.length], 'f16');
  } else {
    bBuf = rt.upload(padded(bHost, skew), [bHost.length + skew]);
  }
  const b = view(bBuf, [s.batch, bRows, bCols], skew);
  const weight = s.prologue === 'norm' ? rt.upload(wHost, [s.K]) : null;
  const out = rt.empty([s.batch, s.M, s.N]);
  const eps = 1e-5;
  const opA = (bi: number, i: number, k: number): number => {
    const at = (row: number, col: number) => aHost[(bi * aRows + row) * aCols + col]!;
    if (s.prologue === 'swiglu') {
      const [g, u] = s.transA ? [at(k, i), at(k, s.M + i)] : [at(i, k), at(i, s.K + k)];
      return (g / (1 + Math.exp(-g))) * u;
    }
    if (s.prologue === 'norm') {
      let ss = 0;
      for (let kk = 0; kk < s.K; kk++) ss += at(i, kk) ** 2;
      return (at(i, k) / Math.sqrt(ss / s.K + eps)) * wHost[k]!;
    }
    return s.transA ? at(k, i) : at(i, k);
  };
  const opB = (bi: number, k: number, j: number) => bHost[bi * bRows * bCols + (s.transB ? j * bCols + k : k * bCols + j)]!;
  const picks: [number, number, number][] = [[0, 0, 0], [s.batch - 1, s.M - 1, s.N - 1], [0, s.M - 1, 0], [s.batch - 1, 0, s.N - 1]];
  while (picks.length < CHECKED_ENTRIES) picks.push([Math.floor(r() * s.batch), Math.floor(r() * s.M), Math.floor(r() * s.N)]);
  const reference = picks.map(([bi, i, j]) => {
    let value = 0;
    let scale = 0;
    for (let k = 0; k < s.K; k++) {
      const p = opA(bi, i, k) * opB(bi, k, j);
      value += p;
      scale += Math.abs(p);
    }
    return { index: (bi * s.M + i) * s.N + j, value, scale };
  });
  const args: MatmulArgs = {
    a, b, out, transA: s.transA, transB: s.transB,
    ...(s.prologue === 'swiglu' ? { swiglu: true } : {}),
    ...(weight ? { norm: { weight, eps } } : {}),
    ...(s.half ? { halfMath: true } : {}),
    ...(s.scaled ? { scaleRows: true } : {}),
  };
  return { args, reference, release: () => rt.release(aBuf, bBuf, out, ...(weight ? [weight] : [])) };
}

/** The magnitude of row `r` of an A with scaled rows (tuning and tests): 2^-40 to 2^20 in steps of 2^10. */
export const rowMagnitude = (r: number): number => 2 ** (10 * (r % 7) - 40);

function padded(x: Float32Array, skew: number): Float32Array {
  if (!skew) return x;
  const out = new Float32Array(x.length + skew);
  out.set(x, skew);
  return out;
}

/** Whether `got` holds the reference's values within `tolerance` of each entry's scale (NaN never does). */
function matchesReference(got: Float32Array, reference: TuningInputs['reference'], tolerance: number): boolean {
  return reference.every((e) => Math.abs(got[e.index]! - e.value) <= tolerance * e.scale + 1e-30);
}

/**
 * The variants worth timing for a shape: gemv only up to GEMV_TUNE_MAX_ROWS, split-K up to
 * SPLITK_TUNE_MAX_ROWS and rows from 9 to ROWS_TUNE_MAX_ROWS, where they can win; reg-vec4 only where M, N, K and the offsets are
 * multiples of 4 (elsewhere it runs as reg); splitk-sg where the adapter has subgroups;
 * tiled-128-splitk where it slices K (elsewhere it is tiled-128); mma where the device has
 * subgroup matrices (not emulated ones) and the shape fits them (mmaFits).
 */
function tuneCandidates(s: MatmulShape, subgroups: boolean, mma: SubgroupMatrixShape | null): MatmulVariant[] {
  const aligned = s.M % 4 === 0 && s.N % 4 === 0 && s.K % 4 === 0 && s.aligned !== false;
  return MATMUL_VARIANTS.filter(
    (v) =>
      (v !== 'gemv' || s.M <= GEMV_TUNE_MAX_ROWS) &&
      (!v.startsWith('splitk') || s.M <= SPLITK_TUNE_MAX_ROWS) &&
      (v !== 'rows' || (s.M > ROWS_TUNE_MIN_ROWS && s.M <= ROWS_TUNE_MAX_ROWS)) &&
      (v !== 'reg-vec4' || aligned) &&
      (v !== 'splitk-sg' || subgroups) &&
      (v !== 'tiled-128-splitk' || bigSlices(s, s.prologue === 'norm') > 1) &&
      (v !== 'mma' || (mma !== null && !mma.emulated && mmaFits(s, mma))),
  );
}

/** gemv's workgroup covers 4 rows and reads the weights again for every 4: beyond a decode step of a few rows it only lengthens tuning. */
const GEMV_TUNE_MAX_ROWS = 16;

/**
 * Split-K reads the weights once per 8 rows, but spreads K over a workgroup per 4 columns. RL
 * decodes its rollouts in batches of 8-64 rows, where a 64×64 tile leaves a large GPU idle: on
 * an H200 a 32-row Qwen2.5-0.5B step gave its 896-wide projections 14 tiled workgroups, 62% of
 * the step's GPU time (bench/results/h200-2026-11-28). The tuner weighs the two there.
 */
const SPLITK_TUNE_MAX_ROWS = 64;

/**
 * matmul_rows stages the weights once for up to 64 rows: past that it reads them again as the
 * tiles do, and up to 8 split-K reads them once too, over more workgroups.
 */
const ROWS_TUNE_MIN_ROWS = 8;
const ROWS_TUNE_MAX_ROWS = 64;

const tuners = new WeakMap<Runtime, MatmulTuner>();

export function matmulTuner(rt: Runtime): MatmulTuner {
  let t = tuners.get(rt);
  if (!t) {
    t = new MatmulTuner(rt);
    tuners.set(rt, t);
  }
  return t;
}
