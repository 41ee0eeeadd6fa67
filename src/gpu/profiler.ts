/** Per-kernel GPU time, aggregated by dispatch label and workgroup count (one shape of one kernel). */
export interface ProfileEntry {
  label: string;
  /** Workgroups each of these dispatches launched (0 in entries merged by byLabel). */
  workgroups: number;
  count: number;
  totalMs: number;
}

/** A profiled dispatch: its label and how many workgroups it launched. */
export interface ProfiledDispatch {
  label: string;
  workgroups: number;
}

/** Entries merged per label, whatever their workgroups, slowest first. */
export function byLabel(entries: readonly ProfileEntry[]): ProfileEntry[] {
  const merged = new Map<string, ProfileEntry>();
  for (const e of entries) {
    const m = merged.get(e.label) ?? { label: e.label, workgroups: 0, count: 0, totalMs: 0 };
    m.count += e.count;
    m.totalMs += e.totalMs;
    merged.set(e.label, m);
  }
  return [...merged.values()].sort((a, b) => b.totalMs - a.totalMs);
}

/** One kernel shape's dispatches and GPU time a step. */
export interface KernelTime {
  label: string;
  workgroups: number;
  perStep: number;
  usPerStep: number;
}

/**
 * The entries of `steps` steps (one profile's, or several profiles' together) per (label,
 * workgroups), as figures a step, slowest first.
 */
export function perStep(entries: readonly ProfileEntry[], steps: number): KernelTime[] {
  const merged = new Map<string, KernelTime>();
  for (const e of entries) {
    const key = `${e.label}|${e.workgroups}`;
    const k = merged.get(key) ?? { label: e.label, workgroups: e.workgroups, perStep: 0, usPerStep: 0 };
    k.perStep += e.count / steps;
    k.usPerStep += (1000 * e.totalMs) / steps;
    merged.set(key, k);
  }
  return [...merged.values()].sort((a, b) => b.usPerStep - a.usPerStep);
}

/**
 * What a profiling runtime times. `dispatches`: each dispatch in a compute pass of its own
 * between two timestamps, the kernels' own times (ProfileEntry), at a cost: the host records a
 * pass a dispatch and submits at most 2,048 dispatches at once, and the GPU runs the passes
 * one after another, so a profiled run's wall time is not an unprofiled one's. `submits`: two
 * timestamps a command buffer, at its start and its end (empty passes around the work, which
 * is encoded as it is unprofiled): the time the GPU spends on the runtime's work, the union of
 * the submits' spans, beside a wall time the profiling hardly moves.
 */
export type ProfileMode = 'dispatches' | 'submits';

/** The length of the union of intervals [begin, end] (unsorted, overlapping or not). */
export function unionLength(spans: readonly (readonly [number, number])[]): number {
  const sorted = spans.filter(([b, e]) => e > b).sort((x, y) => x[0] - y[0]);
  let total = 0;
  let from = -Infinity;
  let to = -Infinity;
  for (const [b, e] of sorted) {
    if (b > to) {
      if (to > from) total += to - from;
      [from, to] = [b, e];
    } else if (e > to) to = e;
  }
  return to > from ? total + to - from : total;
}

/**
 * Submits whose spans are resolved and read at once (`submits`): a query pair each in a set of
 * their own, so a submit adds two empty passes and nothing else, where a read of its own (two
 * buffers, a copy and a map) cost the host about as much as the work of a short decode step.
 */
export const SPAN_BATCH = 256;

/**
 * Collects timestamp-query results, per dispatch or per submit (ProfileMode); results are
 * resolved into a buffer and read back asynchronously.
 */
export class Profiler {
  /** Switchable between submits: what the next ones time. */
  mode: ProfileMode = 'dispatches';
  private readonly totals = new Map<string, ProfileEntry>();
  /** Submits' [start, end] in ns, relative to `origin` (timestamps need not start near 0). */
  private readonly spans: [number, number][] = [];
  private origin: bigint | null = null;
  private readonly pending: Promise<void>[] = [];
  private querySet: GPUQuerySet | null = null;
  private capacity = 0;
  /** The submits' query pairs, and how many of them hold a span not yet resolved. */
  private spanSet: GPUQuerySet | null = null;
  private spanCount = 0;
  /** Where the spans are resolved (read by a copy in the same command buffer, so one serves every batch). */
  private spanResolve: GPUBuffer | null = null;
  /** Read buffers of a batch's size, unmapped and free. */
  private readonly spanReads: GPUBuffer[] = [];
  /** Bumped by reset: a read begun before it is dropped. */
  private epoch = 0;

  constructor(private readonly device: GPUDevice) {}

  /** A query set with room for `dispatches` begin/end pairs. */
  queries(dispatches: number): GPUQuerySet {
    const count = dispatches * 2;
    if (!this.querySet || this.capacity < count) {
      this.querySet?.destroy();
      this.capacity = Math.max(count, 64);
      this.querySet = this.device.createQuerySet({ type: 'timestamp', count: this.capacity });
    }
    return this.querySet;
  }

