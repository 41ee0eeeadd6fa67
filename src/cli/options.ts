/**
 * Command-line options for every CLI: declared once with their type, range and default,
 * checked before any GPU work, and reported as one line naming the option and what it
 * accepts (exit code 2). `--help` lists them with their defaults.
 */
import { existsSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { errorText } from '../util/errorText';

interface Base {
  /** One line for --help. */
  help: string;
  /** Placeholder in --help, e.g. FILE. */
  arg?: string;
}
export interface IntOption extends Base {
  type: 'int';
  default?: number;
  min?: number;
  max?: number;
  required?: boolean;
}
export interface NumberOption extends Base {
  type: 'number';
  default?: number;
  /** Exclusive lower bound when `minExclusive` is set, inclusive otherwise. */
  min?: number;
  minExclusive?: boolean;
  max?: number;
  required?: boolean;
}
export interface StringOption extends Base {
  type: 'string';
  default?: string;
  required?: boolean;
  /** `file` and `dir` must exist when given; `choices` restricts the value. */
  exists?: 'file' | 'dir';
  choices?: readonly string[];
  /** Repeatable, or comma-separated; the value is a list. */
  multiple?: boolean;
}
export interface FlagOption extends Base {
  type: 'flag';
}
export type OptionSpec = IntOption | NumberOption | StringOption | FlagOption;
export type OptionSpecs = Record<string, OptionSpec>;

type ValueOf<S extends OptionSpec> = S extends FlagOption
  ? boolean
  : S extends IntOption | NumberOption
    ? S extends { default: number } | { required: true }
      ? number
      : number | undefined
    : S extends { multiple: true }
      ? string[]
      : S extends { default: string } | { required: true }
        ? string
        : string | undefined;
export type OptionValues<S extends OptionSpecs> = { [K in keyof S]: ValueOf<S[K]> };

/** A bad command line: its message is the one line the user sees. */
export class UsageError extends Error {}

export interface CliDescription<S extends OptionSpecs> {
  /** `npm run NAME`, also the prefix of error lines. */
  name: string;
  /** What the command does, one line. */
  summary: string;
  options: S;
  /** Extra lines at the end of --help (environment variables, examples). */
  notes?: readonly string[];
}

export function helpText<S extends OptionSpecs>(cli: CliDescription<S>): string {
  const rows = Object.entries(cli.options).map(([name, spec]) => {
    const left = `--${name}${spec.type === 'flag' ? '' : ` ${spec.arg ?? (spec.type === 'string' ? 'TEXT' : 'N')}`}`;
    const extra: string[] = [];
    if (spec.type === 'string' && spec.choices) extra.push(`one of ${spec.choices.join(', ')}`);
    if (spec.type !== 'flag' && spec.required) extra.push('required');
    if (spec.type !== 'flag' && spec.default !== undefined) extra.push(`default ${spec.default}`);
    return [left, `${spec.help}${extra.length ? ` (${extra.join('; ')})` : ''}`] as const;
  });
  rows.push(['--help', 'this list']);
  const width = Math.max(...rows.map(([l]) => l.length));
  return [
    `usage: npm run ${cli.name} -- [options]`,
    cli.summary,
    '',
    ...rows.map(([l, r]) => `  ${l.padEnd(width)}  ${r}`),
    ...(cli.notes?.length ? ['', ...cli.notes] : []),
  ].join('\n');
}

function accepts(spec: IntOption | NumberOption): string {
  const kind = spec.type === 'int' ? 'an integer' : 'a number';
  const lo = spec.min === undefined ? '' : `${spec.type === 'number' && spec.minExclusive ? '>' : '≥'} ${spec.min}`;
  const hi = spec.max === undefined ? '' : `≤ ${spec.max}`;
  return [kind, [lo, hi].filter(Boolean).join(' and ')].filter(Boolean).join(' ');
}

function parseNumber(name: string, spec: IntOption | NumberOption, raw: string): number {
  const v = raw.trim() === '' ? NaN : Number(raw);
  const ok =
    Number.isFinite(v) &&
    (spec.type !== 'int' || Number.isInteger(v)) &&
    (spec.min === undefined || (spec.type === 'number' && spec.minExclusive ? v > spec.min : v >= spec.min)) &&
    (spec.max === undefined || v <= spec.max);
  if (!ok) throw new UsageError(`--${name} must be ${accepts(spec)} (got "${raw}")`);
  return v;
}

function checkString(name: string, spec: StringOption, raw: string): string {
  if (spec.choices && !spec.choices.includes(raw)) {
    throw new UsageError(`--${name} must be one of ${spec.choices.join(', ')} (got "${raw}")`);
  }
  if (spec.exists) {
    const st = existsSync(raw) ? statSync(raw) : null;
    if (!st) throw new UsageError(`--${name}: no such ${spec.exists === 'dir' ? 'folder' : 'file'}: ${raw}`);
    if (spec.exists === 'file' && !st.isFile()) throw new UsageError(`--${name}: not a file: ${raw}`);
    if (spec.exists === 'dir' && !st.isDirectory()) throw new UsageError(`--${name}: not a folder: ${raw}`);
  }
  return raw;
}

/** The options' values, and the names of those the command line gave (the others hold their defaults). */
export interface CommandLine<S extends OptionSpecs> {
  values: OptionValues<S>;
  given: ReadonlySet<keyof S & string>;
}

/**
 * Parses `argv` against the declared options. Returns null for --help; throws UsageError
 * for anything the options do not accept.
 */
export function parseOptions<S extends OptionSpecs>(cli: CliDescription<S>, argv: readonly string[]): OptionValues<S> | null {
  return parseCommandLine(cli, argv)?.values ?? null;
}

/**
 * parseOptions, telling an option given from one defaulted: a command that continues
 * recorded work (a resumed run) keeps the recorded value of every option not given.
 */
export function parseCommandLine<S extends OptionSpecs>(cli: CliDescription<S>, argv: readonly string[]): CommandLine<S> | null {
  const raw = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return null;
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}" (options start with --; see --help)`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = cli.options[name];
    if (!spec) throw new UsageError(`unknown option --${name} (see --help)`);
    if (spec.type === 'flag') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      raw.set(name, ['']);
      continue;
    }
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && next.length > 2)) {
        throw new UsageError(`--${name} needs a value: ${spec.type === 'string' ? (spec.arg ?? 'text') : accepts(spec)}`);
      }
      value = next;
      i++;
    }
    const multiple = spec.type === 'string' && spec.multiple;
    if (raw.has(name) && !multiple) throw new UsageError(`--${name} given twice`);
    raw.set(name, [...(raw.get(name) ?? []), value]);
  }
  // Values given are checked before absent required ones: the line names what was typed wrong.
  const out: Record<string, unknown> = {};
  for (const [name, given] of raw) {
    const spec = cli.options[name]!;
    if (spec.type === 'flag') out[name] = true;
    else if (spec.type === 'string') {
      const values = spec.multiple ? given.flatMap((v) => v.split(',')).filter(Boolean) : given;
      const checked = values.map((v) => checkString(name, spec, v));
      out[name] = spec.multiple ? checked : checked[0];
    } else out[name] = parseNumber(name, spec, given[0]!);
  }
  for (const [name, spec] of Object.entries(cli.options)) {
    if (raw.has(name)) continue;
    if (spec.type === 'flag') out[name] = false;
    else if (spec.required) throw new UsageError(`--${name} is required (see --help)`);
    else out[name] = spec.type === 'string' && spec.multiple ? [] : spec.default;
  }
  return { values: out as OptionValues<S>, given: new Set(raw.keys()) as ReadonlySet<keyof S & string> };
}

