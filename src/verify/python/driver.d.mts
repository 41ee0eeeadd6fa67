/** Types of driver.mjs (plain JavaScript so that the Node sandbox process needs no loader). */
export interface DriverLimits {
  /** Wasm memory cap. */
  memoryBytes: number;
  /** Output past this ends the program (verdict: killed). */
  outputBytes: number;
  /** Output kept for the verdict. */
  keptOutput: number;
}

/** What the harness reports for one job (see harness.py), plus the driver's own findings. */
export interface DriverResult {
  status: 'pass' | 'fail' | 'error' | 'timeout' | 'killed' | 'outputs';
  passed: number;
  total: number;
  detail?: string;
  /** Operations the audit hook refused. */
  denied?: string[];
  /** MBPP+ jobs: each input's encoded return value, or its exception. */
  outputs?: ({ value: unknown } | { error: string })[];
  output?: string;
  /** The instance must not run another job (killed, denied something, broke). */
  replace?: boolean;
}

export function capWasmMemory(maxBytes: number, onRefused: () => void): void;

export function startDriver(
  load: (options: object) => Promise<unknown>,
  harnessSource: string,
  limits: DriverLimits,
  onOverflow: () => void,
): Promise<{ run(jobJson: string, timeoutMs: number): DriverResult }>;
