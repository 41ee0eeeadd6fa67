import type { Platform } from '../platform/types';
import { acquireDevice, pickSubgroupMatrix, type GpuContext, type RequestedLimits, type SubgroupMatrixShape } from './device';
import { DispatchPlan, PLAN_COUNTS, type PlanCounts, type PlanEntry, type ResolvedPlan } from './dispatchPlan';
import { Params } from './params';
import { PipelineCache, type Kernel, type KernelSpec } from './pipelines';
import { BufferPool, sizeClass, type PoolStats } from './pool';
import { Profiler, type ProfiledDispatch, type ProfileEntry } from './profiler';
import { BYTES_PER_ELEMENT, numel, type DType, type Tensor, type TypedArrayFor } from './tensor';
import { halvesToF32 } from '../util/half';
import { errorText } from '../util/errorText';

export interface Dispatch {
  kernel: KernelSpec;
  params: Params;
  /**
   * What bindings 1, 2, ... read or write (binding 0 is always the params uniform): a tensor's
   * buffer or a buffer, bound from its start up to the binding limit (see Runtime.binding);
   * null skips a binding the entry point does not use.
   */
  buffers: (Tensor | GPUBuffer | null)[];
  workgroups: readonly [number, number?, number?];
  /** Name in profiles; defaults to the entry point. */
  label?: string;
}

type Command =
  | { kind: 'dispatch'; d: Dispatch; kernel: Kernel; bound: (GPUBuffer | null)[] }
  | { kind: 'copy'; src: GPUBuffer; srcOffset: number; dst: GPUBuffer; dstOffset: number; bytes: number }
  | { kind: 'plan'; plan: DispatchPlan };

/** A capture under way (Runtime.capture): its dispatches, and the buffers it acquired and freed. */
interface Capture {
  entries: PlanEntry[];
  acquired: Set<GPUBuffer>;
  /** Buffers acquired and released during the capture, by size: reused within it, the plan's after it. */
  free: Map<number, GPUBuffer[]>;
}

/** One staging buffer of a read: `bytes` of the tensor's words from byte `at`. */
interface StagedPart {
  buffer: GPUBuffer;
  size: number;
  bytes: number;
  at: number;
}

/**
 * Bind groups by layout, parameter offset and size, then the buffer at each binding (null
 * where none): a Map lookup per key part, of objects and numbers that exist already, where a
 * key string built per dispatch cost more than the dispatch's native calls.
 */
type BindGroupTrie = Map<unknown, BindGroupTrie | GPUBindGroup>;
/** The key under which a trie node holds its bind group (no buffer, offset or layout equals it). */
const GROUP = Symbol('group');

function child(node: BindGroupTrie, key: unknown): BindGroupTrie {
  let next = node.get(key) as BindGroupTrie | undefined;
  if (!next) node.set(key, (next = new Map()));
  return next;
}

/** Subgroup size the subgroup matmul path is written for (see shaders/matmul.wgsl). */
export const SUBGROUP_MATMUL_LANES = 4;

export interface RuntimeOptions {
  /** Record GPU time with timestamp queries, when the adapter has them: per dispatch, or per submit (Profiler.mode). */
  profile?: boolean;
  /** Overrides the adapter-based choice of row-per-invocation kernels (see serialRows). */
  serialRows?: boolean;
  /** Lets register-tiled matmuls share row loads across a subgroup where they can (default true). */
  subgroupMatmul?: boolean;
  /** Overrides the adapter-based choice of fused matmul prologues in inference (see fusedPrologues). */
  fusedPrologues?: boolean;
  /** Overrides the device-based choice of f16 products over f16 weights (see halfMath). */
  halfMath?: boolean;
  /**
   * Lets f16 products run on the device's subgroup matrices where it has them (default true; see
   * subgroupMatrix), or, given an emulated shape, makes matmul_mma computable on any device with
   * shader-f16, its builtins emulated (SubgroupMatrixShape.emulated: the kernel's float64 tests).
   */
  subgroupMatrix?: boolean | SubgroupMatrixShape;
  /** Keep WebGPU's default limits (e.g. 8 storage buffers per stage) to check portability. */
  defaultLimits?: boolean;
  /** Request these limits as given (tests of limits that are not powers of two). */
  limits?: RequestedLimits;
  /** The most bytes one read stages at a time (default 64 MiB, never above maxBufferSize). */
  readChunkBytes?: number;
  /**
   * The most dispatches one command buffer holds (default 1024): a long step is submitted in
   * parts, so that no command buffer runs long enough for a display driver to reset the GPU.
   */
  maxDispatchesPerSubmit?: number;
  /** Fill every tensor `empty` hands out with NaN (tests: reading what no kernel wrote shows). */
  poison?: boolean;
  /**
   * Measure the kernel variants of shape classes this adapter has no measurement of (default
   * true). Off, such classes keep their untuned plan and nothing is measured or stored: a quick
   * check of a model starts at once, and a later run tunes them.
   */
  tuning?: boolean;
}

