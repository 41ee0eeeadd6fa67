import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evolveCli } from './evolve';
import { expectEveryOptionChecked, runCliProcess } from './testing';

describe('evolve command line', () => {
  it('refuses a bad value of every option before any GPU work', () => {
    expectEveryOptionChecked(evolveCli);
  });

  it('--steps 0 reads and reports the seed and validation files, bad lines by number', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    const seeds = join(dir, 'seeds.jsonl');
    writeFileSync(seeds, ['{"question": "1+1=?", "answer": "2"}', 'not json', '{"question": "1+1=?", "answer": 2}', '{"problem": "x"}', '{"question": "2+5=?", "answer": 7}'].join('\n'));
    const r = runCliProcess('src/cli/evolve.ts', ['--seeds', seeds, '--steps', '0']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/seeds: .*seeds\.jsonl: 2 problems \(2 qa\), 2 bad lines, 1 duplicates loaded once/);
    expect(r.stdout).toMatch(/validation: data\/validation\/curriculum-1000\.jsonl: 1000 problems \(1000 curriculum\)/);
    expect(r.stderr).toMatch(/seeds\.jsonl:2: skipped: not valid JSON/);
    expect(r.stderr).toMatch(/seeds\.jsonl:4: skipped: no answer field/);
    expect(r.stderr).toMatch(/seeds\.jsonl:3: duplicate of line 1/);
  });

  it('refuses validation problems that are also seeds, and a bad --config, with one line', () => {
    const r = runCliProcess('src/cli/evolve.ts', ['--seeds', 'data/seeds/curriculum-500.jsonl', '--validation', 'data/seeds/curriculum-500.jsonl', '--steps', '0']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^evolve: 500 validation problems also appear in the seeds/m);
    const dir = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, '{"proposals": 0}');
    const bad = runCliProcess('src/cli/evolve.ts', ['--config', config, '--steps', '1']);
    expect(bad.status).toBe(2);
    expect(bad.stderr.split('\n').at(-1)).toBe(`evolve: --config ${config}: proposals must be an integer ≥ 1 (got 0)`);
  });
});
