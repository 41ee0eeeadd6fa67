import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The team's reference folder beside the repository; a user's clone has nothing there. */
const OUTSIDE = ['..', 'shared'].join('/');

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);
}

function statements(dir: string): Map<string, string> {
  const seen = new Map<string, string>();
  for (const file of readdirSync(dir)) {
    for (const line of readFileSync(`${dir}/${file}`, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      // MBPP+ inputs hold Python's non-standard JSON numbers (Infinity, NaN).
      const r = JSON.parse(line.replace(/-?\bInfinity\b|\bNaN\b/g, 'null')) as Record<string, unknown>;
      const text = String(r.question ?? r.problem ?? r.prompt ?? '');
      seen.set(text.replace(/\s+/g, ' ').trim().toLowerCase(), `${dir}/${file}`);
    }
  }
  return seen;
}

describe('the repository stands alone', () => {
  it('no tracked file refers to a folder outside the repository', () => {
    const offenders = trackedFiles().filter((f) => {
      try {
        return readFileSync(f, 'utf8').includes(OUTSIDE);
      } catch {
        return false; // deleted in the work tree
      }
    });
    expect(offenders).toEqual([]);
  });

  it('the shipped seeds and validation sets share no problem', () => {
    const seeds = statements('data/seeds');
    const validation = statements('data/validation');
    expect(seeds.size).toBe(1500); // sage-500 is four other files shuffled together; the curriculum adds 500, the ceiling's all-levels file 500 more of levels 3-5
    expect(validation.size).toBeGreaterThan(2000);
    const shared = [...seeds.keys()].filter((s) => validation.has(s));
    expect(shared).toEqual([]);
  });
});
