import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SftStepResult, SftTrainer } from './sft';
import { formatDuration, runSteps, stepLine, type StepProgress } from './trainLoop';

/** A trainer whose steps take `stepMs` of a clock the test moves, with the losses given (NaN: a skipped update). */
function fakeTrainer(losses: number[], stepMs: number, clock: { now: number }): SftTrainer {
  let step = 0;
  return {
    async step(): Promise<SftStepResult> {
      clock.now += stepMs;
      const loss = losses[step]!;
      return { step: ++step, loss, gradNorm: 1, lr: 1e-3, finite: Number.isFinite(loss), tokens: 1000, ms: stepMs };
    },
  } as unknown as SftTrainer;
}

describe('the training loop', () => {
  afterEach(() => vi.restoreAllMocks());

  it('reports each step with its pace and an ETA that counts the caller\'s work, and stops when asked', async () => {
    const clock = { now: 0 };
    vi.spyOn(performance, 'now').mockImplementation(() => clock.now);
    const seen: StepProgress[] = [];
    const r = await runSteps(fakeTrainer([3, 2, Number.NaN, 1.5, 1, 0.5], 100, clock), {
      steps: 6,
      onStep(p) {
        seen.push(p);
        clock.now += 50; // a held-out loss, a checkpoint
      },
      stopped: () => seen.length === 5,
    });
    expect(seen.map((p) => [p.step, p.first, p.last])).toEqual([[1, true, false], [2, false, false], [3, false, false], [4, false, false], [5, false, false]]);
    expect(seen[0]!.etaS).toBeNull();
    expect(seen[0]!.tokensPerS).toBe(0);
    // 150 ms between two steps' ends: at step 2, four steps left.
    expect(seen[1]!.etaS).toBeCloseTo(0.6, 9);
    expect(seen[4]!.etaS).toBeCloseTo(0.15, 9);
    expect(seen[1]!.tokensPerS).toBe(10_000);
    expect(r).toEqual({ steps: 5, firstLoss: 3, finalLoss: 1, tokensPerS: 10_000, skipped: 1, stopped: true });
    expect(stepLine(seen[1]!, 6)).toBe('step     2/6  loss 2.0000  grad-norm 1.000  lr 1.00e-3  10000 tok/s  ETA 1s');
    expect(stepLine(seen[0]!)).toBe('step     1  loss 3.0000  grad-norm 1.000  lr 1.00e-3  first step 0.1 s (compiling)');
  });

  it('writes durations as seconds, minutes and hours', () => {
    expect([0.4, 42, 425, 3599.6, 11_520].map(formatDuration)).toEqual(['0s', '42s', '7m05s', '1h00m', '3h12m']);
  });
});
