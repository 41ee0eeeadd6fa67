import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectEveryOptionChecked, runCliProcess } from './testing';
import { verifyCli } from './verify';

describe('verify command line', () => {
  it('refuses every bad option value with one line', () => expectEveryOptionChecked(verifyCli));

  it('checks samples in evaluate_functional_correctness format: a line per sample, then pass@1 and counts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-verify-'));
    const samples = join(dir, 'samples.jsonl');
    writeFileSync(
      samples,
      [
        JSON.stringify({ task_id: 'HumanEval/0', completion: '    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n' }),
        JSON.stringify({ task_id: 'HumanEval/0', completion: '    return False\n' }),
        JSON.stringify({ task_id: 'HumanEval/3', completion: '    while True:\n        pass\n' }),
        'not json',
        JSON.stringify({ task_id: 'Nope/1', completion: 'x' }),
      ].join('\n'),
    );
    const r = runCliProcess('src/cli/verify.ts', ['--problems', 'data/seeds/humaneval-87.jsonl', '--samples', samples, '--timeout', '1000']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/samples\.jsonl:4: skipped: not valid JSON/);
    expect(r.stderr).toMatch(/samples\.jsonl:5: skipped: task_id Nope\/1 is not among the problems/);
    const lines = r.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.slice(0, 3).map((l) => l.status).sort()).toEqual(['fail', 'pass', 'timeout']);
    expect(lines[3]).toMatchObject({ 'pass@1': 0.25, samples: 3, pass: 1, fail: 1, timeout: 1 });
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
