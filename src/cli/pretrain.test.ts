import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { holdOutDocuments } from '../data/corpus';
import { freshSeed } from '../gpu/testUtils';
import { importCheckpoint } from '../model/checkpoint';
import { rng } from '../util/random';
import { PRETRAIN_LOG, pretrainCli, run as pretrain } from './pretrain';
import { readCheckpointFolder } from './runFiles';
import { expectEveryOptionChecked, runCliInProcess } from './testUtils';

const run = (args: string[]) => runCliInProcess(pretrain, args);

/** Arithmetic documents in raw text, some repeated, a few longer than a row. */
function corpus(seed: number, n: number): string[] {
  const random = rng(seed);
  const int = (k: number) => Math.floor(random() * k);
  return Array.from({ length: n }, (_, i) => {
    const [a, b] = [int(20), int(20)];
    if (i % 7 === 6) return Array.from({ length: 4 }, () => `${int(50)} plus ${int(50)} makes a sum`).join('; ') + '.';
    return i % 2 ? `${a}+${b}=${a + b}` : `${a} times ${b} is ${a * b}.`;
  });
}

const lines = (dir: string) => readFileSync(join(dir, PRETRAIN_LOG), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number | null>);
const sameFile = (a: string, b: string, file: string) => readFileSync(join(a, file)).equals(readFileSync(join(b, file)));

