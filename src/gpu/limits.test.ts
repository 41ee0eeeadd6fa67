import { describe, expect, it } from 'vitest';
import { summarizeAdapter } from './device';
import { sizeClass } from './pool';
import { fill, scale } from './ops/elementwise';
import { testRuntime, rng, uploadHalf } from './testUtils';
import { view } from './tensor';
import { halvesToF32 } from '../util/half';

const MiB = 2 ** 20;

describe('size classes under limits that are not powers of two', () => {
  it('never round a buffer past the first limit that holds it, and waste at most 25%', () => {
    const r = rng(7);
    for (let i = 0; i < 2000; i++) {
      const bytes = Math.floor(2 ** (8 + 24 * r()));
      const binding = Math.floor((bytes * (0.8 + 0.5 * r())) / 4) * 4;
      const buffer = binding + Math.floor(r() * bytes);
      const c = sizeClass(bytes, [binding, buffer]);
      expect(c).toBeGreaterThanOrEqual(bytes);
      expect(c / Math.max(bytes, 256)).toBeLessThanOrEqual(1.25);
      const cap = [binding, buffer].find((l) => bytes <= l);
      if (cap !== undefined) expect(c).toBeLessThanOrEqual(cap);
    }
    // The 0.5B model's case: 1.84 GiB rounds to 2 GiB, over a limit of 2 GiB − 4 bytes.
    const gib = 2 ** 30;
    expect(sizeClass(1.84 * gib)).toBe(2 * gib);
    expect(sizeClass(1.84 * gib, [2 * gib - 4])).toBe(2 * gib - 4);
  });
});

describe('a device whose binding limit is not a power of two (150 MiB)', () => {
  it('binds and reads back a 145 MiB tensor, whose size class (160 MiB) would exceed the limit', async () => {
    const rt = await testRuntime({ limits: { maxStorageBufferBindingSize: 150 * MiB } });
    expect(rt.ctx.limits.maxStorageBufferBindingSize).toBe(150 * MiB);
    const n = (145 * MiB) / 4;
    const x = new Float32Array(n);
    const r = rng(11);
    for (let i = 0; i < n; i += 1) x[i] = r() - 0.5;
    const t = rt.upload(x, [n]);
    expect(t.buffer.size).toBeLessThanOrEqual(150 * MiB);
    const y = scale(rt, t, 2);
    // Read in 64 MiB chunks: three staging buffers, none over the chunk.
    const got = await rt.read(y);
    let bad = -1;
    for (let i = 0; i < n && bad < 0; i++) if (got[i] !== 2 * x[i]!) bad = i;
    expect(bad).toBe(-1);
    rt.release(t, y);
  });
});

describe("WebGPU's default limits", () => {
  it('binds a buffer larger than the limit up to the limit: a view within it runs, a tensor past it is refused by name', async () => {
    const rt = await testRuntime({ defaultLimits: true });
    expect(rt.ctx.limits.maxStorageBufferBindingSize).toBe(128 * MiB);
    const big = rt.empty([(200 * MiB) / 4]);
    const head = view(big, [(100 * MiB) / 4]);
    fill(rt, head, 5);
    const probe = view(big, [4], head.size - 4);
    expect(Array.from(await rt.read(probe))).toEqual([5, 5, 5, 5]);
    expect(() => fill(rt, big, 1)).toThrow(/fill: a tensor ending 209715200 bytes into its buffer exceeds the adapter's binding limit/);
    rt.release(big);
  });

  it('reads back in chunks: every view, f32 and f16 at odd offsets, read and read later, no staging buffer over a chunk', async () => {
    const rt = await testRuntime({ defaultLimits: true, readChunkBytes: 64 });
    const created: number[] = [];
    const createBuffer = rt.device.createBuffer.bind(rt.device);
    rt.device.createBuffer = (d: GPUBufferDescriptor) => {
      if (d.usage & 0x01 /* MAP_READ */) created.push(d.size);
      return createBuffer(d);
    };
    try {
      const r = rng(3);
      const data = Float32Array.from({ length: 1001 }, () => r() - 0.5);
      const whole = rt.upload(data, [data.length]);
      for (const [offset, size] of [[0, 1001], [1, 16], [3, 17], [15, 900], [1000, 1], [0, 0]] as const) {
        const got = await rt.read(view(whole, [size], offset));
        expect(Array.from(got)).toEqual(Array.from(data.subarray(offset, offset + size)));
        const later = await rt.readLater(view(whole, [size], offset))();
        expect(Array.from(later)).toEqual(Array.from(data.subarray(offset, offset + size)));
      }
      const { tensor, values } = uploadHalf(rt, data, [333], 3);
      for (const [offset, size] of [[0, 333], [1, 40], [2, 41], [331, 1]] as const) {
        const got = halvesToF32(await rt.read(view(tensor, [size], offset)));
        expect(Array.from(got)).toEqual(Array.from(values.subarray(offset, offset + size)));
      }
      expect(created.length).toBeGreaterThan(0);
      expect(Math.max(...created)).toBeLessThanOrEqual(64);
      rt.release(whole);
    } finally {
      rt.device.createBuffer = createBuffer;
    }
  });

  it('submits a long recording in command buffers of bounded length, in order', async () => {
    const rt = await testRuntime({ defaultLimits: true, maxDispatchesPerSubmit: 8 });
    const x = rt.upload(new Float32Array([1, 2, 3]), [3]);
    const y = rt.empty([3]);
    await rt.sync();
    const before = rt.counters.submits;
    // Each scale reads what the one before wrote: 20 in a row double the input 20 times.
    for (let i = 0; i < 20; i++) scale(rt, i % 2 ? y : x, 2, i % 2 ? x : y);
    expect(rt.counters.submits - before).toBe(2);
    expect(Array.from(await rt.read(x))).toEqual([1, 2, 3].map((v) => v * 2 ** 20));
    expect(rt.counters.submits - before).toBe(3);
    rt.release(x, y);
  });

  it('compiles pipelines asynchronously and awaits them before the work that uses them', async () => {
    const rt = await testRuntime({ defaultLimits: true, poison: true });
    const before = rt.pipelines.synchronous;
    const x = rt.upload(Float32Array.from({ length: 77 }, (_, i) => i), [77]);
    // A kernel this runtime has not compiled (poison's fill aside): scale's, recorded then read.
    const y = scale(rt, x, -3);
    expect(Array.from(await rt.read(y))).toEqual(Array.from({ length: 77 }, (_, i) => -3 * i));
    expect(rt.pipelines.synchronous).toBe(before);
    rt.release(x, y);
  });
});

describe('adapter summary', () => {
  it('is keyed by client and survives absent or empty adapter info', () => {
    const none = summarizeAdapter(undefined, 'browser page', 'Mozilla/5.0 Chrome/140.0');
    expect(none.key).toBe('-/-/-/-/browser page; Mozilla/5.0 Chrome/140.0');
    const empty = summarizeAdapter({ vendor: '', architecture: '', device: '', description: '' } as GPUAdapterInfo, 'browser page', 'Mozilla/5.0 Chrome/141.0');
    expect(empty.key).not.toBe(none.key);
    const node = summarizeAdapter({ vendor: 'nvidia', architecture: 'hopper', device: '', description: 'NVIDIA H100: 550.54' } as GPUAdapterInfo, 'node (dawn)', undefined);
    expect(node.key).toBe('nvidia/hopper/-/NVIDIA H100: 550.54/node (dawn)');
    expect(node.client).toBe('node (dawn)');
  });
});
