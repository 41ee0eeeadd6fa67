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
  /** Largest |gpu − cpu| over the row scale Σ|a||b|. */
  maxRelError: number;
  passed: boolean;
  gpuMs: number;
  gflops: number;
}

export interface EngineApi {
  /** Acquires the device; rejects with a plain explanation when WebGPU is unavailable. */
  init(): Promise<DeviceReport>;
  /** Runs a matmul on the GPU and checks it against a float64 CPU reference. */
  selfCheck(shape: { M: number; N: number; K: number }): Promise<SelfCheckResult>;
}
