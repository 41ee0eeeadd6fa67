import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { curriculumCli } from './curriculum';
import { expectEveryOptionChecked, runCliProcess } from './testUtils';

describe('curriculum command line', () => {
  it('refuses every bad option value with one line', () => expectEveryOptionChecked(curriculumCli));

  it('writes problems of the chosen levels, leaving out the expressions of --exclude files in any wording', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'sage-cur-')), 'train.jsonl');
    const held = 'data/validation/curriculum-1000.jsonl';
    const r = runCliProcess('src/cli/curriculum.ts', ['--levels', '1,3', '--count', '150', '--exclude', held, '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/wrote 300 problems \(levels 1, 3\)/);
    const made = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { level: number; expression: string });
    expect(made.filter((p) => p.level === 3)).toHaveLength(150);
    const heldOut = new Set(readFileSync(held, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { expression: string }).expression));
    expect(r.stdout).toMatch(new RegExp(`, ${heldOut.size} expressions excluded`));
    expect(made.filter((p) => heldOut.has(p.expression))).toEqual([]);
    const bad = runCliProcess('src/cli/curriculum.ts', ['--levels', '1']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('curriculum: --out is required (or --shipped)');
  });
});
