/**
 * The steps of a training run, the one loop `npm run sft`, `npm run pretrain` and the lab's
 * fine-tuning panel share: the trainer's steps (data → batches → trainStep → schedule) with
 * their pace and what is left, each handed to the caller for its own work (progress lines, a
 * held-out loss, checkpoints) before the next.
 */
import { RateMeter } from './session';
import type { SftStepResult, SftTrainer } from './sft';

export interface StepProgress extends SftStepResult {
  /** Tokens per second over this call's steps after its first (which compiles); 0 until then. */
  tokensPerS: number;
  /**
   * Seconds this call's remaining steps should take at its pace so far (the time between two
   * steps, the caller's work after each included); null until it is known.
   */
  etaS: number | null;
  /** The first and the last step of this call. */
  first: boolean;
  last: boolean;
}

export interface RunStepsOptions {
  /** Optimizer steps to take in this call. */
  steps: number;
  /** After each step, before the next (awaited). */
  onStep?(p: StepProgress): Promise<void> | void;
  /** Asked before each step: true ends the call there (the lab's Stop, Ctrl-C). */
  stopped?(): boolean;
}

export interface RunStepsResult {
  /** Steps taken. */
  steps: number;
  firstLoss: number;
  /** The loss of the last step whose update was applied. */
  finalLoss: number;
  tokensPerS: number;
  /** Updates skipped for a non-finite gradient (weights unchanged). */
  skipped: number;
  /** Ended early by `stopped`. */
  stopped: boolean;
}

export async function runSteps(trainer: SftTrainer, o: RunStepsOptions): Promise<RunStepsResult> {
  const rate = new RateMeter();
  /** Wall time from the end of the first step to the end of the latest. */
  let since: number | null = null;
  let wallMs = 0;
  const result: RunStepsResult = { steps: 0, firstLoss: Number.NaN, finalLoss: Number.NaN, tokensPerS: 0, skipped: 0, stopped: false };
  for (let i = 0; i < o.steps; i++) {
    if (o.stopped?.()) {
      result.stopped = true;
      break;
    }
    const r = await trainer.step();
    const now = performance.now();
    if (since !== null) wallMs = now - since;
    else since = now;
    rate.add(r);
    result.steps++;
    if (i === 0) result.firstLoss = r.loss;
    if (r.finite) result.finalLoss = r.loss;
    else result.skipped++;
    const left = o.steps - i - 1;
    const p: StepProgress = {
      ...r,
      tokensPerS: rate.tokensPerS,
      etaS: i > 0 ? (left * wallMs) / i / 1000 : left === 0 ? 0 : null,
      first: i === 0,
      last: left === 0,
    };
    await o.onStep?.(p);
  }
  result.tokensPerS = rate.tokensPerS;
  return result;
}

/** A duration as the progress lines show it: 42s, 7m05s, 3h12m. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A step's progress line: loss, gradient norm, learning rate, pace and what is left; `of` the schedule's last step. */
export function stepLine(p: StepProgress, of?: number): string {
  const pace = p.tokensPerS > 0 ? `${p.tokensPerS.toFixed(0)} tok/s` : `first step ${(p.ms / 1000).toFixed(1)} s (compiling)`;
  const eta = p.etaS !== null && !p.last ? `  ETA ${formatDuration(p.etaS)}` : '';
  return `step ${String(p.step).padStart(5)}${of ? `/${of}` : ''}  loss ${p.loss.toFixed(4)}  grad-norm ${p.gradNorm.toFixed(3)}  lr ${p.lr.toExponential(2)}  ${pace}${eta}`;
}
