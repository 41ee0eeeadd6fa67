/**
 * What every Node half of a suite shares: its options (--quick, --out FILE), its progress
 * lines on stderr, and its JSON result written to FILE or stdout.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { sourceCommit, type SourceCommit } from '../src/cli/provenance';
import type { Table } from './suite';

export interface NodeHalf {
  quick: boolean;
  log(message: string): void;
  /**
   * Writes a result so far to FILE (nothing without --out), replaced whole (a file written
   * beside it, then renamed): a run stopped part-way, as a GPU loan's time limit stops one,
   * leaves the last one saved, never a torn file.
   */
  save(result: unknown): void;
}

/** `text` into `file`, replaced whole: written beside it, then renamed, so a reader never meets a torn file. */
export function writeWhole(file: string, text: string): void {
  writeFileSync(`${file}.part`, text);
  renameSync(`${file}.part`, file);
}

/** A result with the commit its code came from (sourceCommit: the checkout's, or the kit's) first: a record names what made it. */
export function stamped(result: unknown, source: SourceCommit | null): unknown {
  return result && typeof result === 'object' && !Array.isArray(result) ? { source, ...result } : result;
}

export function runNodeHalf<T>(measure: (half: NodeHalf) => Promise<T>): void {
  const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
  const log = (m: string) => process.stderr.write(`[bench node] ${m}\n`);
  const out = args.out;
  const source = sourceCommit();
  const save = (result: unknown) => {
    if (out) writeWhole(out, JSON.stringify(stamped(result, source)));
  };
  measure({ quick: args.quick ?? false, log, save }).then(
    (result) => {
      const json = JSON.stringify(stamped(result, source));
      if (out) writeWhole(out, json);
      else process.stdout.write(`${json}\n`);
      // Dawn's worker threads can keep the event loop alive after the device is destroyed.
      process.exit(0);
    },
    (e: unknown) => {
      log(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      process.exit(1);
    },
  );
}

/** Tables as Markdown on the progress stream, to paste (scripts/bench.mjs prints the same from the JSON). */
export function logTables(tables: readonly Table[], log: (message: string) => void): void {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  for (const t of tables) log(['', t.title, '', line(t.columns), line(t.columns.map(() => '--:')), ...t.rows.map(line), '', ...(t.notes ?? [])].join('\n'));
}
