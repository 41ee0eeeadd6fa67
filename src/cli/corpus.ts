/**
 * Writes the arithmetic pretraining corpus, one document a line, reproducibly from a seed:
 *   npm run corpus -- --out corpus.txt --tokens 6000000 --seed 0
 * No document states an expression of the `--exclude` files (by default the shipped held-out
 * split), whole or as a part. Prints the file's SHA-256, so a regenerated corpus can be
 * checked against the one a model was trained on.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { canonicalExpressions, documentTokens, generateCorpus } from '../data/arithmeticCorpus';
import { SHIPPED_SPLITS } from '../data/curriculum';
import { readProblemFile } from '../data/nodeFile';
import { isMain, runCli, UsageError, type OptionValues } from './options';

export const corpusCli = {
  name: 'corpus',
  summary: 'Generates the arithmetic pretraining corpus (raw text, one document a line), reproducibly from a seed.',
  options: {
    out: { type: 'string', arg: 'FILE', help: 'output text file (required)' },
    tokens: { type: 'int', min: 1, default: 6_000_000, help: 'tokens to write, counted as a byte-level tokenizer does (BOS, bytes, EOS)' },
    seed: { type: 'int', min: 0, default: 0, help: 'random seed' },
    exclude: {
      type: 'string',
      multiple: true,
      exists: 'file',
      arg: 'FILE',
      help: `problem files whose expressions no document states, whole or as a part (default ${SHIPPED_SPLITS.validation.file})`,
    },
  },
  notes: ['example: npm run corpus -- --out /tmp/corpus.txt --tokens 6000000 --seed 0'],
} as const;

/** The canonical expressions of every problem in the files (a curriculum problem, or a statement in a curriculum style). */
async function heldOutExpressions(files: readonly string[]): Promise<Set<string>> {
  const problems = (await Promise.all(files.map((f) => readProblemFile(f)))).flatMap((r) => r.problems);
  return canonicalExpressions(problems);
}

async function main(o: OptionValues<typeof corpusCli.options>): Promise<void> {
  if (!o.out) throw new UsageError('--out is required');
  const files = o.exclude.length ? o.exclude : [SHIPPED_SPLITS.validation.file];
  const heldOut = await heldOutExpressions(files);
  const docs = generateCorpus(o.seed, o.tokens, heldOut);
  const text = docs.map((d) => d.text).join('\n') + '\n';
  writeFileSync(o.out, text);
  const tokens = docs.reduce((n, d) => n + documentTokens(d.text), 0);
  const sha = createHash('sha256').update(text).digest('hex');
  console.log(`wrote ${docs.length} documents, ${tokens} tokens, to ${o.out}; ${heldOut.size} held-out expressions excluded (${files.join(', ')}); sha256 ${sha}`);
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(corpusCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
