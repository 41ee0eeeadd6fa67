/**
 * Python sandboxes in Node: a pool of warm processes (node-child.mjs), each under Node's
 * permission model (reading Pyodide's folder and the sandbox's own, nothing else; no writes,
 * child processes or workers) and in a network namespace of its own where Linux allows an
 * unprivileged one (`unshare -rn`); elsewhere the process removes the socket APIs before
 * Pyodide loads and refuses to run code unless that holds. Jobs past their time are first
 * interrupted inside Python; one that ignores it (a loop in C) has its process killed. A
 * process that was killed, denied anything or broke is replaced by a fresh one.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DriverResult } from './driver.mjs';
import type { SandboxRunner } from './codeVerifier';
import { DEFAULT_LIMITS, jobJson, KEPT_OUTPUT, type SandboxJob, type SandboxLimits } from './verdict';

const HERE = dirname(fileURLToPath(import.meta.url));
const PYODIDE = dirname(createRequire(import.meta.url).resolve('pyodide/package.json'));
/** After the interrupt, how long a job may take to unwind before its process is killed. */
const KILL_GRACE_MS = 700;
/** Consecutive processes that may fail to start before the pool gives up. */
const MAX_START_FAILURES = 3;

export interface PoolOptions extends Partial<SandboxLimits> {
  /** Warm processes (default 2). */
  size?: number;
}

/** Whether this machine gives an unprivileged process a network namespace (SAGE_SANDBOX_NETNS=0 says no). */
function networkNamespace(): boolean {
  if (process.env.SAGE_SANDBOX_NETNS === '0') return false;
  return spawnSync('unshare', ['-rn', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

interface Pending {
  job: SandboxJob;
  resolve(r: { result: DriverResult; ms: number }): void;
}

interface Instance {
  child: ChildProcess;
  /** Offered jobs: warm, and not leaving. */
  ready: boolean;
  /** Reported ready once: its exit is not a failure to start. */
  warmed: boolean;
  busy: Pending | null;
  started: number;
  timer?: NodeJS.Timeout;
}

export class NodeSandboxPool implements SandboxRunner {
  readonly limits: SandboxLimits;
  /** How the network is shut off: known once the first process is ready. */
  isolation: string | null = null;
  private readonly netns = networkNamespace();
  private readonly instances = new Set<Instance>();
  private readonly queue: Pending[] = [];
  private startFailures = 0;
  private refused: string | null = null;
  private closed = false;
  /** Processes started over the pool's life (replacements included). */
  started = 0;

  /** Warm processes kept. */
  readonly size: number;

  constructor(options: PoolOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...options };
    this.size = options.size ?? 2;
    for (let i = 0; i < this.size; i++) this.spawn();
  }

  /** Resolves when every process is warm (or the pool refused to run code). */
  async warm(): Promise<void> {
    while (!this.refused && [...this.instances].some((i) => !i.ready)) await new Promise((r) => setTimeout(r, 20));
    if (this.refused) throw new Error(this.refused);
  }

  run(job: SandboxJob): Promise<{ result: DriverResult; ms: number }> {
    if (this.refused) return Promise.resolve({ result: refusal(this.refused), ms: 0 });
    return new Promise((resolve) => {
      this.queue.push({ job, resolve });
      this.dispatch();
    });
  }

  close(): void {
    this.closed = true;
    for (const i of this.instances) i.child.kill('SIGKILL');
    this.instances.clear();
  }

  private spawn(): void {
    const limits = JSON.stringify({ memoryBytes: this.limits.memoryBytes, outputBytes: this.limits.outputBytes, keptOutput: KEPT_OUTPUT });
    const node = [
      '--experimental-permission',
      `--allow-fs-read=${PYODIDE}`,
      `--allow-fs-read=${HERE}`,
      '--max-old-space-size=256',
      '--no-warnings',
      join(HERE, 'node-child.mjs'),
      PYODIDE,
      join(HERE, 'harness.py'),
      limits,
      this.netns ? 'netns' : 'bindings',
    ];
    const child = this.netns
      ? spawn('unshare', ['-rn', process.execPath, ...node], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
      : spawn(process.execPath, node, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.started++;
    const inst: Instance = { child, ready: false, warmed: false, busy: null, started: 0 };
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.on('message', (msg: { type: string; result?: DriverResult; isolation?: string; reason?: string }) => {
      if (msg.type === 'ready') {
        inst.ready = inst.warmed = true;
        this.startFailures = 0;
        this.isolation ??= msg.isolation ?? null;
        this.dispatch();
      } else if (msg.type === 'refused') {
        this.refuse(msg.reason ?? 'refused');
      } else if (msg.type === 'result' && inst.busy) {
        this.finish(inst, msg.result!);
      }
    });
    child.on('exit', (code, signal) => {
      this.instances.delete(inst);
      if (inst.timer) clearTimeout(inst.timer);
      if (!inst.warmed && !this.closed) {
        if (++this.startFailures >= MAX_START_FAILURES) this.refuse(`the sandbox process does not start: ${stderr.trim().split('\n').pop() ?? code}`);
      }
      if (inst.busy) {
        const result: DriverResult =
          code === 4
            ? { status: 'killed', passed: 0, total: 0, detail: `output passed ${this.limits.outputBytes} bytes` }
            : { status: 'error', passed: 0, total: 0, detail: `the sandbox process ended (${signal ?? `exit code ${code}`})` };
        this.finish(inst, result);
      }
      if (!this.closed && !this.refused) this.spawn();
    });
    this.instances.add(inst);
  }

  private dispatch(): void {
    for (const inst of this.instances) {
      if (!inst.ready || inst.busy) continue;
      const next = this.queue.shift();
      if (!next) return;
      inst.busy = next;
      inst.started = performance.now();
      // The verdict does not wait for the killed process to be reaped (slow on a busy machine).
      inst.timer = setTimeout(() => {
        inst.child.kill('SIGKILL');
        this.finish(inst, { status: 'timeout', passed: 0, total: 0, detail: `still running ${KILL_GRACE_MS} ms after the ${this.limits.timeoutMs} ms limit: process killed`, replace: true });
      }, this.limits.timeoutMs + KILL_GRACE_MS);
      inst.child.send({ job: jobJson(next.job), timeoutMs: this.limits.timeoutMs });
    }
  }

  private finish(inst: Instance, result: DriverResult): void {
    const pending = inst.busy!;
    inst.busy = null;
    if (inst.timer) clearTimeout(inst.timer);
    // A process that must not run again is leaving; it is no longer offered jobs.
    if (result.replace) inst.ready = false;
    pending.resolve({ result, ms: performance.now() - inst.started });
    this.dispatch();
  }

  private refuse(reason: string): void {
    this.refused = reason;
    for (const p of this.queue.splice(0)) p.resolve({ result: refusal(reason), ms: 0 });
    this.close();
  }
}

function refusal(reason: string): DriverResult {
  return { status: 'error', passed: 0, total: 0, detail: `sandbox refused to run code: ${reason}` };
}
