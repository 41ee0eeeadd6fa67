/** Test helpers shared by every CLI's tests. */
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { parseOptions, UsageError, type CliDescription, type OptionSpec, type OptionSpecs } from './options';

/** Values each kind of option must refuse. */
function badValues(spec: OptionSpec): string[] {
  switch (spec.type) {
    case 'int':
      return ['abc', '1.5', ...(spec.min !== undefined ? [String(spec.min - 1)] : []), ...(spec.max !== undefined ? [String(spec.max + 1)] : [])];
    case 'number':
      return ['abc', 'NaN', ...(spec.min !== undefined ? [String(spec.minExclusive ? spec.min : spec.min - 1)] : [])];
    case 'string':
      return [...(spec.choices ? ['no-such-choice'] : []), ...(spec.exists ? ['/nonexistent/path'] : [])];
    case 'flag':
      return [];
  }
}

/**
 * Every option with a bad value is refused with one message that names it, and so are an
 * unknown option, a flag given a value and a missing value.
 */
export function expectEveryOptionChecked<S extends OptionSpecs>(cli: CliDescription<S>): void {
  const refusal = (argv: string[]): string => {
    try {
      parseOptions(cli, argv);
    } catch (e) {
      if (e instanceof UsageError) return e.message;
      throw e;
    }
    throw new Error(`${cli.name} accepted ${argv.join(' ')}`);
  };
  for (const [name, spec] of Object.entries(cli.options)) {
    for (const bad of badValues(spec)) {
      const message = refusal([`--${name}`, bad]);
      expect(message, `${cli.name} --${name} ${bad}`).toContain(`--${name}`);
      expect(message).not.toContain('\n');
    }
    if (spec.type === 'flag') expect(refusal([`--${name}=1`])).toBe(`--${name} takes no value`);
    else expect(refusal([`--${name}`])).toMatch(new RegExp(`^--${name} needs a value`));
  }
  expect(refusal(['--no-such-option'])).toBe('unknown option --no-such-option (see --help)');
  expect(parseOptions(cli, ['--help'])).toBeNull();
}

/**
 * Runs a CLI entry point in one Node process with tsx's loader (npm run's wrapper and tsx's
 * launcher would add two process starts to every call); stderr without the notices npm and
 * Dawn's native code print on their own (not errors).
 */
export function runCliProcess(entry: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', entry, ...args], { encoding: 'utf8', env, timeout: 10 * 60_000 });
  const stderr = r.stderr
    .split('\n')
    .filter((l) => l.trim() && !/^npm warn|^Warning: |^\s+at .*third_party\/dawn/.test(l))
    .join('\n');
  return { status: r.status, stdout: r.stdout, stderr };
}
