import { describe, expect, it } from 'vitest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodePlatform } from '../platform/node';
import { Cell, Params } from './params';
import { PipelineCache, type KernelSpec } from './pipelines';
import { sizeClass } from './pool';
import { SPAN_BATCH } from './profiler';
import { Runtime } from './runtime';
import type { Tensor } from './tensor';
import { freshSeed, rng, testRuntime, uniform } from './testUtils';
import { grid } from './ops/common';
import { add, scale } from './ops/elementwise';
import { matmulTuner } from './ops/autotune';
import { matmul } from './ops/matmul';

describe('buffer pool', () => {
  it('size classes waste at most 25%', () => {
    for (const bytes of [1, 255, 256, 257, 1000, 4096, 5000, 123457, 2 ** 20 + 1]) {
      const c = sizeClass(bytes);
      expect(c).toBeGreaterThanOrEqual(bytes);
      if (bytes > 256) expect(c / bytes).toBeLessThanOrEqual(1.25);
    }
  });

  it('reuses released buffers and accounts live bytes', async () => {
    const rt = await testRuntime();
    const before = rt.stats();
    const a = rt.empty([1000]);
    const mid = rt.stats();
    expect(mid.liveBuffers).toBe(before.liveBuffers + 1);
    expect(mid.liveBytes).toBe(before.liveBytes + sizeClass(4000));
    rt.release(a);
    const b = rt.empty([990]); // same size class: must reuse
    expect(rt.stats().created).toBe(mid.created);
    expect(b.buffer).toBe(a.buffer);
    rt.release(b);
    expect(rt.stats().liveBytes).toBe(before.liveBytes);
    expect(() => rt.release(b)).toThrow(/double free/);
  });

  it('stays flat over repeated work', async () => {
    const rt = await testRuntime();
    const x = rt.upload(new Float32Array(512).fill(1), [16, 32]);
    const w = rt.upload(new Float32Array(32 * 8).fill(0.5), [32, 8]);
    const step = async () => {
      const y = matmul(rt, { a: x, b: w });
      const z = scale(rt, y, 2);
      const s = add(rt, z, y);
      await rt.read(s);
      rt.release(y, z, s);
    };
    await step();
    const after1 = rt.stats();
    for (let i = 0; i < 20; i++) await step();
    const after = rt.stats();
    expect(after.liveBytes).toBe(after1.liveBytes);
    expect(after.liveBuffers).toBe(after1.liveBuffers);
    expect(after.created).toBe(after1.created);
    rt.release(x, w);
  });
});

describe('params packing', () => {
  it('lays out u32, i32 and f32 fields padded to 16 bytes', () => {
    const params = new Params().u32(7).i32(-2).f32(1.5);
    expect(params.words).toBe(4);
    // Written at a word past the start, over stale words: the padding is zeroed.
    const out = new Uint32Array(6).fill(0xdeadbeef);
    params.write(out, 1);
    expect(out[0]).toBe(0xdeadbeef);
    expect(out[1]).toBe(7);
    expect(new Int32Array(out.buffer)[2]).toBe(-2);
    expect(new Float32Array(out.buffer)[3]).toBe(1.5);
    expect(out[4]).toBe(0);
    expect(out[5]).toBe(0xdeadbeef);
    expect(new Params().u32(1, 2, 3, 4, 5).words).toBe(8);
    expect(new Params().words).toBe(4);
    expect(() => new Params().u32(-1)).toThrow(/out of range/);
  });
});

describe('pipeline cache', () => {
  it('finds a kernel by its spec: specs that differ only in order share one pipeline, another value is another', async () => {
    const rt = await testRuntime();
    const cache = new PipelineCache(rt.device, (name) => rt.platform.shaderSource(name));
    const spec = (y: boolean, s: boolean, swapped = false): KernelSpec => ({
      shader: 'reduce',
      entry: 'col_reduce',
      constants: swapped ? { HAS_S: s, HAS_Y: y } : { HAS_Y: y, HAS_S: s },
    });
    const a = cache.prepare(spec(true, false));
    expect(cache.prepare(spec(true, false))).toBe(a);
    expect(cache.prepare(spec(true, false, true))).toBe(a);
    const b = cache.prepare(spec(false, false));
    expect(b).not.toBe(a);
    await cache.ready();
    expect(cache.compiled(a).pipeline).not.toBe(cache.compiled(b).pipeline);
    // Compiled in the background, none of them synchronously.
    expect(cache.synchronous).toBe(0);
  });
});