/** Work recorded since the runtime started (see Runtime.counters): what the benchmarks report per phase. */
export interface RuntimeCounters {
  dispatches: number;
  /** Workgroups those dispatches launch: how much of a GPU's compute units a step can occupy. */
  workgroups: number;
  /** Reads back to the host. */
  readbacks: number;
  /** Floating-point operations of the matmuls recorded (2·M·N·K each). */
  matmulFlops: number;
  /**
   * Bytes of the matmuls' B operands (a linear layer's weight) their kernels request: B once
   * per tile row of op(A) (at one row, each weight once), whatever caches then serve.
   */
  matmulWeightBytes: number;
  /** Command buffers submitted to the queue. */
  submits: number;
  /** Bind groups created (a dispatch whose bindings were seen before reuses its bind group). */
  bindGroups: number;
  /**
   * Times the host waited for GPU results with no later work submitted (a read or sync
   * awaited right after the submit it depends on): each one drains the queue, so the GPU idles
   * while the host receives the results and records what follows. Reads awaited after later
   * work was submitted (see readLater) overlap with it and do not count.
   */
  hostWaits: number;
}

/** A read started by readLater: resolves to the values once the GPU has copied them. */
export type PendingRead<D extends DType> = () => Promise<TypedArrayFor<D>>;

const UNIFORM_USAGE = 0x40 /* UNIFORM */ | 0x08; /* COPY_DST */
const MAX_PROFILED_DISPATCHES = 2048;
/**
 * Bind groups kept for reuse (all dropped at once past it): a decode step or training step
 * binds the same buffers at the same parameter offsets every time, a few hundred to a few
 * thousand dispatches each.
 */
const MAX_BIND_GROUPS = 8192;
/** Free staging buffers kept per size class. */
const MAX_FREE_STAGING = 4;
/** The largest staging buffer kept for reuse: larger reads (weights, moments) are rare. */
const MAX_KEPT_STAGING = 2 ** 20;
/**
 * Bytes a read stages at a time: a large tensor (a 0.5B model's weights or moments, 2 GiB)
 * is read a chunk after another, so its staging never exceeds maxBufferSize and the host
 * holds one mapped chunk beside its copy, not a second whole copy.
 */
const DEFAULT_READ_CHUNK = 64 * 2 ** 20;
/** See RuntimeOptions.maxDispatchesPerSubmit. */
const DEFAULT_DISPATCHES_PER_SUBMIT = 1024;

/** Bytes rounded up to whole 32-bit words. */
const wordBytes = (bytes: number) => Math.ceil(bytes / 4) * 4;

/**
 * RuntimeOptions.subgroupMatrix given a shape: only an emulated one (a device's real matrices
 * are its adapter's), one that an adapter offering it would have been given (pickSubgroupMatrix),
 * and only with shader-f16, in which the kernel stages its operands.
 */
function emulatedMatrices(shape: SubgroupMatrixShape, ctx: GpuContext): SubgroupMatrixShape {
  const what = `subgroup matrices ${shape.M}×${shape.N}×${shape.K} in subgroups of ${shape.subgroupMaxSize}`;
  if (!shape.emulated) throw new Error(`${what} are the adapter's to offer; a runtime may only be given emulated ones`);
  if (!ctx.features.has('shader-f16')) throw new Error(`emulated subgroup matrices need a device with shader-f16; this adapter (${ctx.adapter.architecture || ctx.adapter.key}) has none`);
  const config = { componentType: 'f16', resultComponentType: 'f32', M: shape.M, N: shape.N, K: shape.K };
  if (!pickSubgroupMatrix([config], shape.subgroupMaxSize, ctx.limits.maxComputeInvocationsPerWorkgroup)) throw new Error(`matmul_mma cannot tile its workgroup with ${what}`);
  return shape;
}

/**
 * The GPU runtime: a device, a buffer pool, compiled pipelines, and a recorder that encodes
 * every dispatch issued between two submits into one command buffer.
 */
export class Runtime {
  readonly device: GPUDevice;
  readonly pool: BufferPool;
  readonly pipelines: PipelineCache;
  readonly profiler: Profiler | null;
  /** Bound where a kernel has an optional input that is absent (e.g. no bias). */
  readonly placeholder: GPUBuffer;
  private commands: Command[] = [];
  private arena: GPUBuffer | null = null;
  private lost: string | null = null;
  private readonly errors: string[] = [];
  private readonly cache: Map<string, string>;
  private readonly cacheWrites: Promise<void>[] = [];
  private readonly staging = new Map<number, GPUBuffer[]>();
  private readSubmit: Promise<void> | null = null;
  /** Bind groups by layout, parameter offset and size, and the buffers bound (see bindGroup). */
  private bindGroups: BindGroupTrie = new Map();
  private bindGroupCount = 0;
  /** The parameters of a submit's dispatches, written to the arena at once; kept between submits. */
  private paramStaging = new Uint32Array(1024);
  /** The submit whose results the host last waited for (reads sharing a submit wait once). */
  private waitedSubmit = -1;
  /** > 0 inside trace(): dispatches, copies and writes are dropped. */
  private tracing = 0;
  /** Inside capture(): dispatches go to the plan. */
  private capturing: Capture | null = null;
  /** Running totals of the work recorded; a copy is a snapshot. */
  readonly counters: RuntimeCounters = { dispatches: 0, workgroups: 0, readbacks: 0, matmulFlops: 0, matmulWeightBytes: 0, submits: 0, bindGroups: 0, hostWaits: 0 };

