/** The engine worker's API, shared by the worker and the UI (types only). */
export interface DeviceReport {
  platform: string;
  adapter: { vendor: string; architecture: string; device: string; description: string };
  features: { name: string; granted: boolean }[];
  limits: Record<string, number>;
}

export interface SelfCheckResult {
  shape: { M: number; N: number; K: number };
  variant: string;
  /** Whether the variant was measured now or came from this adapter's autotune cache. */
  tuning: 'measured' | 'cached';
  /** Largest |gpu − cpu| over the row scale Σ|a||b|. */
  maxRelError: number;
  passed: boolean;
  gpuMs: number;
  gflops: number;
}

/** One optimizer step of a training check, as reported live. */
export interface TrainStepReport {
  step: number;
  loss: number;
  gradNorm: number;
  tokensPerS: number;
}

export interface TrainCheckResult {
  preset: string;
  parameters: number;
  steps: number;
  firstLoss: number;
  finalLoss: number;
  /** The loss fell below the threshold: forward, backward and AdamW all work on this GPU. */
  passed: boolean;
  threshold: number;
  tokensPerS: number;
}

export interface EngineApi {
  /** Acquires the device; rejects with a plain explanation when WebGPU is unavailable. */
  init(): Promise<DeviceReport>;
  /** Runs a matmul on the GPU and checks it against a float64 CPU reference. */
  selfCheck(shape: { M: number; N: number; K: number }): Promise<SelfCheckResult>;
  /**
   * Trains the tiny preset from scratch to memorise a few short answers (forward, backward,
   * AdamW, all in WGSL), reporting every step; passes when the loss falls below a threshold.
   */
  trainCheck(options: { steps: number }, onStep: (report: TrainStepReport) => void): Promise<TrainCheckResult>;
}