describe('pretrain command line', () => {
  it('a run cut after step k and resumed matches the run never cut; the held-out documents are never trained on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-pretrain-'));
    const seed = freshSeed();
    const documents = corpus(seed, 40);
    const file = join(dir, 'corpus.txt');
    writeFileSync(file, documents.join('\n') + '\n');
    const common = ['--batch', '2', '--seq', '32', '--accum', '2', '--steps', '5', '--warmup', '2', '--lr', '3e-3', '--seed', String(seed), '--log-every', '1', '--eval-every', '2'];
    const whole = join(dir, 'whole');
    const r = await run(['--corpus', file, '--holdout', '0.25', ...common, '--out', whole]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/40 documents \(text, one a line\) · trained on \d+, \d+ tokens · \d+ held out \(0\.25 of the distinct documents\)/);
    expect(r.stdout).toMatch(/step +5\/5 +loss \d/);
    expect(r.stdout).toMatch(/held-out loss \d\.\d+ at step 4/);
    const log = lines(whole);
    expect(log.map((l) => l.step)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(log.filter((l) => l.heldOutLoss !== null).map((l) => l.step)).toEqual([0, 2, 4, 5]);
    expect(log[5]!.heldOutLoss!).toBeLessThan(log[0]!.heldOutLoss!);
    expect(log[5]!.tokens).toBeGreaterThan(log[1]!.tokens!);
    const ckpt = importCheckpoint(readCheckpointFolder(whole));
    expect(ckpt.optimizer?.step).toBe(5);
    expect(ckpt.runState).toMatchObject({ kind: 'pretrain', settings: { steps: 5, seqLen: 32, packing: true }, heldOut: { holdout: 0.25 } });

    // Cut after step 2 (a checkpoint there), then resumed with nothing but the folder.
    const cut = join(dir, 'cut');
    const first = await run(['--corpus', file, '--holdout', '0.25', ...common, '--out', cut, '--stop-at', '2']);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/stopped at step 2 of 5 .*: npm run pretrain -- --resume .*cut continues it/);
    const refused = await run(['--resume', cut, '--lr', '1e-2']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/^pretrain: --resume continues the run as it began \(its settings in .*trainer_state\.json\): --lr does not apply$/);
    const resumed = await run(['--resume', cut]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resuming at step 2 of 5 \(epoch \d+, batch \d+; \d+ tokens trained\)/);
    expect(lines(cut)).toEqual(log);
    for (const f of ['model.safetensors', 'optimizer.safetensors']) expect(sameFile(cut, whole, f), `${f}, seed ${seed}`).toBe(true);

    // The same training set given apart: the corpus's other documents, the held-out ones as the
    // eval corpus (and left out of training though the corpus holds them): the same run.
    const { heldOut } = holdOutDocuments(documents, 0.25, seed);
    const evalFile = join(dir, 'held.txt');
    writeFileSync(evalFile, [...new Set(heldOut)].join('\n'));
    const apart = join(dir, 'apart');
    const b = await run(['--corpus', file, '--eval-corpus', evalFile, ...common, '--out', apart]);
    expect(b.status, b.stderr).toBe(0);
    expect(b.stdout).toContain(`${heldOut.length} corpus documents equal to one left out of training`);
    const apartLog = lines(apart);
    // The held-out loss is a mean over documents: each distinct one counted once here, every copy there.
    expect(apartLog.map(({ heldOutLoss: _, ...l }) => l)).toEqual(log.map(({ heldOutLoss: _, ...l }) => l));
    for (const f of ['model.safetensors', 'optimizer.safetensors']) expect(sameFile(apart, whole, f), `${f}, seed ${seed}`).toBe(true);
    if (heldOut.length === new Set(heldOut).size) expect(apartLog).toEqual(log);
  });

  it('refuses bad options, an empty or unreadable corpus and a folder that is not a run, each in one line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-pretrain-'));
    const empty = join(dir, 'empty.txt');
    writeFileSync(empty, '\n  \n\n');
    const zip = join(dir, 'corpus.zip');
    writeFileSync(zip, new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]));
    const jsonl = join(dir, 'bad.jsonl');
    writeFileSync(jsonl, '{"body": "x"}\n{"text": ""}\n');
    const sft = join(dir, 'sft');
    mkdirSync(sft);
    writeFileSync(join(sft, 'trainer_state.json'), JSON.stringify({ global_step: 3, run_state: { kind: 'sft' } }));
    const text = join(dir, 'ok.txt');
    writeFileSync(text, '1+1=2\n2+2=4\n');
    const cases: [string[], number, string | RegExp][] = [
      [[], 2, 'pretrain: --corpus FILE is required (or --resume DIR)'],
      [['--corpus', empty], 1, `pretrain: no documents in ${empty} (the corpus is empty)`],
      [['--corpus', zip], 1, `pretrain: ${zip}: a zip archive, not a text file`],
      [['--corpus', jsonl], 1, `pretrain: no documents in ${jsonl} (the corpus is empty)`],
      [['--corpus', text, '--holdout', '0.1', '--eval-corpus', text], 2, 'pretrain: --holdout and --eval-corpus are exclusive (the held-out documents come from one or the other)'],
      [['--corpus', text, '--holdout', '0.1'], 2, 'pretrain: --holdout: holding out 0.1 of 2 distinct documents leaves none held out'],
      [['--corpus', text, '--eval-corpus', text], 2, `pretrain: every document of the corpus is also in ${text}: nothing left to train on`],
      [['--corpus', text, '--from', dir, '--preset', 'tiny'], 2, 'pretrain: --preset and --from are exclusive (a preset starts from scratch; --from continues a model)'],
      [['--corpus', text, '--stop-at', '3'], 2, 'pretrain: --stop-at needs --out (where the run is kept to resume)'],
      [['--resume', dir], 2, `pretrain: ${dir} has no checkpoint to resume from (no trainer_state.json)`],
      [['--resume', sft], 2, `pretrain: ${sft} is not a pretraining run's checkpoint (--from ${sft} continues its model with a fresh schedule)`],
      [['--corpus', text, '--steps', '0'], 2, 'pretrain: --steps must be an integer ≥ 1 (got "0")'],
    ];
    for (const [args, status, message] of cases) {
      const r = await run(args);
      expect(r.status, args.join(' ')).toBe(status);
      expect(r.stderr.split('\n'), args.join(' ')).toHaveLength(jsonl === args[1] ? 3 : 1);
      expect(r.stderr.split('\n').at(-1)).toEqual(message);
    }
    const help = await run(['--help']);
    expect(help.stdout).toMatch(/--corpus FILE +the documents/);
    expectEveryOptionChecked(pretrainCli);
  });
});