  /**
   * Row-wise kernels should give each invocation a whole row instead of sharing rows across
   * a workgroup with barriers: true on CPU implementations of WebGPU (SwiftShader), where
   * a barrier costs a coroutine switch per invocation.
   */
  readonly serialRows: boolean;
  /**
   * Register-tiled matmuls load each row of op(A) once per subgroup and broadcast it. This
   * needs subgroups of exactly 4 consecutive invocations (so that a subgroup's lanes share
   * their rows): SwiftShader's, where it is tested; WebGPU does not promise the layout elsewhere.
   */
  readonly subgroupMatmul: boolean;
  /**
   * Inference computes each RMSNorm and the SwiGLU in the matmul that reads them (a decode
   * step of a 4-layer model: 26 dispatches instead of 39) at the price of repeating that
   * arithmetic in every output tile. On a GPU a dispatch costs more than the arithmetic it
   * saves; on SwiftShader, where both are the CPU's, the fused decode measured 8–12% slower
   * at 8 rows (docs/benchmarks.md, "Loop speed, measured"), so it is off there. Read when work is recorded:
   * the loop benchmark switches it to measure both.
   */
  fusedPrologues: boolean;
  /**
   * Whether matmuls over f16 weights (an f16 base's projections and LM head) may compute their
   * products in f16 (MatmulArgs.halfMath): where the device has shader-f16, unless the options
   * say otherwise. The weights are halves already, so only the activations are rounded; in
   * training each row first scaled to half's range (MatmulArgs.scaleRows: its gradients would
   * underflow), which only the matrix units' kernel does, every other variant computing those
   * in f32. Read when work is recorded: the GPU report switches it to measure both.
   */
  halfMath: boolean;
  /**
   * The subgroup matrices f16 products may run on (matmul_mma, a tuning candidate): the
   * device's (GpuContext.subgroupMatrix) unless the options turn them off, as the GPU report
   * does where their float64 cases failed on the card. Null: the vector kernels alone.
   */
  readonly subgroupMatrix: SubgroupMatrixShape | null;
  /** Whether kernel variants are measured for unmeasured shape classes (see RuntimeOptions.tuning). */
  readonly tuning: boolean;
  private readonly poison: boolean;
  private readonly readChunkBytes: number;
  private readonly maxDispatchesPerSubmit: number;
  /** Dispatches recorded since the last submit. */
  private recorded = 0;
  /** Inside gpuTime's recording: one command buffer, however long. */
  private timing = false;
  private timerQueries: GPUQuerySet | null = null;
  /** The timestamps of the submit gpuTime is making (see gpuTime). */
  private timed: { querySet: GPUQuerySet; resolve: GPUBuffer; read: GPUBuffer } | null = null;

  /** Stops this runtime's listening to its device (shared devices outlive it). */
  private readonly unsubscribe: (() => void)[];

  private constructor(readonly ctx: GpuContext, options: RuntimeOptions, cache: Record<string, string>) {
    this.cache = new Map(Object.entries(cache));
    this.device = ctx.device;
    this.serialRows = options.serialRows ?? ctx.adapter.architecture === 'swiftshader';
    this.subgroupMatmul =
      (options.subgroupMatmul ?? true) && ctx.subgroupSize === SUBGROUP_MATMUL_LANES && ctx.adapter.architecture === 'swiftshader';
    this.fusedPrologues = options.fusedPrologues ?? ctx.adapter.architecture !== 'swiftshader';
    this.halfMath = options.halfMath ?? ctx.features.has('shader-f16');
    if (this.halfMath && !ctx.features.has('shader-f16')) {
      throw new Error(`f16 products (halfMath) need a device with shader-f16; this adapter (${ctx.adapter.architecture || ctx.adapter.key}) has none`);
    }
    this.subgroupMatrix = typeof options.subgroupMatrix === 'object' ? emulatedMatrices(options.subgroupMatrix, ctx) : options.subgroupMatrix === false ? null : ctx.subgroupMatrix;
    this.poison = options.poison ?? false;
    this.tuning = options.tuning ?? true;
    this.pool = new BufferPool(this.device, ctx.limits.maxBufferSize, ctx.limits.maxStorageBufferBindingSize);
    this.readChunkBytes = Math.min(options.readChunkBytes ?? DEFAULT_READ_CHUNK, ctx.limits.maxBufferSize);
    this.maxDispatchesPerSubmit = options.maxDispatchesPerSubmit ?? DEFAULT_DISPATCHES_PER_SUBMIT;
    this.pipelines = PipelineCache.of(this.device, (name) => ctx.platform.shaderSource(name));
    this.profiler = options.profile && ctx.features.has('timestamp-query') ? new Profiler(this.device) : null;
    this.placeholder = this.device.createBuffer({ size: 256, usage: 0x80, label: 'placeholder' });
    this.unsubscribe = [
      ctx.onLost((info) => {
        this.lost = `${info.reason}: ${info.message}`;
      }),
      ctx.onError((message) => this.errors.push(message)),
    ];
  }

  static async create(platform: Platform, options: RuntimeOptions = {}): Promise<Runtime> {
    const [ctx, cache] = await Promise.all([
      acquireDevice(platform, { defaultLimits: options.defaultLimits, limits: options.limits }),
      platform.loadCache().catch(() => ({})),
    ]);
    return new Runtime(ctx, options, cache);
  }

  /** Persistent per-machine settings (autotune tables), loaded once when the runtime starts. */
  cacheGet(key: string): string | null {
    return this.cache.get(key) ?? null;
  }

