import { median } from './suite';

/** A generation's run of `maxNewTokens` new tokens on fixed prompts, and what it reports. */
export type DecodeRun = (maxNewTokens: number) => Promise<{ stats: { ms: number; steps: number } }>;

/**
 * Decode tokens/s on the pipelined path, the one users run (steps in flight, the host never
 * waiting on a token): rows · steps over t(N) − t(1), each time the median of `rounds` runs,
 * so that the prefill and the first token, which both runs pay, cancel without the timing
 * path's waits. `run` must be warm (pipelines compiled, shapes tuned).
 */
export async function pipelinedRate(run: DecodeRun, rows: number, newTokens: number, rounds = 3): Promise<number> {
  const longs: number[] = [];
  const shorts: number[] = [];
  let steps = 0;
  for (let i = 0; i < rounds; i++) {
    shorts.push((await run(1)).stats.ms);
    const long = await run(newTokens);
    longs.push(long.stats.ms);
    steps = long.stats.steps;
  }
  return (rows * steps) / ((median(longs) - median(shorts)) / 1000);
}
