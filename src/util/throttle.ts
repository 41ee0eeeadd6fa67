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