  /**
   * Stores a setting now and persists it in the background (see cacheFlush). A store that
   * cannot be written (private browsing, read-only disk) costs only a re-measurement later.
   */
  cacheSet(key: string, value: string): void {
    this.cache.set(key, value);
    this.cacheWrites.push(
      this.platform.saveCache(key, value).catch((e: unknown) => {
        console.warn(`sage-lab: could not persist "${key}": ${errorText(e)}`);
      }),
    );
  }

  /** Waits until every cacheSet so far is persisted. */
  async cacheFlush(): Promise<void> {
    await Promise.all(this.cacheWrites.splice(0));
  }

  get platform(): Platform {
    return this.ctx.platform;
  }

  /** Throws if the device was lost or reported an uncaptured error since the last check. */
  private check(): void {
    if (this.lost) throw new Error(`GPU device lost (${this.lost})`);
    const errors = this.errors.splice(0);
    if (errors.length) throw new Error(`GPU error: ${errors[0]}${errors.length > 1 ? ` (+${errors.length - 1} more)` : ''}`);
  }

  empty<D extends DType = 'f32'>(shape: readonly number[], dtype: D = 'f32' as D, label?: string): Tensor<D> {
    const size = numel(shape);
    const buffer = this.acquire(wordBytes(size * BYTES_PER_ELEMENT[dtype]), label);
    const t = { buffer, shape: [...shape], dtype, offset: 0, size };
    if (this.poison) {
      // Whole words of NaN: two f16 NaNs to a word, or one f32 NaN.
      const nan = new Uint32Array(wordBytes(size * BYTES_PER_ELEMENT[dtype]) / 4).fill(dtype === 'f16' ? 0x7e007e00 : 0x7fc00000);
      this.submit();
      this.device.queue.writeBuffer(buffer, 0, nan.buffer, 0, nan.byteLength);
    }
    return t;
  }

  /** A pooled buffer; inside a capture, one the capture freed first (its plan keeps them). */
  private acquire(bytes: number, label?: string): GPUBuffer {
    const c = this.capturing;
    if (!c) return this.pool.acquire(bytes, label);
    const reused = c.free.get(this.pool.sizeOf(bytes))?.pop();
    if (reused) return reused;
    const buffer = this.pool.acquire(bytes, label);
    c.acquired.add(buffer);
    return buffer;
  }

  upload<D extends DType = 'f32'>(data: TypedArrayFor<D>, shape: readonly number[], dtype: D = 'f32' as D): Tensor<D> {
    const t = this.empty(shape, dtype);
    this.write(t, data);
    return t;
  }

  /** Writes host data into a tensor, after all work recorded so far. */
  write<D extends DType>(t: Tensor<D>, data: TypedArrayFor<D>): void {
    if (data.length !== t.size) throw new Error(`write: ${data.length} values for a tensor of ${t.size}`);
    const bpe = BYTES_PER_ELEMENT[t.dtype];
    // writeBuffer moves whole 32-bit words: a half-precision write must cover whole words.
    if ((t.offset * bpe) % 4 !== 0 || data.byteLength % 4 !== 0) {
      throw new Error(`write: ${t.dtype} writes must start and end on a 4-byte word (offset ${t.offset}, ${t.size} elements)`);
    }
    if (this.tracing) return;
    this.notCapturing('write');
    // queue.writeBuffer runs before unsubmitted commands, so flush them to keep order.
    this.submit();
    this.device.queue.writeBuffer(t.buffer, t.offset * bpe, data.buffer, data.byteOffset, data.byteLength);
  }

  /** Returns tensors made by empty/upload to the pool (not views: they share a buffer). */
  release(...tensors: Tensor[]): void {
    const c = this.capturing;
    for (const t of tensors) {
      if (c?.acquired.has(t.buffer)) {
        const list = c.free.get(t.buffer.size) ?? [];
        list.push(t.buffer);
        c.free.set(t.buffer.size, list);
      } else {
        this.pool.release(t.buffer);
      }
    }
  }

  /**
   * Runs `record` with its dispatches, copies and writes dropped: the host-side choices it makes
   * (the matmul shapes a run will use, for tuning them before its first step) without the GPU
   * work. Buffers it allocates are real; it must not read anything back.
   */
  trace(record: () => void): void {
    this.tracing++;
    try {
      record();
    } finally {
      this.tracing--;
    }
  }

  get isTracing(): boolean {
    return this.tracing > 0;
  }

  dispatch(d: Dispatch): void {
    if (this.tracing) return;
    const max = this.ctx.limits.maxComputeWorkgroupsPerDimension;
    for (const n of d.workgroups) {
      if (n !== undefined && (n > max || n < 0 || !Number.isInteger(n))) {
        throw new Error(`${d.label ?? d.kernel.entry}: ${n} workgroups in one dimension (limit ${max})`);
      }
    }
    const bound = d.buffers.map((b) => (b ? this.binding(b, d) : null));
    const kernel = this.pipelines.prepare(d.kernel);
    const [x, y = 1, z = 1] = d.workgroups;
    this.counters.dispatches++;
    this.counters.workgroups += x * y * z;
    if (this.capturing) {
      this.capturing.entries.push({ kernel, params: d.params, bound, workgroups: [x, y, z], label: d.label ?? d.kernel.entry });
      return;
    }
    this.commands.push({ kind: 'dispatch', d, kernel, bound });
    // A query set holds at most 4096 timestamps: two per profiled dispatch.
    const perDispatch = this.profiler?.mode === 'dispatches';
    if (!this.timing && ++this.recorded >= (perDispatch ? Math.min(MAX_PROFILED_DISPATCHES, this.maxDispatchesPerSubmit) : this.maxDispatchesPerSubmit)) this.submit();
  }

