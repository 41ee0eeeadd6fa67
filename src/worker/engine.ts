import type { Platform } from '../platform/types';
import { OPTIONAL_FEATURES } from '../gpu/device';
import { Runtime } from '../gpu/runtime';
import { matmul, matmulTuner } from '../gpu/ops/matmul';
import { matmulRef, rowRelativeError } from '../gpu/reference';
import { paramCount } from '../model/config';
import { memorisationRun } from '../train/memorise';
import type { DeviceReport, EngineApi, SelfCheckResult, TrainCheckResult, TrainStepReport } from './api';

/** The loss per answer token below which the training check passes. */
const CHECK_THRESHOLD = 0.2;

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
      const tuner = matmulTuner(r);
      const tuning = tuner.isTuned(shape) ? 'cached' : 'measured';
      if (tuning === 'measured') {
        await tuner.tune(shape);
        await r.cacheFlush();
      }
      const variant = tuner.choose(shape);
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
        const maxRelError = rowRelativeError(got, ref, N, scale).error;
        return {
          shape: { M, N, K },
          variant,
          tuning,
          maxRelError,
          passed: maxRelError <= 1e-5,
          gpuMs,
          gflops: (2 * M * N * K) / gpuMs / 1e6,
        };
      } finally {
        r.release(ta, tb);
      }
    },

    async trainCheck({ steps }, onStep: (report: TrainStepReport) => void): Promise<TrainCheckResult> {
      const r = await rt();
      const { model, trainer } = memorisationRun(r, steps);
      let first = Number.NaN;
      let last = Number.NaN;
      let tokens = 0;
      let ms = 0;
      try {
        for (let i = 0; i < steps; i++) {
          const s = await trainer.step();
          if (i === 0) first = s.loss;
          last = s.loss;
          // The first step compiles pipelines and tunes matmuls: leave it out of the rate.
          if (i > 0) {
            tokens += s.tokens;
            ms += s.ms;
          }
          onStep({ step: s.step, loss: s.loss, gradNorm: s.gradNorm, tokensPerS: ms > 0 ? tokens / (ms / 1000) : 0 });
        }
      } finally {
        trainer.destroy();
        model.destroy();
      }
      return {
        preset: 'tiny',
        parameters: paramCount(model.config),
        steps,
        firstLoss: first,
        finalLoss: last,
        passed: last < CHECK_THRESHOLD,
        threshold: CHECK_THRESHOLD,
        tokensPerS: ms > 0 ? tokens / (ms / 1000) : 0,
      };
    },
  };
}
