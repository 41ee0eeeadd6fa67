import type { SandboxRunner } from '../verify/python/codeVerifier';

/** The few things that differ between the browser (page or worker) and Node. */
export interface Platform {
  /** Human-readable name, e.g. "browser" or "node (dawn)". */
  readonly name: string;
  /**
   * Whether the runtimes one process makes share a device, and with it every pipeline compiled
   * on it (Node: a process that runs several commands or tests compiles each kernel once, where
   * a compile on SwiftShader takes seconds). A runtime's end then leaves the device, and an
   * uncaptured error on it is reported to every runtime that uses it.
   */
  readonly shareDevice?: boolean;
  /** The WebGPU entry point (`navigator.gpu` or Dawn's), or null when there is none. */
  gpu(): Promise<GPU | null>;
  /** What to do when no adapter is found here: the settings or packages it needs. */
  unavailableAdvice(): string;
  /** The text of `shaders/<name>.wgsl`. */
  shaderSource(name: string): string;
  /**
   * A small persistent key/value store (autotune results): IndexedDB in the browser (pages
   * and workers alike), a JSON file in Node. Read whole once; written entry by entry.
   */
  loadCache(): Promise<Record<string, string>>;
  saveCache(key: string, value: string): Promise<void>;
  /** A pool of Python sandboxes for code verdicts: Workers in the browser, processes in Node. */
  codeSandbox(): SandboxRunner & { close(): void };
}
