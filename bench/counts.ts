/**
 * Work counts that hold on any hardware (src/gpu/runtime.ts, RuntimeCounters): dispatches,
 * submits, bind groups created, host waits and readbacks, per decode step or per training
 * step. A GPU pays tens of microseconds per dispatch and a round trip per host wait, so these
 * say what a real adapter will pay where SwiftShader's timings cannot.
 */
import type { Runtime, RuntimeCounters } from '../src/gpu/runtime';

export interface WorkCounts {
  dispatches: number;
  submits: number;
  bindGroups: number;
  hostWaits: number;
  readbacks: number;
}

export const WORK_COUNT_COLUMNS = ['dispatches', 'submits', 'bind groups made', 'host waits', 'readbacks'];

/** What happened between two snapshots of the counters, divided by `per`. */
export function countsBetween(a: RuntimeCounters, b: RuntimeCounters, per = 1): WorkCounts {
  const d = (k: keyof WorkCounts) => (b[k] - a[k]) / per;
  return { dispatches: d('dispatches'), submits: d('submits'), bindGroups: d('bindGroups'), hostWaits: d('hostWaits'), readbacks: d('readbacks') };
}

export function addCounts(into: WorkCounts, c: WorkCounts): void {
  for (const k of Object.keys(into) as (keyof WorkCounts)[]) into[k] += c[k];
}

export const zeroCounts = (): WorkCounts => ({ dispatches: 0, submits: 0, bindGroups: 0, hostWaits: 0, readbacks: 0 });

export function formatCounts(c: WorkCounts | undefined, digits = 2): string[] {
  if (!c) return WORK_COUNT_COLUMNS.map(() => '-');
  const f = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(digits));
  return [f(c.dispatches), f(c.submits), f(c.bindGroups), f(c.hostWaits), f(c.readbacks)];
}

/** Extra decode steps between the two generations compared (see decodeStepCounts). */
const EXTRA_STEPS = 8;

/**
 * Counts per decode step (one token per row): two generations of the same rows that differ
 * by EXTRA_STEPS decode steps, their difference over those steps, so that the prefill and the
 * final read fall out; after two warm-up generations, so that bind groups made for the first
 * time do not (the buffer pool is last-in first-out, so successive calls get their prefill's
 * scratch buffers in alternating orders). `generate` runs a generation of `newTokens` tokens
 * per row with no EOS.
 */
export async function decodeStepCounts(rt: Runtime, generate: (newTokens: number) => Promise<unknown>): Promise<WorkCounts> {
  const run = async (newTokens: number) => {
    const before = { ...rt.counters };
    await generate(newTokens);
    return countsBetween(before, rt.counters);
  };
  await run(2 + EXTRA_STEPS);
  await run(2);
  const short = await run(2);
  const long = await run(2 + EXTRA_STEPS);
  const per = zeroCounts();
  for (const k of Object.keys(per) as (keyof WorkCounts)[]) per[k] = (long[k] - short[k]) / EXTRA_STEPS;
  return per;
}