  /** Copies `src` into `dst` (same element count) in recording order. */
  copy(src: Tensor, dst: Tensor): void {
    if (this.tracing) return;
    this.notCapturing('copy');
    if (src.size !== dst.size) throw new Error(`copy: ${src.size} elements into ${dst.size}`);
    if (src.dtype !== dst.dtype) throw new Error(`copy: ${src.dtype} into ${dst.dtype} (a copy does not convert)`);
    const bpe = BYTES_PER_ELEMENT[src.dtype];
    if ([src.offset, dst.offset, src.size].some((n) => (n * bpe) % 4 !== 0)) {
      throw new Error(`copy: ${src.dtype} copies must start and end on a 4-byte word`);
    }
    this.commands.push({
      kind: 'copy',
      src: src.buffer,
      srcOffset: src.offset * bpe,
      dst: dst.buffer,
      dstOffset: dst.offset * bpe,
      bytes: src.size * bpe,
    });
  }

  /**
   * Records what `record` dispatches into a plan instead of the command buffer: replay(plan)
   * then issues it, as often as wanted, without running `record` again. The dispatches must
   * stay right for every replay: their buffers are bound as recorded, their parameters written
   * as recorded but for cells (see Cell), which a replay writes at their values then. Buffers
   * `record` acquires and releases are the plan's until dropPlan (a replay writes them again);
   * nothing may be written, copied or read inside it. The plan is not issued: replay it.
   */
  capture(record: () => void): DispatchPlan {
    if (this.tracing || this.timing || this.capturing) throw new Error('capture: not inside trace, gpuTime or another capture');
    const c: Capture = (this.capturing = { entries: [], acquired: new Set(), free: new Map() });
    const counts: PlanCounts = { dispatches: 0, workgroups: 0, matmulFlops: 0, matmulWeightBytes: 0 };
    const before = { ...this.counters };
    try {
      record();
    } catch (e) {
      for (const list of c.free.values()) for (const b of list) this.pool.release(b);
      throw e;
    } finally {
      this.capturing = null;
      // Counted when replayed, not when recorded.
      for (const k of PLAN_COUNTS) {
        counts[k] = this.counters[k] - before[k];
        this.counters[k] = before[k];
      }
    }
    return new DispatchPlan(c.entries, counts, [...c.free.values()].flat(), this.device, this.ctx.limits.minUniformBufferOffsetAlignment);
  }

  /** Issues a captured plan after the work recorded so far (see capture). */
  replay(plan: DispatchPlan): void {
    if (this.tracing) return;
    this.notCapturing('replay');
    if (plan.destroyed) throw new Error('replay: the plan was dropped');
    // Its last replay, unsubmitted, still needs the parameters it was replayed with.
    if (plan.pendingAt === this.counters.submits) this.submit();
    plan.write(this.device.queue);
    this.commands.push({ kind: 'plan', plan });
    plan.pendingAt = this.counters.submits;
    for (const k of PLAN_COUNTS) this.counters[k] += plan.counts[k];
    this.recorded += plan.counts.dispatches;
    if (!this.timing && this.recorded >= this.maxDispatchesPerSubmit) this.submit();
  }

  /** Frees a plan: its parameter buffer, and its temporaries back to the pool. */
  dropPlan(plan: DispatchPlan): void {
    if (plan.destroyed) return;
    if (plan.pendingAt === this.counters.submits) this.submit();
    plan.destroyed = true;
    plan.uniform.destroy();
    for (const b of plan.temporaries) this.pool.release(b);
  }

  private notCapturing(what: string): void {
    if (this.capturing) throw new Error(`${what}: a captured plan holds dispatches only`);
  }

  /** A plan's pipelines and bind groups, made at its first submit (its pipelines compiled by then). */
  private resolve(plan: DispatchPlan): ResolvedPlan {
    if (plan.resolved) return plan.resolved;
    const pipelines: GPUComputePipeline[] = [];
    const groups: GPUBindGroup[] = [];
    const workgroups = new Uint32Array(3 * plan.entries.length);
    plan.entries.forEach((e, k) => {
      const { pipeline, layout } = this.pipelines.compiled(e.kernel);
      pipelines.push(pipeline);
      groups.push(this.device.createBindGroup({ layout, entries: this.groupEntries(plan.uniform, plan.offsets[k]!, 4 * e.params.words, e.bound) }));
      this.counters.bindGroups++;
      workgroups.set(e.workgroups, 3 * k);
    });
    return (plan.resolved = { pipelines, groups, workgroups });
  }

