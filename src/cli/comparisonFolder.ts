/**
 * A comparison's --out folder as the research scripts read it (challenger-record, critic-record,
 * solver-record): its methods and their finished runs, and each run's kept transcripts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transcript } from '../sage/loop';
import type { RunState } from '../sage/run';
import { parseJsonl, RUN_FILES } from '../sage/runRecords';

/** The options of the scripts that read a comparison's runs (challenger-record, critic-record and solver-record). */
export const COMPARISON_RUNS_OPTIONS = {
  runs: { type: 'string', arg: 'DIR', exists: 'dir', required: true, help: "a comparison's --out folder (<method>/seed-N/ run folders)" },
  methods: { type: 'string', help: 'the methods to read, comma-separated (default: every one with transcripts)' },
} as const;

/** A run folder's kept transcripts and the steps it ran, read as the run wrote them (runRecords' layout). */
export function readTranscripts(dir: string): { transcripts: Transcript[]; steps: number } {
  const transcripts = parseJsonl<Transcript>(readFileSync(join(dir, RUN_FILES.transcripts), 'utf8'), RUN_FILES.transcripts);
  const state = JSON.parse(readFileSync(join(dir, RUN_FILES.state), 'utf8')) as RunState;
  return { transcripts, steps: state.step };
}

/** The methods of a comparison folder with transcripts (or those named), each with the folder names of its runs that hold a state.json. */
export function comparisonRuns(runs: string, methods?: string): { method: string; seeds: string[] }[] {
  const names = methods ? methods.split(',') : readdirSync(runs).filter((m) => existsSync(join(runs, m, 'seed-0', RUN_FILES.transcripts)));
  return names.map((method) => ({
    method,
    seeds: readdirSync(join(runs, method)).filter((d) => /^seed-\d+$/.test(d) && existsSync(join(runs, method, d, RUN_FILES.state))).sort(),
  }));
}
