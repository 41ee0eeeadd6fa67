/** What the pool holds, in buffers and bytes. */
export interface PoolStats {
  liveBuffers: number;
  liveBytes: number;
  pooledBuffers: number;
  pooledBytes: number;
  /** Buffers ever created (a reuse hit creates none). */
  created: number;
}

// STORAGE | COPY_SRC | COPY_DST, spelled as numbers because the GPUBufferUsage global
// exists only after a WebGPU implementation has loaded (Dawn in Node).
const USAGE = 0x80 | 0x04 | 0x08;

/**
 * Size class: four steps per octave (1, 1.25, 1.5, 1.75 × 2^k), so a reused buffer wastes
 * at most 25%. Minimum 256 bytes. Never rounded past the first of `caps` (in increasing
 * order) that holds `bytes`: an adapter's limits need not be powers of two (a 1.84 GiB
 * buffer rounded to 2 GiB would exceed a binding limit of 2 GiB − 4 bytes), and a buffer
 * that fits a limit must stay within it.
 */
export function sizeClass(bytes: number, caps: readonly number[] = []): number {
  const rounded = bytes <= 256 ? 256 : roundUp(bytes);
  const cap = caps.find((c) => bytes <= c);
  return cap === undefined ? rounded : Math.min(rounded, Math.floor(cap / 4) * 4);
}

function roundUp(bytes: number): number {
  const octave = 2 ** Math.floor(Math.log2(bytes));
  const step = octave / 4;
  return Math.ceil(bytes / step) * step;
}

/** Reuses freed storage buffers by size class and accounts what is live. */
export class BufferPool {
  private readonly free = new Map<number, GPUBuffer[]>();
  private readonly live = new Set<GPUBuffer>();
  private stats: PoolStats = { liveBuffers: 0, liveBytes: 0, pooledBuffers: 0, pooledBytes: 0, created: 0 };

  /** Limits a size class stays within: the binding limit for what binds whole, then the buffer limit. */
  private readonly caps: number[];

  constructor(
    private readonly device: GPUDevice,
    private readonly maxBufferSize: number,
    maxBindingSize = maxBufferSize,
  ) {
    this.caps = [Math.min(maxBindingSize, maxBufferSize), maxBufferSize];
  }

  /** The size of the buffer acquire(bytes) hands out. */
  sizeOf(bytes: number): number {
    return sizeClass(Math.max(bytes, 4), this.caps);
  }

  acquire(bytes: number, label?: string): GPUBuffer {
    const size = this.sizeOf(bytes);
    if (size > this.maxBufferSize) {
      throw new Error(
        `buffer of ${bytes} bytes exceeds the adapter's maxBufferSize (${this.maxBufferSize} bytes)`,
      );
    }
    const list = this.free.get(size);
    let buffer = list?.pop();
    if (buffer) {
      this.stats.pooledBuffers--;
      this.stats.pooledBytes -= size;
    } else {
      buffer = this.device.createBuffer({ size, usage: USAGE, label });
      this.stats.created++;
    }
    this.live.add(buffer);
    this.stats.liveBuffers++;
    this.stats.liveBytes += size;
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    if (!this.live.delete(buffer)) throw new Error('releasing a buffer the pool does not hold (double free?)');
    this.stats.liveBuffers--;
    this.stats.liveBytes -= buffer.size;
    const list = this.free.get(buffer.size) ?? [];
    list.push(buffer);
    this.free.set(buffer.size, list);
    this.stats.pooledBuffers++;
    this.stats.pooledBytes += buffer.size;
  }

  /** Destroys every pooled (free) buffer. */
  trim(): void {
    for (const list of this.free.values()) for (const b of list) b.destroy();
    this.free.clear();
    this.stats.pooledBuffers = 0;
    this.stats.pooledBytes = 0;
  }

  snapshot(): PoolStats {
    return { ...this.stats };
  }

  destroy(): void {
    this.trim();
    for (const b of this.live) b.destroy();
    this.live.clear();
    this.stats.liveBuffers = 0;
    this.stats.liveBytes = 0;
  }
}
