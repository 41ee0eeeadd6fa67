/**
 * The CPU time of the calling thread, in ms, where Linux tells it (/proc/thread-self/schedstat,
 * nanoseconds): the host's own work, without the time the OS gave other threads meanwhile
 * (a CPU implementation of WebGPU running submitted work, other processes on a shared
 * machine). Null where it cannot be read (not Linux, or a kernel without scheduler statistics).
 */
import { readFileSync } from 'node:fs';

const SCHEDSTAT = '/proc/thread-self/schedstat';

export function threadCpuClock(): (() => number) | null {
  const read = () => Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]) / 1e6;
  try {
    return read() > 0 ? read : null;
  } catch {
    return null;
  }
}
