/**
 * Ctrl-C for a long command: the first press asks it to stop cleanly (`stop`), a second press
 * quits at once. One press can arrive twice — a terminal signals the whole process group, so
 * the command gets it directly and again relayed by `tsx` (npm run → tsx), milliseconds apart
 * — so a signal within `samePressMs` of the first is that same press, not a second one.
 */
export function onInterrupt(stop: () => void, samePressMs = 1000): void {
  let first: number | null = null;
  process.on('SIGINT', () => {
    const now = performance.now();
    if (first === null) {
      first = now;
      stop();
    } else if (now - first >= samePressMs) process.exit(130);
  });
}
