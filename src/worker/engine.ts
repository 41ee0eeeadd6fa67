import type { Platform } from '../platform/types';
import { OPTIONAL_FEATURES } from '../gpu/device';
import { Runtime } from '../gpu/runtime';
import { matmul, matmulTuner } from '../gpu/ops/matmul';
import { matmulRef } from '../gpu/reference';
import type { DeviceReport, EngineApi, SelfCheckResult } from './api';

/** The engine: owns the device. Runs in a Web Worker in the browser, in-process in Node. */
export function createEngine(platform: Platform): EngineApi {
  let runtime: Promise<Runtime> | null = null;
  const rt = () => (runtime ??= Runtime.create(platform));

  return {
    async init(): Promise<DeviceReport> {
      let r: Runtime;
      try {
        r = await rt();
      } catch (e) {
        runtime = null;
        throw e;
      }
      return {
        platform: platform.name,
        adapter: {
          vendor: r.ctx.adapter.vendor,
          architecture: r.ctx.adapter.architecture,
          device: r.ctx.adapter.device,
          description: r.ctx.adapter.description,
        },
        features: OPTIONAL_FEATURES.map((name) => ({ name, granted: r.ctx.features.has(name) })),
        limits: { ...r.ctx.limits },
      };
    },

    async selfCheck({ M, N, K }): Promise<SelfCheckResult> {
      const r = await rt();
      const a = Float32Array.from({ length: M * K }, () => Math.random() * 2 - 1);
      const b = Float32Array.from({ length: K * N }, () => Math.random() * 2 - 1);
      const ta = r.upload(a, [M, K]);
      const tb = r.upload(b, [K, N]);
      const shape = { batch: 1, M, N, K, transA: false, transB: false };
      const variant = matmulTuner(r).choose(shape);
      try {
        matmul(r, { a: ta, b: tb }); // warm-up: compiles the pipeline
        await r.sync();
        const t0 = performance.now();
        const out = matmul(r, { a: ta, b: tb });
        const got = await r.read(out);
        const gpuMs = performance.now() - t0;
        r.release(out);
        const ref = matmulRef({ a, b, ...shape });
        const scale = matmulRef({ a: a.map(Math.abs), b: b.map(Math.abs), ...shape });
        let maxRelError = 0;
        for (let m = 0; m < M; m++) {
          let rowScale = 1e-30;
          for (let n = 0; n < N; n++) rowScale = Math.max(rowScale, scale[m * N + n]!);
          for (let n = 0; n < N; n++) {
            const g = got[m * N + n]!;
            const err = Number.isFinite(g) ? Math.abs(g - ref[m * N + n]!) / rowScale : Infinity;
            maxRelError = Math.max(maxRelError, err);
          }
        }
        return {
          shape: { M, N, K },
          variant,
          maxRelError,
          passed: maxRelError <= 1e-5,
          gpuMs,
          gflops: (2 * M * N * K) / gpuMs / 1e6,
        };
      } finally {
        r.release(ta, tb);
      }
    },
  };
}
