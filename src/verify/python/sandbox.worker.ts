/**
 * One Python sandbox in the browser: a dedicated Worker, served with a Content-Security-Policy
 * of `connect-src 'none'` (vite.config.ts). Pyodide's files arrive as bytes from the page, so
 * the Worker never connects anywhere; once Pyodide is loaded, every way out of the Worker
 * (fetch, XMLHttpRequest, WebSocket, importScripts, indexedDB, caches, BroadcastChannel…) is
 * removed before any program runs. The page kills the Worker when a job overruns.
 */
import { loadPyodide } from 'pyodide';
import createPyodideModule from 'pyodide/pyodide.asm.mjs';
import { startDriver } from './driver.mjs';
import type { DriverLimits } from './driver.mjs';

export interface WorkerInit {
  type: 'init';
  wasm: ArrayBuffer;
  stdlib: ArrayBuffer;
  lock: string;
  harness: string;
  limits: DriverLimits;
}
export interface WorkerJob {
  type: 'job';
  job: string;
  timeoutMs: number;
}
export type WorkerReply =
  | { type: 'ready'; csp: boolean }
  | { type: 'result'; result: import('./driver.mjs').DriverResult }
  | { type: 'overflow' }
  | { type: 'failed'; reason: string };

const post = self.postMessage.bind(self) as (reply: WorkerReply) => void;
const realFetch = self.fetch.bind(self);

/** The ways out of a Worker, shadowed on the global scope. */
const REMOVED = ['fetch', 'XMLHttpRequest', 'WebSocket', 'WebTransport', 'EventSource', 'importScripts', 'indexedDB', 'caches', 'BroadcastChannel', 'Worker', 'SharedWorker', 'postMessage', 'close', 'navigator'];

/** Whether the Worker's CSP refuses a connection to its own origin. */
async function connectionsRefused(): Promise<boolean> {
  try {
    await realFetch(new URL('/', self.location.href), { cache: 'no-store' });
    return false;
  } catch {
    return true;
  }
}

async function init(m: WorkerInit): Promise<{ run(job: string, timeoutMs: number): import('./driver.mjs').DriverResult }> {
  const csp = await connectionsRefused();
  const files: Record<string, ArrayBuffer> = { 'pyodide.asm.wasm': m.wasm, 'python_stdlib.zip': m.stdlib };
  // Pyodide asks for its two binary files by URL; they are answered from memory.
  (self as { fetch: unknown }).fetch = async (url: string | URL) => {
    const name = String(url).split('/').pop() ?? '';
    const bytes = files[name];
    if (!bytes) throw new TypeError('sandbox: no network');
    return new Response(bytes, { headers: { 'Content-Type': name.endsWith('.wasm') ? 'application/wasm' : 'application/zip' } });
  };
  const driver = await startDriver(
    (options) => loadPyodide({ ...options, indexURL: '/pyodide/', createPyodideModule, lockFileContents: m.lock, stdLibURL: 'python_stdlib.zip' } as Parameters<typeof loadPyodide>[0]),
    m.harness,
    m.limits,
    () => post({ type: 'overflow' }),
  );
  for (const name of REMOVED) Object.defineProperty(self, name, { value: undefined, configurable: false, writable: false });
  post({ type: 'ready', csp });
  return driver;
}

let driver: Awaited<ReturnType<typeof init>> | null = null;
self.onmessage = async (e: MessageEvent<WorkerInit | WorkerJob>) => {
  const m = e.data;
  if (m.type === 'init') {
    try {
      driver = await init(m);
    } catch (err) {
      post({ type: 'failed', reason: String(err) });
    }
  } else if (driver) {
    post({ type: 'result', result: driver.run(m.job, m.timeoutMs) });
  }
};
