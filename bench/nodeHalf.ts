/**
 * What every Node half of a suite shares: its options (--quick, --out FILE), its progress
 * lines on stderr, and its JSON result written to FILE or stdout.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Table } from './suite';

export interface NodeHalf {
  quick: boolean;
  log(message: string): void;
}

export function runNodeHalf<T>(measure: (half: NodeHalf) => Promise<T>): void {
  const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
  const log = (m: string) => process.stderr.write(`[bench node] ${m}\n`);
  measure({ quick: args.quick ?? false, log }).then(
    (result) => {
      const json = JSON.stringify(result);
      if (args.out) writeFileSync(args.out, json);
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
