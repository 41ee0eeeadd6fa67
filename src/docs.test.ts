/**
 * The docs cannot rot silently: every relative link in README.md, docs/ and data/'s READMEs
 * reaches a file (and a heading, where it names one), every path written in code from the
 * repository root exists, every `npm run X` is a script of package.json, and every option a
 * command line shows after `npm run <cli> --` is one that CLI declares (a value it restricts
 * to choices, one of them). Plain Node: no GPU.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { benchCli } from '../bench/cli';
import { decodeCountsCli } from '../bench/decodeCountsCli';
import { gpuKitCli } from '../bench/gpuKitCli';
import { hostCostCli } from '../bench/hostCostCli';
import { trainCountsCli } from '../bench/trainCountsCli';
import type { CliDescription, OptionSpecs } from './cli/options';
import { compareCli } from './cli/compare';
import { corpusCli } from './cli/corpus';
import { curriculumCli } from './cli/curriculum';
import { evalCli } from './cli/eval';
import { evolveCli } from './cli/evolve';
import { generateCli } from './cli/generate';
import { pretrainCli } from './cli/pretrain';
import { sftCli } from './cli/sft';
import { verifyCli } from './cli/verify';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The CLIs whose options the docs may show, by npm script name. */
const CLIS: Record<string, CliDescription<OptionSpecs>> = {
  bench: benchCli,
  'gpu-kit': gpuKitCli,
  'decode-counts': decodeCountsCli,
  'train-counts': trainCountsCli,
  'host-cost': hostCostCli,
  compare: compareCli,
  corpus: corpusCli,
  curriculum: curriculumCli,
  eval: evalCli,
  evolve: evolveCli,
  generate: generateCli,
  pretrain: pretrainCli,
  sft: sftCli,
  verify: verifyCli,
};

/** Top-level folders a doc names paths in, written from the repository root (`src/sage/loop.ts`). */
const REPO_DIRS = ['src', 'docs', 'data', 'scripts', 'bench', 'shaders', 'e2e', 'public'];

/** README.md, every Markdown file under docs/, and data/'s READMEs (paths from the root). */
function docFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
    );
  return ['README.md', ...walk('docs'), ...walk('data').filter((f) => f.endsWith('README.md'))];
}

/** The text with fenced code blocks blanked (links and headings inside them are not Markdown). */
function withoutFences(md: string): string {
  return md.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '));
}

/**
 * Inline code spans (one may wrap across lines, not across a paragraph) and fenced code
 * blocks' lines (a `\`-continued line joined): where commands and paths are written.
 */
function codeSnippets(md: string): string[] {
  const fenced = [...md.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].flatMap((m) => m[1]!.replace(/\\\n\s*/g, ' ').split('\n'));
  const inline = [...withoutFences(md).matchAll(/`((?:[^`\n]|\n(?!\s*\n))+)`/g)].map((m) => m[1]!.replace(/\s*\n\s*/g, ' '));
  return [...fenced, ...inline];
}

/** Link targets of `[text](target)` and `![alt](target)` outside code, and of reference definitions. */
function linkTargets(md: string): string[] {
  const text = withoutFences(md).replace(/`[^`\n]*`/g, (s) => ' '.repeat(s.length));
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const refs = [...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]!);
  return [...inline, ...refs];
}

/** GitHub's anchor for a heading: its text as rendered, lower-cased, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every heading's anchor in a Markdown text, repeats numbered as GitHub numbers them. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutFences(md).matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/**
 * Whether `path` (from `root`) is in a clone of the repository: it exists and git does not
 * ignore it (an ignored file, a run's `*.log`, exists only where it was written).
 */
function inClone(root: string, path: string): boolean {
  if (!existsSync(join(root, path))) return false;
  return spawnSync('git', ['-C', root, 'check-ignore', '-q', '--', path]).status !== 0;
}

/** What is wrong with the links of `file` (a path from `root`), one line each. */
function brokenLinks(root: string, file: string, md: string): string[] {
  const problems: string[] = [];
  for (const target of linkTargets(md)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
    const [path = '', anchor] = target.split('#', 2) as [string, string | undefined];
    const dest = path === '' ? file : join(dirname(file), decodeURIComponent(path));
    if (relative(root, resolve(root, dest)).startsWith('..')) {
      problems.push(`${file}: link ${target} leaves the repository`);
      continue;
    }
    if (path !== '' && !inClone(root, dest)) {
      problems.push(`${file}: link ${target}: no such file ${dest}`);
      continue;
    }
    if (anchor === undefined || !dest.endsWith('.md')) continue;
    const targetMd = dest === file ? md : readFileSync(join(root, dest), 'utf8');
    if (!anchors(targetMd).has(anchor)) problems.push(`${file}: link ${target}: no heading #${anchor} in ${dest}`);
  }
  return problems;
}

