/**
 * Passes on at most one value per `intervalMs` (the latest; the first at once), for progress
 * updates that cross a worker boundary. `flush` passes on the last value if it was held back.
 * Values are dropped, never delayed by a timer: the next push or the flush sends them.
 */
export function latestEvery<T>(send: (value: T) => void, intervalMs: number, now: () => number = () => performance.now()) {
  let last = -Infinity;
  let held: { value: T } | null = null;
  return {
    push(value: T): void {
      const t = now();
      if (t - last >= intervalMs) {
        last = t;
        held = null;
        send(value);
      } else {
        held = { value };
      }
    },
    flush(): void {
      if (held) send(held.value);
      held = null;
    },
  };
}

/**
 * Collects values and sends them together, at most once per `intervalMs`: events of a long
 * run cross a worker boundary in a few messages a second instead of one each. A timer sends
 * what waits when no further value comes; `flush` sends it at once.
 */
export function batchEvery<T>(send: (values: T[]) => void, intervalMs: number) {
  let waiting: T[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = (): void => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (!waiting.length) return;
    const values = waiting;
    waiting = [];
    send(values);
  };
  return {
    push(value: T): void {
      waiting.push(value);
      timer ??= setTimeout(flush, intervalMs);
    },
    flush,
  };
}
