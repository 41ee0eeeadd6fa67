/** Settings of a fine-tuning run: plain data, shared by the engine, the CLI and the lab's controls. */
export interface SftSettings {
  batchSize: number;
  seqLen: number;
  accumulation: number;
  /** Optimizer steps in this run; the schedule continues from a resumed step count. */
  steps: number;
  lr: number;
  warmupSteps: number;
  seed: number;
  packing: boolean;
  /** Start AdamW afresh even when the checkpoint carries its moments. */
  resetOptimizer?: boolean;
}

export const DEFAULT_SFT: SftSettings = {
  batchSize: 8,
  seqLen: 128,
  accumulation: 1,
  steps: 200,
  lr: 1e-3,
  warmupSteps: 20,
  seed: 0,
  packing: false,
};

/** Throws, naming the setting, when a run could not start or would train on nonsense. */
export function checkSftSettings(s: SftSettings): void {
  const positiveInts: (keyof SftSettings)[] = ['batchSize', 'seqLen', 'accumulation', 'steps'];
  for (const key of positiveInts) {
    const v = s[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`${key} must be a positive integer (got ${String(v)})`);
  }
  if (!Number.isInteger(s.warmupSteps) || s.warmupSteps < 0) throw new Error(`warmupSteps must be a non-negative integer (got ${s.warmupSteps})`);
  if (!Number.isInteger(s.seed) || s.seed < 0) throw new Error(`seed must be a non-negative integer (got ${s.seed})`);
  if (!(s.lr > 0 && Number.isFinite(s.lr))) throw new Error(`lr must be a positive number (got ${s.lr})`);
  if (s.seqLen < 2) throw new Error(`seqLen must be at least 2 (got ${s.seqLen})`);
}