/** A path segment that stands for one the reader chooses (`FILE.json`, `X`), not a name. */
const PLACEHOLDER_SEGMENT = /^(?!README\b|LICENSE\b)[A-Z][A-Z_0-9]*(\.\w+)?$/;

/**
 * Paths written in code from the repository root (`src/sage/loop.ts`, `--data data/seeds/x.jsonl`)
 * that do not exist; placeholders and patterns (`<date>`, `{a,b}`, `*`) are not paths.
 */
function missingPaths(root: string, file: string, md: string): string[] {
  const path = new RegExp(`^(?:${REPO_DIRS.join('|')})/[\\w./@+-]*$`);
  const words = codeSnippets(md).flatMap((s) => s.split(/\s+/).map((w) => w.replace(/^[("']+|[)"',;:.]+$/g, '')));
  return [...new Set(words)]
    .filter((w) => path.test(w) && !w.split('/').some((part) => PLACEHOLDER_SEGMENT.test(part)))
    .filter((w) => !inClone(root, w))
    .map((w) => `${file}: \`${w}\`: no such file or folder`);
}

/** A value in a doc that stands for one the reader chooses (FILE, <dir>, $m, …), not a literal. */
function isPlaceholder(value: string): boolean {
  return /^[A-Z][A-Z_0-9]*$/.test(value) || /[<…$]|\.\.\./.test(value);
}

/** What is wrong with the `npm run` commands of `file`: unknown scripts, and options or choices a CLI does not accept. */
function badCommands(file: string, md: string, scripts: ReadonlySet<string>, clis: Record<string, CliDescription<OptionSpecs>>): string[] {
  const problems: string[] = [];
  for (const m of md.matchAll(/npm run ([\w:.-]+)/g)) {
    const script = m[1]!.replace(/[.:]+$/, ''); // a sentence's full stop is not the name's
    if (!scripts.has(script)) problems.push(`${file}: npm run ${script}: no such script in package.json`);
  }
  for (const snippet of codeSnippets(md)) {
    for (const m of snippet.matchAll(/npm run ([\w:.-]+) -- ((?:(?!npm run )[^#;&|)])*)/g)) {
      const [, script, rest] = m as unknown as [string, string, string];
      const cli = clis[script];
      const tokens = rest.trim().split(/\s+/).filter(Boolean);
      if (!cli) {
        if (tokens.some((t) => t.startsWith('--'))) problems.push(`${file}: npm run ${script} -- ${rest.trim()}: no declared options to check them against`);
        continue;
      }
      tokens.forEach((token, i) => {
        if (!token.startsWith('--')) return;
        const eq = token.indexOf('=');
        const name = token.slice(2, eq < 0 ? undefined : eq);
        if (name === 'help') return;
        const spec = cli.options[name];
        if (!spec) {
          problems.push(`${file}: npm run ${script} -- --${name}: not an option of npm run ${script}`);
          return;
        }
        if (spec.type !== 'string' || !spec.choices) return;
        const value = eq < 0 ? tokens[i + 1] : token.slice(eq + 1);
        if (value === undefined || value.startsWith('--') || isPlaceholder(value)) return;
        for (const v of spec.multiple ? value.split(',') : [value]) {
          if (!isPlaceholder(v) && !spec.choices.includes(v)) problems.push(`${file}: npm run ${script} -- --${name} ${v}: not one of ${spec.choices.join(', ')}`);
        }
      });
    }
  }
  return problems;
}

describe('the docs', () => {
  const scripts = new Set(Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts));
  const files = docFiles(ROOT);

  it('reach the README, every doc and data/README.md', () => {
    expect(files).toContain('README.md');
    expect(files).toContain(join('data', 'README.md'));
    expect(files.filter((f) => f.startsWith('docs')).length).toBeGreaterThan(5);
  });

  it('know every CLI the package runs from src/cli', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const fromCli = Object.entries(pkg.scripts)
      .filter(([, command]) => /src\/cli\/\w+\.ts/.test(command))
      .map(([name]) => name);
    expect(fromCli.filter((name) => !(name in CLIS))).toEqual([]);
    for (const [name, cli] of Object.entries(CLIS)) expect(cli.name, name).toBe(name);
  });

  it.each(files)('%s: every relative link reaches a file, and its heading', (file) => {
    expect(brokenLinks(ROOT, file, readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
  });

  it.each(files)('%s: every path written from the repository root exists', (file) => {
    expect(missingPaths(ROOT, file, readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
  });

  it.each(files)('%s: every npm run names a script, and every option shown is one the CLI accepts', (file) => {
    expect(badCommands(file, readFileSync(join(ROOT, file), 'utf8'), scripts, CLIS)).toEqual([]);
  });
});

describe('the docs check', () => {
  const scripts = new Set(['dev', 'sft', 'evolve', 'bench']);
  const spec: CliDescription<OptionSpecs> = {
    name: 'evolve',
    summary: '',
    options: {
      steps: { type: 'int', help: '' },
      method: { type: 'string', choices: ['sage', 'rlvr'], help: '' },
      methods: { type: 'string', multiple: true, choices: ['sage', 'rlvr'], help: '' },
      quick: { type: 'flag', help: '' },
    },
  };
  const clis = { evolve: spec };

  it('finds a link to a missing file, a missing heading and one out of the repository', () => {
    const md = [
      '# Top',
      '## Its `code` and *words*: more',
      'See [here](../package.json), [there](nope.md), [a picture](../missing.png "t"), [up](../../outside.md),',
      '[the section](#its-code-and-words-more), [no section](#nowhere), [in the README](../README.md#sage-lab-nope).',
      '`[not a link](nope2.md)` and [the web](https://example.com/x.md).',
      '```',
      '[nor here](nope3.md)',
      '```',
    ].join('\n');
    expect(brokenLinks(ROOT, 'docs/x.md', md)).toEqual([
      'docs/x.md: link nope.md: no such file docs/nope.md',
      'docs/x.md: link ../missing.png: no such file missing.png',
      'docs/x.md: link ../../outside.md leaves the repository',
      'docs/x.md: link #nowhere: no heading #nowhere in docs/x.md',
      'docs/x.md: link ../README.md#sage-lab-nope: no heading #sage-lab-nope in README.md',
    ]);
  });

  it('makes GitHub anchors: code and emphasis dropped, punctuation dropped, repeats numbered', () => {
    expect(slug("The page's responsiveness")).toBe('the-pages-responsiveness');
    expect(slug('Pretraining on plain text: `npm run pretrain`')).toBe('pretraining-on-plain-text-npm-run-pretrain');
    expect(slug('f32 matmul, GFLOP/s')).toBe('f32-matmul-gflops');
    expect(slug('A model of real size: SmolLM2-135M’s configuration')).toBe('a-model-of-real-size-smollm2-135ms-configuration');
    expect([...anchors('# A\n## A\n```\n# A\n```\n## A')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it('finds a missing path written in code, and leaves placeholders alone', () => {
    const md = [
      'In `src/sage/loop.ts`, `src/sage/nope.ts`, `data/README.md`, `docs/runs/<date>-x/`, `src/model/kernels/{a,b}.test.ts`, `bench/results/FILE.json`.',
      '```sh',
      'npm run sft -- --data data/seeds/curriculum-500.jsonl --out ckpt/ && node scripts/gone.mjs',
      '```',
      'Prose naming src/not-code.ts is not checked; `npm run eval -- --model',
      'data/models/tiny-nope` is.',
    ].join('\n');
    expect(missingPaths(ROOT, 'README.md', md)).toEqual([
      'README.md: `scripts/gone.mjs`: no such file or folder',
      'README.md: `src/sage/nope.ts`: no such file or folder',
      'README.md: `data/models/tiny-nope`: no such file or folder',
    ]);
    // A file git ignores (a run's log) is where it was written, not in a clone.
    const ignored = `scripts/docs-test-${process.pid}.log`;
    writeFileSync(join(ROOT, ignored), 'x');
    try {
      expect(missingPaths(ROOT, 'README.md', `\`${ignored}\``)).toEqual([`README.md: \`${ignored}\`: no such file or folder`]);
      expect(brokenLinks(ROOT, 'README.md', `[log](${ignored})`)).toEqual([`README.md: link ${ignored}: no such file ${ignored}`]);
    } finally {
      rmSync(join(ROOT, ignored));
    }
  });

  it('finds an unknown script, an option a CLI does not declare and a choice it does not accept', () => {
    const md = [
      'Run `npm run dev`, `npm run devv` and `npm run evolve -- --steps 3 --quick --method sage --methods sage,rlvr`.',
      '```sh',
      'npm run evolve -- --steps 3 \\',
      '  --stepz 4 --method=mae --methods sage,ppo   # --not-this',
      'npm run evolve -- --method METHOD && npm run sft -- --lr 1e-3',
      'for m in sage rlvr; do npm run evolve -- --method $m; done',
      'npm run evolve -- --help',
      '```',
      'Inline across lines: `npm run evolve -- --steps 2',
      '--nope`.',
    ].join('\n');
    expect(badCommands('README.md', md, scripts, clis)).toEqual([
      'README.md: npm run devv: no such script in package.json',
      'README.md: npm run evolve -- --stepz: not an option of npm run evolve',
      'README.md: npm run evolve -- --method mae: not one of sage, rlvr',
      'README.md: npm run evolve -- --methods ppo: not one of sage, rlvr',
      'README.md: npm run sft -- --lr 1e-3: no declared options to check them against',
      'README.md: npm run evolve -- --nope: not an option of npm run evolve',
    ]);
  });
});
