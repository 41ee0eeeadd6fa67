/** Test helpers shared by every CLI's tests. */
import { spawnSync } from 'node:child_process';
import { format } from 'node:util';
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

/** What a command run printed, and its exit status. */
export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** process.exit inside an in-process run: ends the run with its status instead of the process. */
class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/**
 * Runs a command (its module's `run`) in this process, as runCliProcess does in its own: its
 * exit status and what it printed, with env's variables set for its duration. The commands of
 * one test file then share a GPU device and every pipeline compiled on it (Platform.shareDevice):
 * on SwiftShader a process start compiles some thirty kernels, seconds each. One at a time: the
 * run borrows process.exit, the standard streams and the environment.
 */
export async function runCliInProcess(run: (argv: readonly string[]) => Promise<void>, args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const saved = { exit: process.exit, stdout: process.stdout.write, stderr: process.stderr.write, console: { ...console }, env: { ...process.env } };
  // Listeners a command adds for the process's life (Ctrl-C, a closed pipe) are removed after it.
  const listeners = [[process, 'SIGINT'], [process.stdout, 'error'], [process.stderr, 'error']] as const;
  const before = listeners.map(([emitter, event]) => new Set(emitter.listeners(event)));
  const capture = (into: string[]) => ((chunk: string | Uint8Array) => (into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')), true)) as typeof process.stdout.write;
  process.exit = ((code?: number) => {
    throw new Exit(code ?? 0);
  }) as typeof process.exit;
  process.stdout.write = capture(out);
  process.stderr.write = capture(err);
  // The test runner routes console output through its own reporter, not the streams.
  const print = (into: string[]) => (...args: unknown[]) => void into.push(`${format(...args)}\n`);
  Object.assign(console, { log: print(out), info: print(out), warn: print(err), error: print(err) });
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  let status = 0;
  try {
    await run(args);
  } catch (e) {
    if (!(e instanceof Exit)) throw e;
    status = e.code;
  } finally {
    process.exit = saved.exit;
    process.stdout.write = saved.stdout;
    process.stderr.write = saved.stderr;
    Object.assign(console, saved.console);
    for (const k of Object.keys(process.env)) if (!(k in saved.env)) delete process.env[k];
    Object.assign(process.env, saved.env);
    listeners.forEach(([emitter, event], i) => {
      for (const l of emitter.listeners(event)) if (!before[i]!.has(l)) emitter.removeListener(event, l as (...a: unknown[]) => void);
    });
  }
  return { status, stdout: out.join(''), stderr: ownLines(err.join('')) };
}

/**
 * Runs a CLI entry point in one Node process with tsx's loader (npm run's wrapper and tsx's
 * launcher would add two process starts to every call); stderr without the notices npm and
 * Dawn's native code print on their own (not errors).
 */
export function runCliProcess(entry: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', entry, ...args], { encoding: 'utf8', env, timeout: 14 * 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: ownLines(r.stderr) };
}

/** stderr without the notices npm and Dawn's native code print on their own (not errors). */
function ownLines(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => l.trim() && !/^npm warn|^Warning: |^\s+at .*third_party\/dawn/.test(l))
    .join('\n');
}