describe('runtime', () => {
  it('allows f16 products in inference exactly where the device has shader-f16, and refuses them elsewhere', async () => {
    const rt = await testRuntime();
    const has = rt.ctx.features.has('shader-f16');
    expect(rt.halfMath).toBe(has);
    if (!has) await expect(Runtime.create(nodePlatform(), { halfMath: true })).rejects.toThrow(/^f16 products \(halfMath\) need a device with shader-f16; this adapter \(.+\) has none$/);
  });

  it('records many dispatches into one submit', async () => {
    const rt = await testRuntime();
    const queue = rt.device.queue;
    let submits = 0;
    const original = queue.submit.bind(queue);
    queue.submit = (buffers: Iterable<GPUCommandBuffer>) => {
      submits++;
      original(buffers);
    };
    try {
      const x = rt.upload(new Float32Array([1, 2, 3]), [3]);
      let y: Tensor = x;
      const made = [];
      for (let i = 0; i < 10; i++) {
        y = scale(rt, y, 2);
        made.push(y);
      }
      expect(submits).toBe(0);
      expect(Array.from(await rt.read(y))).toEqual([1024, 2048, 3072]);
      expect(submits).toBe(1);
      // Reads issued together share one submit.
      const [a, b] = await Promise.all([rt.read(x), rt.read(made[0]!)]);
      expect(Array.from(a)).toEqual([1, 2, 3]);
      expect(Array.from(b)).toEqual([2, 4, 6]);
      expect(submits).toBe(2);
      rt.release(x, ...made);
    } finally {
      queue.submit = original;
    }
  });

  it('reuses bind groups: the same dispatches recorded again create none, whatever their parameters', async () => {
    const rt = await testRuntime();
    const x = rt.upload(Float32Array.from({ length: 6 }, (_, i) => i), [6]);
    const y = rt.empty([6]);
    const z = rt.empty([6]);
    // A step of three dispatches on fixed buffers; the parameters (alpha) change every time.
    const step = (k: number) => {
      scale(rt, x, k, y);
      add(rt, x, y, z);
      scale(rt, z, 0.5, y);
    };
    step(1);
    await rt.read(y);
    const before = { ...rt.counters };
    for (let k = 2; k <= 5; k++) {
      step(k);
      // (x + k·x) / 2, exactly: small integers and halves.
      expect(Array.from(await rt.read(y)), `step ${k}`).toEqual(Array.from({ length: 6 }, (_, i) => ((1 + k) * i) / 2));
    }
    expect(rt.counters.bindGroups - before.bindGroups).toBe(0);
    expect(rt.counters.dispatches - before.dispatches).toBe(12);
    // One submit per read, and each read awaited right after it: four host waits.
    expect(rt.counters.submits - before.submits).toBe(4);
    expect(rt.counters.hostWaits - before.hostWaits).toBe(4);
    // Another buffer in one binding is another bind group.
    const w = rt.empty([6]);
    scale(rt, x, 3, w);
    await rt.read(w);
    expect(rt.counters.bindGroups - before.bindGroups).toBe(1);
    rt.release(x, y, z, w);
  });

  it('readLater: reads awaited after later work was submitted are not host waits, and see their own step', async () => {
    const rt = await testRuntime();
    const x = rt.upload(new Float32Array([1, 2, 3, 4]), [4]);
    const before = { ...rt.counters };
    // Each step doubles x in place (through y) and starts reading it; the reads are awaited
    // two steps late, so each must still hold its own step's values.
    const y = rt.empty([4]);
    const pending: (() => Promise<Float32Array>)[] = [];
    const got: number[][] = [];
    for (let k = 0; k < 6; k++) {
      scale(rt, x, 2, y);
      rt.copy(y, x);
      pending.push(rt.readLater(x));
      if (pending.length > 2) got.push(Array.from(await pending.shift()!()));
    }
    while (pending.length) got.push(Array.from(await pending.shift()!()));
    expect(got).toEqual(Array.from({ length: 6 }, (_, k) => [1, 2, 3, 4].map((v) => v * 2 ** (k + 1))));
    expect(rt.counters.submits - before.submits).toBe(6);
    // Only the last read drains the queue: every other was awaited after a later submit.
    expect(rt.counters.hostWaits - before.hostWaits).toBe(1);
    expect(rt.counters.readbacks - before.readbacks).toBe(6);
    rt.release(x, y);
  });

  it('a trace records nothing: no dispatch, copy or write reaches the GPU, nothing counts, reads are refused', async () => {
    const rt = await testRuntime();
    const a = rt.upload(Float32Array.from({ length: 12 }, (_, i) => i + 1), [3, 4]);
    const out = rt.upload(new Float32Array(9).fill(-7), [3, 3]);
    const copy = rt.upload(new Float32Array(9).fill(-8), [3, 3]);
    const before = { ...rt.counters };
    let read: Promise<unknown> | null = null;
    rt.trace(() => {
      matmul(rt, { a, b: a, transB: true, out });
      rt.copy(out, copy);
      rt.write(copy, new Float32Array(9).fill(5));
      read = rt.read(out);
    });
    await expect(read).rejects.toThrow('nothing is computed while tracing');
    expect(rt.counters).toEqual(before);
    expect(Array.from(await rt.read(out))).toEqual(new Array(9).fill(-7));
    expect(Array.from(await rt.read(copy))).toEqual(new Array(9).fill(-8));
    // Out of the trace the same work runs and counts: 2·M·N·K = 72 FLOPs, one dispatch.
    matmul(rt, { a, b: a, transB: true, out });
    expect(rt.counters.dispatches - before.dispatches).toBe(1);
    expect(rt.counters.matmulFlops - before.matmulFlops).toBe(72);
    expect((await rt.read(out))[0]).toBe(1 + 4 + 9 + 16);
    rt.release(a, out, copy);
  });

  it('reports the adapter, granted features and raised limits', async () => {
    const rt = await testRuntime();
    expect(rt.ctx.adapter.key.length).toBeGreaterThan(0);
    expect(rt.ctx.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    for (const f of rt.ctx.features) expect(rt.device.features.has(f)).toBe(true);
  });

  it('profiles each dispatch with GPU timestamps when the adapter has them', async (ctx) => {
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-prof-${process.pid}.json`) }), {
      profile: true,
    });
    // Reported as skipped, not passed, on an adapter without timestamp queries.
    if (!rt.ctx.features.has('timestamp-query')) ctx.skip();
    const a = rt.upload(new Float32Array(64 * 64).fill(1), [64, 64]);
    const b = rt.upload(new Float32Array(64 * 64).fill(1), [64, 64]);
    const c = matmul(rt, { a, b });
    scale(rt, c, 3);
    await rt.sync();
    const report = await rt.profile();
    const labels = report.map((e) => e.label);
    expect(labels.some((l) => l.startsWith('matmul_'))).toBe(true);
    expect(labels).toContain('scale');
    for (const e of report) {
      expect(e.count).toBe(1);
      expect(e.totalMs).toBeGreaterThanOrEqual(0);
    }
    // Each entry is one shape of one kernel: the scale of 64·64 elements launches what it asked for.
    const scaled = report.find((e) => e.label === 'scale')!;
    expect(scaled.workgroups).toBeGreaterThan(0);
    expect(report.every((e) => Number.isInteger(e.workgroups) && e.workgroups > 0)).toBe(true);
    rt.destroy();
  });

  it('persists settings through the platform: an autotuned winner survives a restart', async () => {
    const cacheFile = join(tmpdir(), `sage-cache-${process.pid}-${Date.now()}.json`);
    const shape = { batch: 1, M: 48, N: 40, K: 32, transA: false, transB: false };
    const first = await Runtime.create(nodePlatform({ cacheFile }));
    expect(matmulTuner(first).isTuned(shape)).toBe(false);
    await matmulTuner(first).tune(shape, 1);
    await first.cacheFlush();
    const winner = matmulTuner(first).choose(shape);
    first.destroy();
    const second = await Runtime.create(nodePlatform({ cacheFile }));
    expect(matmulTuner(second).isTuned(shape)).toBe(true);
    expect(matmulTuner(second).choose(shape)).toBe(winner);
    second.destroy();
  });

  it('runtimes of one Node process share a device and its pipelines; one that ends leaves the device to the others', async () => {
    const cacheFile = join(tmpdir(), `sage-shared-${process.pid}.json`);
    const first = await Runtime.create(nodePlatform({ cacheFile }));
    const second = await Runtime.create(nodePlatform({ cacheFile }));
    expect(second.device).toBe(first.device);
    expect(second.pipelines).toBe(first.pipelines);
    // A device of its own, for a test that loses it on purpose.
    const own = await Runtime.create(nodePlatform({ cacheFile, ownDevice: true }));
    expect(own.device).not.toBe(first.device);
    own.destroy();
    first.destroy();
    const x = second.upload(Float32Array.from([1, 2, 3, 4]), [4]);
    expect(Array.from(await second.read(scale(second, x, 2)))).toEqual([2, 4, 6, 8]);
    second.destroy();
  });

  it('reports device loss with its reason and refuses further work', async () => {
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-lost-${process.pid}.json`), ownDevice: true }));
    const lost = new Promise<string>((resolve) => rt.ctx.onLost((info) => resolve(info.reason)));
    rt.device.destroy();
    expect(await lost).toBe('destroyed');
    expect(() => scale(rt, rt.empty([4]), 2)).not.toThrow(); // recording is host-only
    expect(() => rt.submit()).toThrow(/device lost \(destroyed/);
  });

  it('turns GPU validation errors into exceptions', async () => {
    const rt = await testRuntime();
    rt.dispatch({
      kernel: { shader: 'elementwise', entry: 'no_such_entry' },
      params: new Params().u32(1),
      buffers: [],
      workgroups: [1],
    });
    await expect(rt.sync()).rejects.toThrow(/GPU error/);
  });
});

