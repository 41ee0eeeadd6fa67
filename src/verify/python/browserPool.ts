/**
 * Python sandboxes in the browser: a pool of warm Workers (sandbox.worker.ts). The page
 * fetches Pyodide's files once and hands each Worker their bytes; a job past its time is
 * interrupted inside Python, and a Worker that ignores it, overflows its output, was denied
 * anything or broke is terminated and replaced.
 */
import wasmUrl from 'pyodide/pyodide.asm.wasm?url';
import stdlibUrl from 'pyodide/python_stdlib.zip?url';
import lockUrl from 'pyodide/pyodide-lock.json?url';
import harnessSource from './harness.py?raw';
import type { DriverResult } from './driver.mjs';
import type { SandboxRunner } from './codeVerifier';
import type { WorkerInit, WorkerReply } from './sandbox.worker';
import { DEFAULT_LIMITS, jobJson, KEPT_OUTPUT, type SandboxJob, type SandboxLimits } from './verdict';

const KILL_GRACE_MS = 700;

interface Assets {
  wasm: ArrayBuffer;
  stdlib: ArrayBuffer;
  lock: string;
}

async function fetchAssets(): Promise<Assets> {
  const get = async (url: string) => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`could not load ${url}: HTTP ${r.status}`);
    return r;
  };
  const [wasm, stdlib, lock] = await Promise.all([get(wasmUrl).then((r) => r.arrayBuffer()), get(stdlibUrl).then((r) => r.arrayBuffer()), get(lockUrl).then((r) => r.text())]);
  return { wasm, stdlib, lock };
}

interface Slot {
  worker: Worker;
  ready: boolean;
  busy: { job: SandboxJob; resolve(r: { result: DriverResult; ms: number }): void; started: number; timer: ReturnType<typeof setTimeout> } | null;
}

export class BrowserSandboxPool implements SandboxRunner {
  readonly limits: SandboxLimits;
  /** Whether every Worker so far found its connections refused by the CSP. */
  cspEnforced = true;
  started = 0;
  private readonly slots = new Set<Slot>();
  private readonly queue: { job: SandboxJob; resolve(r: { result: DriverResult; ms: number }): void }[] = [];
  private readonly assets: Promise<Assets>;
  private failure: string | null = null;

  constructor(readonly size = 2, limits: Partial<SandboxLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.assets = fetchAssets();
    for (let i = 0; i < size; i++) void this.spawn();
  }

  async warm(): Promise<void> {
    while (!this.failure && (this.slots.size < this.size || [...this.slots].some((s) => !s.ready))) await new Promise((r) => setTimeout(r, 20));
    if (this.failure) throw new Error(this.failure);
  }

  run(job: SandboxJob): Promise<{ result: DriverResult; ms: number }> {
    return new Promise((resolve) => {
      this.queue.push({ job, resolve });
      this.dispatch();
    });
  }

  close(): void {
    for (const s of this.slots) s.worker.terminate();
    this.slots.clear();
  }

  private async spawn(): Promise<void> {
    const assets = await this.assets;
    const worker = new Worker(new URL('./sandbox.worker.ts', import.meta.url), { type: 'module', name: 'python-sandbox' });
    this.started++;
    const slot: Slot = { worker, ready: false, busy: null };
    this.slots.add(slot);
    worker.onmessage = (e: MessageEvent<WorkerReply>) => {
      const m = e.data;
      if (m.type === 'ready') {
        slot.ready = true;
        this.cspEnforced &&= m.csp;
        this.dispatch();
      } else if (m.type === 'failed') {
        this.failure = `the sandbox Worker did not start: ${m.reason}`;
      } else if (m.type === 'overflow') {
        this.replace(slot, { status: 'killed', passed: 0, total: 0, detail: `output passed ${this.limits.outputBytes} bytes` });
      } else if (slot.busy) {
        this.finish(slot, m.result);
        if (m.result.replace) this.replace(slot);
      }
    };
    worker.onerror = (e) => this.replace(slot, { status: 'error', passed: 0, total: 0, detail: `the sandbox Worker failed: ${e.message}` });
    // Copies: the page keeps its bytes for the next Worker.
    const init: WorkerInit = {
      type: 'init',
      wasm: assets.wasm.slice(0),
      stdlib: assets.stdlib.slice(0),
      lock: assets.lock,
      harness: harnessSource,
      limits: { memoryBytes: this.limits.memoryBytes, outputBytes: this.limits.outputBytes, keptOutput: KEPT_OUTPUT },
    };
    worker.postMessage(init, [init.wasm, init.stdlib]);
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (!slot.ready || slot.busy) continue;
      const next = this.queue.shift();
      if (!next) return;
      const timer = setTimeout(
        () => this.replace(slot, { status: 'timeout', passed: 0, total: 0, detail: `still running ${KILL_GRACE_MS} ms after the ${this.limits.timeoutMs} ms limit: Worker terminated` }),
        this.limits.timeoutMs + KILL_GRACE_MS,
      );
      slot.busy = { ...next, started: performance.now(), timer };
      slot.worker.postMessage({ type: 'job', job: jobJson(next.job), timeoutMs: this.limits.timeoutMs });
    }
  }

  private finish(slot: Slot, result: DriverResult): void {
    const busy = slot.busy!;
    slot.busy = null;
    clearTimeout(busy.timer);
    busy.resolve({ result, ms: performance.now() - busy.started });
  }

  /** Terminates a Worker (ending its job with `result`, if any) and starts a fresh one. */
  private replace(slot: Slot, result?: DriverResult): void {
    if (!this.slots.delete(slot)) return;
    slot.worker.terminate();
    if (slot.busy && result) this.finish(slot, result);
    void this.spawn();
    this.dispatch();
  }
}
