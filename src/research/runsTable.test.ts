import { describe, expect, it } from 'vitest';
import type { RunStart } from '../sage/runRecords';
import { runsSection, type RunProvenance } from './runsTable';

const COMMIT = 'dfba34a7845961fa4031c8ab5b983d00214f26d1';
const at = (minutes: number) => new Date(Date.UTC(2026, 10, 29, 7, 0) + minutes * 60_000).toISOString();

/** A run of `parts` processes, each `length` minutes after a gap, the ones in `killed` without an end. */
function run(method: string, seed: number, begin: number, lengths: number[], killed: number[] = [], commit = COMMIT): RunProvenance {
  let t = begin;
  const starts: RunStart[] = lengths.map((length, i) => {
    const s: RunStart = { started: at(t), commit, dirty: false, kernels: i ? 'recorded' : 'tuned', ...(killed.includes(i) ? {} : { ended: at(t + length) }) };
    t += length + 5;
    return s;
  });
  return { method, seed, starts };
}

describe('runsSection', () => {
  it('gives a row per run, its minutes, processes and kernels', () => {
    // Random lengths: the minutes column is their sum for runs that ended themselves.
    const lengths = Array.from({ length: 6 }, () => 1 + Math.floor(Math.random() * 60));
    const runs = [run('rlvr', 0, 0, [lengths[0]!]), run('sage', 0, 100, [lengths[1]!, lengths[2]!]), run('rlvr', 1, 300, [lengths[3]!, lengths[4]!], [0])];
    const lines = runsSection(runs);
    expect(lines[0]).toBe('## Runs');
    expect(lines[2]).toContain('Every process of every run ran from `dfba34a`');
    expect(lines[2]).toContain('on 2026-11-29');
    const rows = lines.filter((l) => l.startsWith('| `'));
    expect(rows).toHaveLength(3);
    const cells = rows.map((r) => r.split(' | '));
    expect(cells[0]![4]).toBe(String(lengths[0]));
    expect(cells[0]![5]).toBe('1');
    expect(cells[0]![6]).toBe('tuned |');
    expect(cells[1]![4]).toBe(String(lengths[1]! + lengths[2]!));
    expect(cells[1]![6]).toBe('tuned, then recorded |');
    // The killed first process of rlvr seed 1: only the second's minutes are known, a lower bound.
    expect(cells[2]![4]).toBe(`≥ ${lengths[4]}`);
    expect(cells[2]![5]).toBe('2 (1 killed, resumed from its last checkpoint)');
    expect(cells[2]![2]).toBe(at(300).slice(11, 16));
  });

  it('names every commit where the runs differ, and changes in a tree', () => {
    const other = run('rlvr', 1, 0, [10], [], '0123456789abcdef0123456789abcdef01234567');
    other.starts = other.starts.map((s) => ({ ...s, dirty: true }));
    const lines = runsSection([run('rlvr', 0, 0, [10]), other]);
    expect(lines[2]).toContain('2 commits (`dfba34a`, `0123456` with changes)');
  });

  it('writes the date beside times of runs on more than one day, and marks a run without starts', () => {
    const late = run('rlvr', 1, 24 * 60, [10]);
    const lines = runsSection([run('rlvr', 0, 0, [10]), late, { method: 'mae', seed: 0, starts: [] }]);
    expect(lines[2]).toContain('1 run recorded no starts');
    expect(lines[2]).not.toContain('on 2026-11-29');
    expect(lines.find((l) => l.startsWith('| `rlvr` seed 1'))).toContain('2026-11-30 07:00');
    expect(lines.find((l) => l.startsWith('| `mae` seed 0'))).toBe('| `mae` seed 0 | - | - | - | - | - | - |');
  });

  it('is empty where no run recorded a start', () => {
    expect(runsSection([{ method: 'rlvr', seed: 0, starts: [] }])).toEqual([]);
  });
});