  /** Resolves the first `labels.length` pairs after the work encoded so far (`dispatches`). */
  resolve(encoder: GPUCommandEncoder, labels: readonly ProfiledDispatch[]): () => void {
    const bytes = labels.length * 16;
    const resolveBuf = this.device.createBuffer({ size: bytes, usage: 0x200 /* QUERY_RESOLVE */ | 0x04 });
    const readBuf = this.device.createBuffer({ size: bytes, usage: 0x01 /* MAP_READ */ | 0x08 });
    encoder.resolveQuerySet(this.querySet!, 0, labels.length * 2, resolveBuf, 0);
    encoder.copyBufferToBuffer(resolveBuf, 0, readBuf, 0, bytes);
    // Called after submit: map and accumulate.
    return () =>
      this.read(readBuf, (t) => {
        labels.forEach(({ label, workgroups }, i) => {
          const ns = Number(t[2 * i + 1]! - t[2 * i]!);
          const key = `${label}|${workgroups}`;
          const e = this.totals.get(key) ?? { label, workgroups, count: 0, totalMs: 0 };
          e.count++;
          e.totalMs += Math.max(0, ns) / 1e6;
          this.totals.set(key, e);
        });
      }, () => {
        readBuf.destroy();
        resolveBuf.destroy();
      });
  }

  /** The query set and the begin index of the next submit's span (`submits`): its end is the index after. */
  span(): { querySet: GPUQuerySet; index: number } {
    this.spanSet ??= this.device.createQuerySet({ type: 'timestamp', count: 2 * SPAN_BATCH });
    return { querySet: this.spanSet, index: 2 * this.spanCount };
  }

  /**
   * After a submit's span is encoded (`span`): counts it, and when the batch is full resolves
   * it into a read, in the same encoder; the returned call, made after the submit, starts the
   * read (null while the batch fills).
   */
  closeSpan(encoder: GPUCommandEncoder): (() => void) | null {
    return ++this.spanCount === SPAN_BATCH ? this.resolveSpans(encoder) : null;
  }

  /** Resolves the batch's spans so far into a read buffer; the returned call starts the read. */
  private resolveSpans(encoder: GPUCommandEncoder): () => void {
    const n = this.spanCount;
    this.spanCount = 0;
    const bytes = 16 * SPAN_BATCH;
    this.spanResolve ??= this.device.createBuffer({ size: bytes, usage: 0x200 /* QUERY_RESOLVE */ | 0x04 });
    const readBuf = this.spanReads.pop() ?? this.device.createBuffer({ size: bytes, usage: 0x01 /* MAP_READ */ | 0x08 });
    encoder.resolveQuerySet(this.spanSet!, 0, 2 * n, this.spanResolve, 0);
    encoder.copyBufferToBuffer(this.spanResolve, 0, readBuf, 0, 16 * n);
    return () =>
      this.read(readBuf, (t) => {
        for (let i = 0; i < n; i++) {
          this.origin ??= t[2 * i]!;
          this.spans.push([Number(t[2 * i]! - this.origin), Number(t[2 * i + 1]! - this.origin)]);
        }
      }, () => this.spanReads.push(readBuf));
  }

  /**
   * Maps `buf` (after the submit that filled it), hands its timestamps to `take` unless a reset
   * came between, unmaps it and `release`s it.
   */
  private read(buf: GPUBuffer, take: (t: BigInt64Array) => void, release: () => void): void {
    const epoch = this.epoch;
    this.pending.push(
      buf.mapAsync(0x0001 /* READ */).then(() => {
        if (epoch === this.epoch) take(new BigInt64Array(buf.getMappedRange()));
        buf.unmap();
        release();
      }),
    );
  }

  /** Waits for outstanding results (a batch of spans still filling resolved first) and returns the kernels' totals (`dispatches`), slowest first. */
  async report(): Promise<ProfileEntry[]> {
    if (this.spanCount > 0) {
      const encoder = this.device.createCommandEncoder();
      const start = this.resolveSpans(encoder);
      this.device.queue.submit([encoder.finish()]);
      start();
    }
    await Promise.all(this.pending.splice(0));
    return [...this.totals.values()].sort((a, b) => b.totalMs - a.totalMs);
  }

  /**
   * The GPU's time on the work timed since the last reset, in ms: the union of the submits'
   * spans, plus the kernels' own times of the dispatches profiled one by one.
   */
  async busyMs(): Promise<number> {
    const kernels = (await this.report()).reduce((n, e) => n + e.totalMs, 0);
    return kernels + unionLength(this.spans) / 1e6;
  }

  /** Submits whose spans were read since the last reset (complete after `report`). */
  get timedSubmits(): number {
    return this.spans.length;
  }

  /** Forgets what was timed: the totals, the spans, a batch still filling and reads not yet done. */
  reset(): void {
    this.totals.clear();
    this.spans.length = 0;
    this.spanCount = 0;
    this.epoch++;
  }

  destroy(): void {
    this.querySet?.destroy();
    this.spanSet?.destroy();
    this.spanResolve?.destroy();
    for (const b of this.spanReads.splice(0)) b.destroy();
  }
}
