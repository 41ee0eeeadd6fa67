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
    return this.readBack(encoder, labels.length, (t) =>
      labels.forEach(({ label, workgroups }, i) => {
        const ns = Number(t[2 * i + 1]! - t[2 * i]!);
        const key = `${label}|${workgroups}`;
        const e = this.totals.get(key) ?? { label, workgroups, count: 0, totalMs: 0 };
        e.count++;
        e.totalMs += Math.max(0, ns) / 1e6;
        this.totals.set(key, e);
      }),
    );
  }

  /** Resolves the submit's pair, its start and its end, after the work encoded so far (`submits`). */
  resolveSpan(encoder: GPUCommandEncoder): () => void {
    return this.readBack(encoder, 1, (t) => {
      this.origin ??= t[0]!;
      this.spans.push([Number(t[0]! - this.origin), Number(t[1]! - this.origin)]);
    });
  }

  /** Resolves `pairs` pairs into a buffer read after the submit (the returned call), then `take`s them. */
  private readBack(encoder: GPUCommandEncoder, pairs: number, take: (t: BigInt64Array) => void): () => void {
    const bytes = pairs * 16;
    const resolveBuf = this.device.createBuffer({ size: bytes, usage: 0x200 /* QUERY_RESOLVE */ | 0x04 });
    const readBuf = this.device.createBuffer({ size: bytes, usage: 0x01 /* MAP_READ */ | 0x08 });
    encoder.resolveQuerySet(this.querySet!, 0, pairs * 2, resolveBuf, 0);
    encoder.copyBufferToBuffer(resolveBuf, 0, readBuf, 0, bytes);
    // Called after submit: map and accumulate.
    return () => {
      this.pending.push(
        readBuf.mapAsync(0x0001 /* READ */).then(() => {
          take(new BigInt64Array(readBuf.getMappedRange()));
          readBuf.unmap();
          readBuf.destroy();
          resolveBuf.destroy();
        }),
      );
    };
  }

  /** Waits for outstanding results and returns the kernels' totals (`dispatches`), slowest first. */
  async report(): Promise<ProfileEntry[]> {
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

  reset(): void {
    this.totals.clear();
    this.spans.length = 0;
  }

  destroy(): void {
    this.querySet?.destroy();
  }
}