  /** Encodes all recorded work into one command buffer and submits it. */
  submit(): void {
    this.check();
    const commands = this.commands;
    if (commands.length === 0) return;
    this.commands = [];
    this.recorded = 0;
    const align = this.ctx.limits.minUniformBufferOffsetAlignment;
    const offsets: number[] = [];
    let total = 0;
    for (const c of commands) {
      if (c.kind !== 'dispatch') continue;
      offsets.push(total);
      total += Math.ceil((4 * c.d.params.words) / align) * align;
    }
    if (total > 0) {
      if (!this.arena || this.arena.size < total) {
        this.arena?.destroy();
        this.arena = this.device.createBuffer({ size: Math.max(total * 2, 4096), usage: UNIFORM_USAGE, label: 'params' });
        // Every cached bind group binds the old arena.
        this.dropBindGroups();
      }
      if (this.paramStaging.length < total / 4) this.paramStaging = new Uint32Array(Math.max(total / 2, 2 * this.paramStaging.length));
      const staging = this.paramStaging;
      let i = 0;
      for (const c of commands) if (c.kind === 'dispatch') c.d.params.write(staging, offsets[i++]! / 4);
      this.device.queue.writeBuffer(this.arena, 0, staging.subarray(0, total / 4));
    }
    const encoder = this.device.createCommandEncoder();
    const labels: ProfiledDispatch[] = [];
    const timed = this.timed;
    const profiler = timed ? null : this.profiler;
    const perDispatch = profiler?.mode === 'dispatches';
    const querySet = perDispatch ? profiler.queries(commands.reduce((n, c) => n + (c.kind === 'dispatch' ? 1 : c.kind === 'plan' ? c.plan.entries.length : 0), 0)) : null;
    // Profiling submits: the command buffer's start and end, empty passes around the work.
    const span = profiler && !perDispatch ? profiler.span() : null;
    if (span) encoder.beginComputePass({ timestampWrites: { querySet: span.querySet, beginningOfPassWriteIndex: span.index } }).end();
    // Typed by a cast, not narrowed to null: open() assigns them.
    let pass = null as GPUComputePassEncoder | null;
    /** The pipeline the pass has set: consecutive dispatches of one kernel set it once. */
    let set = null as GPUComputePipeline | null;
    const open = (): GPUComputePassEncoder => {
      if (!pass) {
        pass = encoder.beginComputePass(timed ? { timestampWrites: { querySet: timed.querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
        set = null;
      }
      return pass;
    };
    /** One dispatch: in the pass, or in a pass of its own between its begin and end timestamps when profiling. */
    const encode = (pipeline: GPUComputePipeline, group: GPUBindGroup, x: number, y: number, z: number, label: string) => {
      if (querySet) {
        const p = encoder.beginComputePass({
          timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * labels.length, endOfPassWriteIndex: 2 * labels.length + 1 },
        });
        labels.push({ label, workgroups: x * y * z });
        p.setPipeline(pipeline);
        p.setBindGroup(0, group);
        if (x > 0 && y > 0 && z > 0) p.dispatchWorkgroups(x, y, z);
        p.end();
        return;
      }
      const p = open();
      if (pipeline !== set) p.setPipeline((set = pipeline));
      p.setBindGroup(0, group);
      if (x > 0 && y > 0 && z > 0) p.dispatchWorkgroups(x, y, z);
    };
    let i = 0;
    for (const c of commands) {
      if (c.kind === 'copy') {
        if (timed) throw new Error('gpuTime: only dispatches can be timed (a copy would split the pass)');
        pass?.end();
        pass = null;
        encoder.copyBufferToBuffer(c.src, c.srcOffset, c.dst, c.dstOffset, c.bytes);
        continue;
      }
      if (c.kind === 'plan') {
        const { pipelines, groups, workgroups: w } = this.resolve(c.plan);
        const entries = c.plan.entries;
        for (let k = 0; k < entries.length; k++) encode(pipelines[k]!, groups[k]!, w[3 * k]!, w[3 * k + 1]!, w[3 * k + 2]!, entries[k]!.label);
        continue;
      }
      const { d, kernel, bound } = c;
      const { pipeline, layout } = this.pipelines.compiled(kernel);
      const [x, y = 1, z = 1] = d.workgroups;
      encode(pipeline, this.bindGroup(layout, offsets[i++]!, 4 * d.params.words, bound), x, y, z, d.label ?? d.kernel.entry);
    }
    pass?.end();
    if (timed) {
      encoder.resolveQuerySet(timed.querySet, 0, 2, timed.resolve, 0);
      encoder.copyBufferToBuffer(timed.resolve, 0, timed.read, 0, 16);
    }
    if (span) encoder.beginComputePass({ timestampWrites: { querySet: span.querySet, endOfPassWriteIndex: span.index + 1 } }).end();
    const collect = span ? profiler!.closeSpan(encoder) : profiler && labels.length ? profiler.resolve(encoder, labels) : null;
    this.device.queue.submit([encoder.finish()]);
    this.counters.submits++;
    collect?.();
  }

  /**
   * The bind group of a dispatch: its parameters at `offset` in the arena and `buffers` at
   * bindings 1, 2, ...; made once per distinct binding and reused (a decode step records the
   * same dispatches at the same offsets every token).
   */
  private bindGroup(layout: GPUBindGroupLayout, offset: number, size: number, bound: readonly (GPUBuffer | null)[]): GPUBindGroup {
    let node = child(child(child(this.bindGroups, layout), offset), size);
    for (const buffer of bound) node = child(node, buffer);
    const cached = node.get(GROUP) as GPUBindGroup | undefined;
    if (cached) return cached;
    const entries = this.groupEntries(this.arena!, offset, size, bound);
    // Past the limit every group goes (a step's own are made again once): dropping the least
    // recently used instead would cost every lookup the bookkeeping of its use.
    if (this.bindGroupCount >= MAX_BIND_GROUPS) this.dropBindGroups();
    const group = this.device.createBindGroup({ layout, entries });
    this.counters.bindGroups++;
    this.bindGroupCount++;
    node.set(GROUP, group);
    return group;
  }

  /** A bind group's entries: the parameters at binding 0, then each buffer bound. */
  private groupEntries(params: GPUBuffer, offset: number, size: number, bound: readonly (GPUBuffer | null)[]): GPUBindGroupEntry[] {
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: params, offset, size } }];
    bound.forEach((buffer, k) => {
      if (buffer) entries.push({ binding: k + 1, resource: { buffer, size: this.bindingSize(buffer) } });
    });
    return entries;
  }

  private dropBindGroups(): void {
    this.bindGroups = new Map();
    this.bindGroupCount = 0;
  }

  /**
   * What a binding covers: the buffer from its start (kernels take offsets as parameters) up
   * to the binding limit. A pooled buffer larger than the limit (a size class past it, a view
   * of a larger buffer) still binds, as long as the tensor ends within it; a tensor that ends
   * beyond it is refused here, by name, rather than by the GPU's validation. Whole buffers
   * below the limit bind whole: some kernels read a second view of the same buffer through one
   * binding (decode attention's rows and starts).
   */
  private binding(b: Tensor | GPUBuffer, d: Dispatch): GPUBuffer {
    if (!('shape' in b)) return b;
    const end = (b.offset + b.size) * BYTES_PER_ELEMENT[b.dtype];
    if (end > this.bindingSize(b.buffer)) {
      const max = Math.floor(this.ctx.limits.maxStorageBufferBindingSize / 4) * 4;
      throw new Error(
        `${d.label ?? d.kernel.entry}: a tensor ending ${end} bytes into its buffer exceeds the adapter's binding limit (maxStorageBufferBindingSize ${max} bytes)`,
      );
    }
    return b.buffer;
  }

  /** The bytes of a buffer a binding covers (see binding). */
  private bindingSize(buffer: GPUBuffer): number {
    return Math.min(buffer.size, Math.floor(this.ctx.limits.maxStorageBufferBindingSize / 4) * 4);
  }

  /** Counts a host wait for the results of submit `serial` when nothing was submitted after it. */
  private waitFor(serial: number): void {
    if (serial === this.counters.submits && serial !== this.waitedSubmit) this.counters.hostWaits++;
    this.waitedSubmit = Math.max(this.waitedSubmit, serial);
  }

  /** A tensor read back as float32, one stored in half precision widened on the host. */
  async readF32(t: Tensor): Promise<Float32Array> {
    const values = await this.read(t);
    return values instanceof Uint16Array ? halvesToF32(values) : (values as Float32Array);
  }

  /**
   * Submits recorded work and reads a tensor back to the host (one submit for reads issued
   * together). A large tensor is copied in chunks (see readChunkBytes) all in that submit,
   * and mapped one chunk at a time.
   */
  async read<D extends DType>(t: Tensor<D>): Promise<TypedArrayFor<D>> {
    if (this.tracing) throw new Error('read: nothing is computed while tracing');
    const staged = this.stage(t);
    // Reads requested together (e.g. a step's loss and its gradient statistics) share one
    // submit: it happens once the current synchronous code has finished recording, and the
    // pipelines it uses have compiled.
    this.readSubmit ??= this.pipelines.ready().then(() => {
      this.readSubmit = null;
      this.submit();
    });
    await this.readSubmit;
    this.waitFor(this.counters.submits);
    const out = new Uint8Array(staged.total);
    for (const part of staged.parts) {
      await part.buffer.mapAsync(0x0001 /* READ */);
      this.unstage(part, out);
    }
    return this.typed(t, out, staged.skip);
  }

  /**
   * Submits the work recorded so far with a copy of `t` and starts mapping it, without
   * waiting: the host records and submits later work (the next decode steps) while the GPU
   * finishes this one, and awaits the returned read afterwards. Mapping starts before any
   * later submit, so the read resolves when this work is done, not the work after it.
   */
  readLater<D extends DType>(t: Tensor<D>): PendingRead<D> {
    if (this.tracing) throw new Error('read: nothing is computed while tracing');
    const staged = this.stage(t);
    this.submit();
    const serial = this.counters.submits;
    // Settled into values, so that a read never awaited cannot reject unhandled.
    const mapped = staged.parts.map((part) =>
      part.buffer.mapAsync(0x0001 /* READ */).then(
        () => null,
        (e: unknown) => e,
      ),
    );
    return async () => {
      this.waitFor(serial);
      const out = new Uint8Array(staged.total);
      for (let k = 0; k < staged.parts.length; k++) {
        const failed = await mapped[k];
        if (failed !== null) throw failed;
        this.unstage(staged.parts[k]!, out);
      }
      return this.typed(t, out, staged.skip);
    };
  }

  /**
   * Records copies of `t` into staging buffers (whole words around it), at most
   * readChunkBytes each: no staging buffer exceeds maxBufferSize however large the tensor.
   */
  private stage(t: Tensor): { parts: StagedPart[]; total: number; skip: number } {
    this.notCapturing('read');
    this.counters.readbacks++;
    const bpe = BYTES_PER_ELEMENT[t.dtype];
    // Copies move whole 32-bit words: a half-precision view is read with the words around it.
    const first = Math.floor((t.offset * bpe) / 4) * 4;
    const skip = t.offset * bpe - first;
    const total = wordBytes(skip + t.size * bpe);
    const chunk = Math.max(4, Math.floor(this.readChunkBytes / 4) * 4);
    const parts: StagedPart[] = [];
    for (let at = 0; at < total || parts.length === 0; at += chunk) {
      const bytes = Math.min(chunk, total - at);
      // Small staging buffers are reused by size class: a read per training step or decode
      // step should not allocate GPU memory each time.
      const size = sizeClass(Math.max(bytes, 4), [this.readChunkBytes]);
      const buffer = this.staging.get(size)?.pop() ?? this.device.createBuffer({ size, usage: 0x01 | 0x08 /* MAP_READ|COPY_DST */ });
      if (bytes > 0) this.commands.push({ kind: 'copy', src: t.buffer, srcOffset: first + at, dst: buffer, dstOffset: 0, bytes });
      parts.push({ buffer, size, bytes, at });
    }
    return { parts, total, skip };
  }

  /** Copies a mapped staging buffer's bytes into `out`; keeps the buffer for reuse if it is small. */
  private unstage(s: StagedPart, out: Uint8Array): void {
    if (s.bytes > 0) out.set(new Uint8Array(s.buffer.getMappedRange(0, s.bytes)), s.at);
    s.buffer.unmap();
    const free = this.staging.get(s.size) ?? [];
    if (s.size <= MAX_KEPT_STAGING && free.length < MAX_FREE_STAGING) {
      free.push(s.buffer);
      this.staging.set(s.size, free);
    } else {
      s.buffer.destroy();
    }
  }

  /** The values read, as the tensor's element type. */
  private typed<D extends DType>(t: Tensor<D>, bytes: Uint8Array<ArrayBuffer>, skip: number): TypedArrayFor<D> {
    this.check();
    const Ctor = { f32: Float32Array, i32: Int32Array, u32: Uint32Array, f16: Uint16Array }[t.dtype];
    return new Ctor(bytes.buffer, skip, t.size) as TypedArrayFor<D>;
  }

  /**
   * GPU time in ms of the dispatches `record` records, from two timestamps around one pass
   * that holds them all: a browser rounds timestamps (Chrome to 100 µs), so timing many
   * repetitions together costs one rounding, not one per dispatch. Null where the adapter
   * has no timestamp queries (time with the wall clock there).
   */
  async gpuTime(record: () => void): Promise<number | null> {
    if (!this.ctx.features.has('timestamp-query')) return null;
    this.notCapturing('gpuTime');
    this.submit();
    this.timing = true;
    let mine: Command[];
    try {
      record();
    } finally {
      this.timing = false;
      // Set apart: work other tasks record while the pipelines compile (a read's copy, another
      // caller's dispatches) must neither enter the timed pass nor be timed with it.
      mine = this.commands;
      this.commands = [];
      this.recorded = 0;
    }
    await this.pipelines.ready();
    if (mine.length === 0) return 0;
    this.timerQueries ??= this.device.createQuerySet({ type: 'timestamp', count: 2 });
    const resolve = this.device.createBuffer({ size: 16, usage: 0x200 /* QUERY_RESOLVE */ | 0x04 /* COPY_SRC */ });
    const read = this.device.createBuffer({ size: 16, usage: 0x01 /* MAP_READ */ | 0x08 /* COPY_DST */ });
    // What others recorded meanwhile goes on after the timed submit, as it was recorded after it.
    const others = this.commands;
    const othersRecorded = this.recorded;
    this.commands = mine;
    this.timed = { querySet: this.timerQueries, resolve, read };
    try {
      this.submit();
    } finally {
      this.timed = null;
      this.commands = others;
      this.recorded = othersRecorded;
    }
    this.waitFor(this.counters.submits);
    await read.mapAsync(0x0001 /* READ */);
    const [t0, t1] = new BigInt64Array(read.getMappedRange());
    const ms = Math.max(0, Number(t1! - t0!)) / 1e6;
    read.unmap();
    read.destroy();
    resolve.destroy();
    this.check();
    return ms;
  }

  /** Submits recorded work and waits until the GPU has finished it. */
  async sync(): Promise<void> {
    this.notCapturing('sync');
    await this.pipelines.ready();
    this.submit();
    const done = this.device.queue.onSubmittedWorkDone();
    this.waitFor(this.counters.submits);
    await done;
    this.check();
  }

  async profile(): Promise<ProfileEntry[]> {
    return this.profiler ? this.profiler.report() : [];
  }

  /** The GPU's time on the work profiled since the profiler's reset, ms (Profiler.busyMs; 0 without a profiler). */
  async gpuBusyMs(): Promise<number> {
    return this.profiler ? this.profiler.busyMs() : 0;
  }

  stats(): PoolStats {
    return this.pool.snapshot();
  }

  destroy(): void {
    this.commands = [];
    this.dropBindGroups();
    this.pool.destroy();
    for (const list of this.staging.values()) for (const b of list) b.destroy();
    this.staging.clear();
    this.arena?.destroy();
    this.placeholder.destroy();
    this.profiler?.destroy();
    this.timerQueries?.destroy();
    for (const off of this.unsubscribe) off();
    if (!this.ctx.shared) this.device.destroy();
  }
}
