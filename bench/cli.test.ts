import { describe, expect, it } from 'vitest';
import { expectEveryOptionChecked, runCliProcess } from '../src/cli/testUtils';
import { benchCli, SUITE_NAMES } from './cli';

describe('bench command line', () => {
  it('refuses a bad value of every option', () => {
    expect(SUITE_NAMES).toContain('matmul');
    expectEveryOptionChecked(benchCli);
  });

  it('prints one line naming the bad option, with exit code 2, before starting anything', () => {
    const r = runCliProcess('scripts/bench.mjs', ['--suite', 'matmul,nope']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`bench: --suite must be one of all, ${SUITE_NAMES.join(', ')} (got "nope")`);
  });
});
