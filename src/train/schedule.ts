export interface LrSchedule {
  /** Peak learning rate. */
  lr: number;
  warmupSteps: number;
  /** Total steps, for the cosine decay; ignored by 'constant'. */
  totalSteps: number;
  kind: 'cosine' | 'constant';
  /** Floor of the cosine decay, as a fraction of lr. */
  minRatio?: number;
}

/** Learning rate at a 0-based step: linear warm-up, then cosine decay or constant. */
export function learningRate(s: LrSchedule, step: number): number {
  if (s.warmupSteps > 0 && step < s.warmupSteps) return (s.lr * (step + 1)) / s.warmupSteps;
  if (s.kind === 'constant') return s.lr;
  const span = Math.max(1, s.totalSteps - s.warmupSteps);
  const progress = Math.min(1, (step - s.warmupSteps) / span);
  const min = s.lr * (s.minRatio ?? 0.1);
  return min + 0.5 * (s.lr - min) * (1 + Math.cos(Math.PI * progress));
}
