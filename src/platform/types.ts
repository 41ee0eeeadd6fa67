/** The few things that differ between the browser (page or worker) and Node. */
export interface Platform {
  /** Human-readable name, e.g. "browser" or "node (dawn)". */
  readonly name: string;
  /** The WebGPU entry point (`navigator.gpu` or Dawn's), or null when there is none. */
  gpu(): Promise<GPU | null>;
  /** The text of `shaders/<name>.wgsl`. */
  shaderSource(name: string): string;
  /** Small persistent key/value store (autotune results): localStorage or a JSON file. */
  cacheGet(key: string): string | null;
  cacheSet(key: string, value: string): void;
}
