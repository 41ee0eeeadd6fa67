import { wrap, type Remote } from 'comlink';
import type { EngineApi } from '../worker/api';

interface EngineHandle {
  api: Remote<EngineApi>;
  /** Rejects if the worker fails to load or throws outside a call (comlink would hang). */
  failed: Promise<never>;
}

let engine: EngineHandle | null = null;

/** The engine worker, started on first use. The UI talks to the GPU only through it. */
function handle(): EngineHandle {
  if (!engine) {
    const worker = new Worker(new URL('../worker/engine.worker.ts', import.meta.url), { type: 'module', name: 'engine' });
    const failed = new Promise<never>((_, reject) => {
      worker.addEventListener('error', (e) => reject(new Error(`the engine worker failed: ${e.message || 'it could not be loaded'}`)));
    });
    failed.catch(() => undefined); // reported by the calls that race it
    engine = { api: wrap<EngineApi>(worker), failed };
  }
  return engine;
}

/** Calls the engine, failing instead of hanging when the worker itself has died. */
export function callEngine<T>(call: (api: Remote<EngineApi>) => Promise<T>): Promise<T> {
  const h = handle();
  return Promise.race([call(h.api), h.failed]);
}