describe('captured plans', () => {
  /** out[at..at + n) = 2·x + y through a temporary, `at` a cell: two dispatches, one temporary. */
  const twiceXPlusY = (rt: Runtime, x: Tensor, y: Tensor, out: Tensor, at: number | Cell) => {
    const t = scale(rt, x, 2);
    rt.dispatch({
      kernel: { shader: 'elementwise', entry: 'binary', constants: { OP: 0 } },
      params: new Params().u32(x.size, t.offset, y.offset, at).f32(0).u32(0, 0).f32(0).u32(0, 0, 0, 0),
      buffers: [t, y, out],
      workgroups: grid(rt, x.size),
      label: 'add',
    });
    rt.release(t);
  };

  it("replays what was recorded, each cell at its value when replayed, replays unsubmitted or not, and counts each replay's dispatches", async () => {
    const rt = await testRuntime({ poison: true });
    const r = rng(freshSeed());
    const n = 300;
    const [xs, ys] = [uniform(n, r, 1), uniform(n, r, 1)];
    const x = rt.upload(xs, [n]);
    const y = rt.upload(ys, [n]);
    const out = rt.empty([6 * n]);
    const at = new Cell(0);
    const before = { ...rt.counters };
    const plan = rt.capture(() => twiceXPlusY(rt, x, y, out, at));
    // Recorded, not issued: nothing counted yet.
    expect(rt.counters.dispatches).toBe(before.dispatches);
    // Slots 0 and 1 replayed back to back (the second finds the first unsubmitted), slot 2 after a read.
    for (const k of [0, 1]) {
      at.set(k * n);
      rt.replay(plan);
    }
    await rt.sync();
    at.set(2 * n);
    rt.replay(plan);
    expect(rt.counters.dispatches - before.dispatches).toBe(6);
    // The same step recorded at slot 3, and slot 5 replayed into a fresh submit after it.
    twiceXPlusY(rt, x, y, out, 3 * n);
    at.set(5 * n);
    rt.replay(plan);
    const got = await rt.read(out);
    const want = Float32Array.from(xs, (v, i) => Math.fround(Math.fround(2 * v) + ys[i]!));
    for (const k of [0, 1, 2, 3, 5]) expect(got.subarray(k * n, (k + 1) * n)).toEqual(want);
    // Slot 4 never written: still the poison.
    expect(got.subarray(4 * n, 5 * n).every(Number.isNaN)).toBe(true);
    rt.dropPlan(plan);
    rt.release(x, y, out);
  });

  it('profiles whole submits: the GPU busy time of the work as it runs unprofiled, no kernel entries, results unchanged', async (ctx) => {
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-prof-submits-${process.pid}.json`) }), { profile: true });
    if (!rt.ctx.features.has('timestamp-query')) ctx.skip();
    rt.profiler!.mode = 'submits';
    const n = 1 << 16;
    const x = rt.upload(new Float32Array(n).fill(1), [n]);
    const y = rt.upload(new Float32Array(n).fill(2), [n]);
    const out = rt.empty([n]);
    const t0 = performance.now();
    for (let k = 0; k < 5; k++) {
      twiceXPlusY(rt, x, y, out, 0);
      rt.submit();
    }
    await rt.sync();
    const wallMs = performance.now() - t0;
    expect(Array.from(await rt.read(out))).toEqual(new Array(n).fill(4));
    expect(await rt.profile()).toEqual([]);
    const busy = await rt.gpuBusyMs();
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(wallMs + 1);
    // Back to one pass a dispatch: the kernels again, and the busy time theirs alone after a reset.
    rt.profiler!.reset();
    rt.profiler!.mode = 'dispatches';
    twiceXPlusY(rt, x, y, out, 0);
    await rt.sync();
    const kernels = await rt.profile();
    expect(kernels.map((e) => e.label).sort()).toEqual(['add', 'scale']);
    expect(await rt.gpuBusyMs()).toBeCloseTo(kernels.reduce((m, e) => m + e.totalMs, 0), 9);
    rt.destroy();
  });

  it('reads the spans of submits in batches: every submit timed across batches, none after a reset', async (ctx) => {
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-prof-batch-${process.pid}.json`) }), { profile: true });
    if (!rt.ctx.features.has('timestamp-query')) ctx.skip();
    const profiler = rt.profiler!;
    profiler.mode = 'submits';
    const n = 64;
    const x = rt.upload(new Float32Array(n).fill(1), [n]);
    const y = rt.upload(new Float32Array(n).fill(2), [n]);
    const out = rt.empty([n]);
    const submits = (k: number) => {
      for (let i = 0; i < k; i++) {
        twiceXPlusY(rt, x, y, out, 0);
        rt.submit();
      }
    };
    // Uploads and reads submit too: count from a reset after them.
    await rt.sync();
    await rt.profile();
    profiler.reset();
    submits(2 * SPAN_BATCH + 3);
    await rt.profile();
    expect(profiler.timedSubmits).toBe(2 * SPAN_BATCH + 3);
    const busy = await rt.gpuBusyMs();
    expect(busy).toBeGreaterThan(0);
    // A reset forgets a batch still filling and reads not yet done.
    profiler.reset();
    submits(SPAN_BATCH + 5);
    profiler.reset();
    await rt.profile();
    expect(profiler.timedSubmits).toBe(0);
    expect(await rt.gpuBusyMs()).toBe(0);
    submits(3);
    await rt.profile();
    expect(profiler.timedSubmits).toBe(3);
    expect(Array.from(await rt.read(out))).toEqual(new Array(n).fill(4));
    rt.destroy();
  });

  it("profiles a replayed plan's dispatches one by one, by their labels", async (ctx) => {
    const rt = await Runtime.create(nodePlatform({ cacheFile: join(tmpdir(), `sage-prof-plan-${process.pid}.json`) }), { profile: true });
    if (!rt.ctx.features.has('timestamp-query')) ctx.skip();
    const n = 256;
    const x = rt.upload(new Float32Array(n).fill(1), [n]);
    const y = rt.upload(new Float32Array(n).fill(2), [n]);
    const out = rt.empty([n]);
    const plan = rt.capture(() => twiceXPlusY(rt, x, y, out, 0));
    for (let k = 0; k < 3; k++) rt.replay(plan);
    expect(Array.from(await rt.read(out))).toEqual(new Array(n).fill(4));
    const report = await rt.profile();
    expect(report.filter((e) => e.label === 'scale' || e.label === 'add').map((e) => [e.label, e.count]).sort()).toEqual([['add', 3], ['scale', 3]]);
    rt.destroy();
  });

  it('keeps its temporaries from the pool until dropped, and refuses writes, copies and reads inside a capture', async () => {
    const rt = await testRuntime();
    const n = 64;
    const x = rt.upload(new Float32Array(n).fill(1), [n]);
    const y = rt.upload(new Float32Array(n).fill(2), [n]);
    const out = rt.empty([n]);
    let temporary: GPUBuffer | null = null;
    const plan = rt.capture(() => {
      const t = rt.empty([n]);
      temporary = t.buffer;
      rt.release(t);
      // Reused within the capture, as the pool reuses it outside one.
      twiceXPlusY(rt, x, y, out, 0);
    });
    expect(plan.temporaries).toEqual([temporary]);
    const live = rt.stats().liveBuffers;
    const other = rt.empty([n]);
    expect(other.buffer).not.toBe(temporary);
    rt.release(other);
    rt.replay(plan);
    expect(Array.from(await rt.read(out))).toEqual(new Array(n).fill(4));
    rt.dropPlan(plan);
    expect(rt.stats().liveBuffers).toBe(live - 1);
    expect(() => rt.replay(plan)).toThrow(/dropped/);
    expect(() => rt.capture(() => rt.write(x, new Float32Array(n)))).toThrow(/write: a captured plan holds dispatches only/);
    expect(() => rt.capture(() => rt.copy(x, y))).toThrow(/copy: a captured plan holds dispatches only/);
    expect(() => rt.capture(() => void rt.readLater(x))).toThrow(/read: a captured plan holds dispatches only/);
    expect(() => rt.capture(() => rt.capture(() => {}))).toThrow(/another capture/);
    // A capture that failed leaves the runtime recording as before.
    expect(Array.from(await rt.read(scale(rt, x, 3)))).toEqual(new Array(n).fill(3));
    rt.release(x, y, out);
  });
});
