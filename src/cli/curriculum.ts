/**
 * Writes curriculum problems as JSONL:
 *   npm run curriculum -- --levels 1,2 --count 5000 --out train.jsonl
 * `--exclude` names files whose problems' content must not recur (a validation split: no
 * expression of theirs, in any wording), so a training set made here keeps held-out problems held out. `--shipped` rewrites the seed,
 * validation and ceiling files the repository ships.
 */
import { writeFileSync } from 'node:fs';
import { generateSet, LEVELS, shippedSplits, SHIPPED_SPLITS, type CurriculumRecord, type Level } from '../data/curriculum';
import { readProblemFile } from '../data/nodeFile';
import { expressionOf } from '../data/content';
import { isMain, runCli, UsageError, type OptionValues } from './options';

export const curriculumCli = {
  name: 'curriculum',
  summary: 'Generates problems of the demo curriculum (levels 1-5) as JSONL, reproducibly from a seed.',
  options: {
    levels: { type: 'string', multiple: true, choices: LEVELS.map(String), arg: 'L,L', help: 'levels to generate (default 1,2)' },
    count: { type: 'int', min: 1, default: 1000, help: 'problems per level' },
    seed: { type: 'int', min: 0, default: 100, help: 'random seed' },
    exclude: { type: 'string', multiple: true, exists: 'file', arg: 'FILE', help: 'JSONL files whose expressions are left out (a curriculum problem, or a statement in a curriculum style)' },
    out: { type: 'string', arg: 'FILE', help: 'output JSONL file' },
    shipped: { type: 'flag', help: `rewrite ${SHIPPED_SPLITS.seeds.file}, ${SHIPPED_SPLITS.validation.file} and ${SHIPPED_SPLITS.ceiling.file}` },
  },
  notes: ['example: npm run curriculum -- --levels 1,2 --count 4000 --exclude data/validation/curriculum-1000.jsonl --out train.jsonl'],
} as const;

const toJsonl = (records: CurriculumRecord[]) => records.map((r) => JSON.stringify(r)).join('\n') + '\n';

async function main(o: OptionValues<typeof curriculumCli.options>): Promise<void> {
  if (o.shipped) {
    if (o.out || o.levels.length || o.exclude.length) throw new UsageError('--shipped takes no --out, --levels or --exclude');
    const { seeds, validation, ceiling } = shippedSplits();
    writeFileSync(SHIPPED_SPLITS.seeds.file, toJsonl(seeds));
    writeFileSync(SHIPPED_SPLITS.validation.file, toJsonl(validation));
    writeFileSync(SHIPPED_SPLITS.ceiling.file, toJsonl(ceiling));
    console.log(`wrote ${seeds.length} seeds, ${validation.length} validation problems and the ceiling's ${ceiling.length} seeds`);
    return;
  }
  if (!o.out) throw new UsageError('--out is required (or --shipped)');
  const exclude = new Set<string>();
  for (const file of o.exclude) {
    const { problems } = await readProblemFile(file);
    for (const p of problems) {
      const e = expressionOf(p);
      if (e) exclude.add(e);
    }
  }
  const levels = (o.levels.length ? o.levels : ['1', '2']).map(Number) as Level[];
  const records = generateSet(Object.fromEntries(levels.map((l) => [l, o.count])), o.seed, { exclude });
  writeFileSync(o.out, toJsonl(records));
  console.log(`wrote ${records.length} problems (levels ${levels.join(', ')}) to ${o.out}, ${exclude.size} expressions excluded`);
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(curriculumCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
