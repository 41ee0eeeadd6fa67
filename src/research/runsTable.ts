/**
 * Where each run of a comparison came from, read from its config.json's `starts`: the commit
 * (and whether its tracked files were clean), its clock times, how many processes made it and
 * which were killed, the kernels it ran on. From it a reviewer sees whether every run shares one
 * commit and plan, and a record needs no hand-kept table of when its runs ran.
 */
import type { RunStart } from '../sage/runRecords';
import { markdown } from './compareTable';

export interface RunProvenance {
  method: string;
  seed: number;
  /** Its config.json's starts, in order (empty for a run recorded before they were kept). */
  starts: readonly RunStart[];
}

/** A commit as the report names it: short, and marked where its tracked files had changed. */
const commitName = (s: RunStart): string => (s.commit ? `\`${s.commit.slice(0, 7)}\`${s.dirty ? ' with changes' : ''}` : 'not a git checkout');

/** An ISO time as minutes in UTC; the date only where it differs from `day`. */
function clock(iso: string, day: string | null): string {
  const [date, time] = [iso.slice(0, 10), iso.slice(11, 16)];
  return date === day ? time : `${date} ${time}`;
}

/** Minutes a process ran, where it ended itself (a killed one's end is unknown). */
const minutes = (s: RunStart): number | null => (s.ended ? (Date.parse(s.ended) - Date.parse(s.started)) / 60_000 : null);

/** The cells of one run's row. */
function row(run: RunProvenance, day: string | null): string[] {
  const { starts } = run;
  const name = `\`${run.method}\` seed ${run.seed}`;
  if (!starts.length) return [name, '-', '-', '-', '-', '-', '-'];
  const first = starts[0]!;
  const last = starts[starts.length - 1]!;
  const commits = [...new Set(starts.map(commitName))].join(', then ');
  const kernels = starts.map((s) => s.kernels).filter((k, i, all) => k !== all[i - 1]).join(', then ');
  const killed = starts.filter((s) => !s.ended).length;
  const ran = starts.map(minutes).filter((m): m is number => m !== null);
  // A killed process's minutes are unknown: the sum is then a lower bound.
  const total = ran.length ? `${killed ? '≥ ' : ''}${Math.round(ran.reduce((a, b) => a + b, 0))}` : '-';
  const processes = `${starts.length}${killed ? ` (${killed} killed, resumed from its last checkpoint)` : ''}`;
  return [name, commits, clock(first.started, day), last.ended ? clock(last.ended, day) : '-', total, processes, kernels];
}

/**
 * The runs' provenance as a Markdown section: one line on the commits they share, then a row per
 * run. Times are UTC; the date is written once where every run started on one day.
 */
export function runsSection(runs: readonly RunProvenance[]): string[] {
  const starts = runs.flatMap((r) => r.starts);
  if (!starts.length) return [];
  const days = new Set(starts.map((s) => s.started.slice(0, 10)));
  const day = days.size === 1 ? [...days][0]! : null;
  const commits = [...new Set(starts.map(commitName))];
  const unrecorded = runs.filter((r) => !r.starts.length).length;
  const shared = commits.length === 1 ? `Every process of every run ran from ${commits[0]}` : `The runs' processes ran from ${commits.length} commits (${commits.join(', ')})`;
  return [
    '## Runs',
    '',
    `${shared}${unrecorded ? `; ${unrecorded} run${unrecorded > 1 ? 's' : ''} recorded no starts` : ''}. Times in UTC${day ? `, on ${day}` : ''}; minutes summed over the processes that ended by themselves (a killed one's end is unknown); kernels: tuned on this machine, or the plan the run recorded (followed on resume).`,
    '',
    ...markdown(['run', 'commit', 'started', 'ended', 'minutes', 'processes', 'kernels'], runs.map((r) => row(r, day))).split('\n'),
  ];
}