/**
 * Runs a command: parses its options (help → exit 0, bad option → one line, exit 2), then
 * `main` with the values and the names of the options given. An error from `main` is one
 * line too (exit 1); SAGE_DEBUG=1 shows its stack.
 */
export async function runCli<S extends OptionSpecs>(
  cli: CliDescription<S>,
  main: (options: OptionValues<S>, given: CommandLine<S>['given']) => Promise<void> | void,
  argv: readonly string[] = process.argv.slice(2),
): Promise<void> {
  // Output piped into a reader that stopped early (`| head`): the rest is not wanted, which
  // is no failure; Node would otherwise throw EPIPE from the stream with a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(0);
      throw e;
    });
  }
  let line: CommandLine<S> | null;
  try {
    line = parseCommandLine(cli, argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${cli.name}: ${e.message}`);
    process.exit(2);
  }
  if (!line) {
    console.log(helpText(cli));
    process.exit(0);
  }
  try {
    await main(line.values, line.given);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`${cli.name}: ${e.message}`);
      process.exit(2);
    }
    console.error(`${cli.name}: ${errorText(e)}`);
    if (process.env.SAGE_DEBUG && e instanceof Error && e.stack) console.error(e.stack);
    process.exit(1);
  }
}

/** True in the module that Node (or tsx) was started with, so a CLI module can also be imported. */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && moduleUrl === pathToFileURL(entry).href;
}
