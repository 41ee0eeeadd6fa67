import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseCommandLine, parseOptions, UsageError } from './options';

const cli = {
  name: 'test',
  summary: 'options for the parser test',
  options: {
    seed: { type: 'int', min: 0, default: 0, help: 'a number with a default' },
    lr: { type: 'number', min: 0, minExclusive: true, help: 'a number without one' },
    mode: { type: 'string', choices: ['a', 'b'], default: 'a', help: 'a choice with a default' },
    tags: { type: 'string', multiple: true, help: 'a list' },
    quiet: { type: 'flag', help: 'a flag' },
  },
} as const;

describe('command-line options', () => {
  it('tells the options given from those defaulted, a default typed out counting as given', () => {
    const none = parseCommandLine(cli, [])!;
    expect(none.values).toEqual({ seed: 0, lr: undefined, mode: 'a', tags: [], quiet: false });
    expect([...none.given]).toEqual([]);
    // The default's own value, typed: given all the same (a resumed run keeps it over the recorded one).
    const typed = parseCommandLine(cli, ['--seed', '0', '--mode=b', '--tags', 'x', '--tags', 'y,z', '--quiet'])!;
    expect(typed.values).toEqual({ seed: 0, lr: undefined, mode: 'b', tags: ['x', 'y', 'z'], quiet: true });
    expect(new Set(typed.given)).toEqual(new Set(['seed', 'mode', 'tags', 'quiet']));
    expect(parseOptions(cli, ['--lr', '1e-4'])).toEqual({ ...none.values, lr: 1e-4 });
    expect([...parseCommandLine(cli, ['--lr', '1e-4'])!.given]).toEqual(['lr']);
  });

  it('gives the same values both ways, and the same refusals', () => {
    for (const argv of [['--seed', '7', '--quiet'], ['--mode', 'b'], []]) expect(parseCommandLine(cli, argv)!.values).toEqual(parseOptions(cli, argv));
    expect(parseCommandLine(cli, ['--help'])).toBeNull();
    expect(() => parseCommandLine(cli, ['--seed', '-1'])).toThrow(UsageError);
    expect(() => parseCommandLine(cli, ['--seed', '1', '--seed', '2'])).toThrow('--seed given twice');
  });
});

describe('runCli on a closed pipe', () => {
  it('ends quietly, exit code 0, when the reader of its output stops early (| head)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-epipe-'));
    const entry = join(dir, 'talk.ts');
    // 20 MB of lines, far past a pipe's buffer: the writes after `head` exits fail with EPIPE.
    writeFileSync(
      entry,
      `import { runCli } from ${JSON.stringify(resolve('src/cli/options.ts'))};\n` +
        `runCli({ name: 'talk', summary: 'prints', options: {} }, async () => {\n` +
        `  for (let i = 0; i < 200_000; i++) console.log(String(i).padStart(100, '.'));\n` +
        `  await new Promise((r) => setTimeout(r, 100));\n` +
        `});\n`,
    );
    try {
      const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" --import tsx "${entry}" | head -n 2 >/dev/null`], { encoding: 'utf8', timeout: 14 * 60_000 });
      expect(r.stderr).not.toMatch(/EPIPE|Error|\bat /);
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
