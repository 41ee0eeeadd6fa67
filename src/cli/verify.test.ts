import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectEveryOptionChecked, runCliProcess } from './testUtils';
import { verifyCli } from './verify';

describe('verify command line', () => {
  it('refuses every bad option value with one line', () => expectEveryOptionChecked(verifyCli));

  it('writes each sample back in the samples’ order with result and passed, then pass@k and counts (evaluate_functional_correctness)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-verify-'));
    const samples = join(dir, 'samples.jsonl');
    const out = join(dir, 'samples.jsonl_results.jsonl');
    const right = '    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n';
    // The slowest verdict (a timeout) first: the two after it finish before it and still print after it.
    const given = [
      { task_id: 'HumanEval/3', completion: '    while True:\n        pass\n', sampler: 'a' },
      { task_id: 'HumanEval/0', completion: right, sampler: 'b' },
      { task_id: 'HumanEval/0', completion: '    return False\n', sampler: 'c' },
    ];
    writeFileSync(samples, [...given.map((g) => JSON.stringify(g)), 'not json', JSON.stringify({ task_id: 'Nope/1', completion: 'x' })].join('\n'));
    const r = runCliProcess('src/cli/verify.ts', ['--problems', 'data/seeds/humaneval-87.jsonl', '--samples', samples, '--timeout', '1000', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/samples\.jsonl:4: skipped: not valid JSON/);
    expect(r.stderr).toMatch(/samples\.jsonl:5: skipped: task_id Nope\/1 is not among the problems/);
    const printed = r.stdout.trim().split('\n').filter((l) => l.startsWith('{'));
    const lines = printed.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.slice(0, 3)).toMatchObject([
      { ...given[0], line: 1, result: 'timed out', passed: false, status: 'timeout' },
      { ...given[1], line: 2, result: 'passed', passed: true, status: 'pass' },
      { ...given[2], line: 3, passed: false, status: 'fail' },
    ]);
    expect(lines[2]!.result).toMatch(/^failed: /);
    expect(readFileSync(out, 'utf8')).toBe(printed.slice(0, 3).join('\n') + '\n');
    // One task of one sample: pass@1 alone.
    expect(lines[3]).toMatchObject({ 'pass@1': 0.25, samples: 3, pass: 1, fail: 1, timeout: 1 });
    expect(lines[3]).not.toHaveProperty('pass@2');
  });

  it('runs the canonical solutions with --canonical, and needs samples or that flag', () => {
    const r = runCliProcess('src/cli/verify.ts', ['--problems', 'data/validation/humaneval-77.jsonl', '--canonical', '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ 'pass@1': 1, samples: 77, pass: 77 });
    const none = runCliProcess('src/cli/verify.ts', ['--problems', 'data/validation/humaneval-77.jsonl']);
    expect(none.status).toBe(2);
    expect(none.stderr).toBe('verify: give either --samples FILE or --canonical');
  });
});
