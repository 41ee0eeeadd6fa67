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
 * Collects timestamp-query results. Each profiled dispatch gets its own compute pass with
 * begin/end timestamps; results are resolved into a buffer and read back asynchronously.
 */
export class Profiler {
  private readonly totals = new Map<string, ProfileEntry>();
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

  /** Resolves the first `labels.length` pairs after the work encoded so far. */
  resolve(encoder: GPUCommandEncoder, labels: readonly ProfiledDispatch[]): () => void {
    const bytes = labels.length * 16;
    const resolveBuf = this.device.createBuffer({ size: bytes, usage: 0x200 /* QUERY_RESOLVE */ | 0x04 });
    const readBuf = this.device.createBuffer({ size: bytes, usage: 0x01 /* MAP_READ */ | 0x08 });
    encoder.resolveQuerySet(this.querySet!, 0, labels.length * 2, resolveBuf, 0);
    encoder.copyBufferToBuffer(resolveBuf, 0, readBuf, 0, bytes);
    // Called after submit: map and accumulate.
    return () => {
      this.pending.push(
        readBuf.mapAsync(0x0001 /* READ */).then(() => {
          const t = new BigInt64Array(readBuf.getMappedRange());
          labels.forEach(({ label, workgroups }, i) => {
            const ns = Number(t[2 * i + 1]! - t[2 * i]!);
            const key = `${label}|${workgroups}`;
            const e = this.totals.get(key) ?? { label, workgroups, count: 0, totalMs: 0 };
            e.count++;
            e.totalMs += Math.max(0, ns) / 1e6;
            this.totals.set(key, e);
          });
          readBuf.unmap();
          readBuf.destroy();
          resolveBuf.destroy();
        }),
      );
    };
  }

  /** Waits for outstanding results and returns the totals, slowest first. */
  async report(): Promise<ProfileEntry[]> {
    await Promise.all(this.pending.splice(0));
    return [...this.totals.values()].sort((a, b) => b.totalMs - a.totalMs);
  }

  reset(): void {
    this.totals.clear();
  }

  destroy(): void {
    this.querySet?.destroy();
  }
}
