/**
 * The contract between benchmark suites (run in the page) and scripts/bench.mjs (Node),
 * which prints the tables and writes one JSON file per suite. Everything crossing that
 * boundary must survive structured cloning, so results are plain data.
 */

export interface SuiteOptions {
  /** Fewer shapes and runs: a smoke test of the harness, not a measurement. */
  quick: boolean;
  /** Progress line, forwarded to the terminal while the suite runs. */
  log(message: string): void;
  /**
   * What the suite's Node half (bench/node/<suite>.ts) reported, when scripts/bench.mjs ran
   * one: its JSON output, or `{ error }` if it failed. Undefined when the page is opened alone.
   */
  node?: unknown;
}

export interface Table {
  title: string;
  columns: string[];
  rows: string[][];
  /** Lines printed under the table (legend, caveats). */
  notes?: string[];
}

export interface SuiteResult {
  suite: string;
  tables: Table[];
  /** Suite-specific measurements, written verbatim to the JSON file. */
  data: unknown;
  /** Anything that went wrong (wrong results, a library that threw); non-empty fails the run. */
  failures: string[];
}

export type Suite = (options: SuiteOptions) => Promise<SuiteResult>;

export interface AdapterInfoSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
}

export type BenchPageResult =
  | { ok: true; userAgent: string; adapter: AdapterInfoSummary | null; suites: SuiteResult[] }
  | { ok: false; error: string };

export function adapterSummary(info: GPUAdapterInfo | undefined | null): AdapterInfoSummary | null {
  if (!info) return null;
  return { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description };
}

export function median(samples: readonly number[]): number {
  if (samples.length === 0) throw new Error('median of no samples');
  const s = [...samples].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export { rng, uniform } from '../src/util/random';
export { rowRelativeError } from '../src/gpu/reference';

export function errorMessage(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}
