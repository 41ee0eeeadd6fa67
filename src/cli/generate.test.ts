import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testRuntime } from '../gpu/testUtils';
import { exportCheckpoint } from '../model/checkpointExport';
import { ByteTokenizer } from '../model/tokenizer';
import { MEMORISE_PAIRS, memorisationRun } from '../train/memorise';
import { generateCli, run as generate } from './generate';
import { expectEveryOptionChecked, runCliInProcess, runCliProcess } from './testUtils';

/** A checkpoint folder of one tiny layer fine-tuned to memorise MEMORISE_PAIRS. */
async function memorisedCheckpoint(dir: string): Promise<string> {
  const rt = await testRuntime();
  const { model, trainer } = memorisationRun(rt, 40, false, 1);
  for (let i = 0; i < 40; i++) await trainer.step();
  trainer.destroy();
  const files = exportCheckpoint(model.config, await model.readParams(), new ByteTokenizer().files());
  model.destroy();
  const out = join(dir, 'ckpt');
  mkdirSync(out);
  for (const [name, bytes] of files) writeFileSync(join(out, name), bytes);
  return out;
}

describe('generate command line', () => {
  it('a fine-tuned checkpoint writes its answers, prompts read from JSONL, one JSON line per prompt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-generate-'));
    const model = await memorisedCheckpoint(dir);
    const prompts = join(dir, 'prompts.jsonl');
    writeFileSync(
      prompts,
      [
        JSON.stringify({ prompt: MEMORISE_PAIRS[0]!.prompt }),
        'not json',
        JSON.stringify({ question: MEMORISE_PAIRS[1]!.prompt, answer: MEMORISE_PAIRS[1]!.response }),
        JSON.stringify({ nothing: 1 }),
        JSON.stringify({ prompt: MEMORISE_PAIRS[2]!.prompt }),
      ].join('\n'),
    );
    const r = await runCliInProcess(generate, ['--model', model, '--prompts', prompts, '--temperature', '0', '--max-new', '12', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/prompts\.jsonl:2: skipped: not valid JSON/);
    expect(r.stderr).toMatch(/prompts\.jsonl:4: skipped: no prompt field/);
    const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { text: string; finishReason: string; reference?: string; modelLogprobs: number[] });
    expect(rows.map((x) => x.text)).toEqual([0, 1, 2].map((i) => MEMORISE_PAIRS[i]!.response));
    expect(rows.map((x) => x.finishReason)).toEqual(['eos', 'eos', 'eos']);
    expect(rows[1]!.reference).toBe(MEMORISE_PAIRS[1]!.response);
    expect(rows.every((x) => x.modelLogprobs.every((lp) => lp <= 0))).toBe(true);
    // An f16 KV cache gives the memorised answers too (their margins far above a half's rounding).
    const half = await runCliInProcess(generate, ['--model', model, '--prompts', prompts, '--temperature', '0', '--max-new', '12', '--json', '--kv-cache', 'f16']);
    expect(half.status, half.stderr).toBe(0);
    expect(half.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text)).toEqual(rows.map((x) => x.text));

    const text = await runCliInProcess(generate, ['--prompt', 'Q: 2+3=', '--max-new', '5', '--top-k', '3', '--stop', 'x,y']);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/tiny · 1\.02M params · 1 prompt/);
    expect(text.stdout).toMatch(/\[1\] (length · 5|eos|stop) .*\nprompt: Q: 2\+3=\ncompletion: /);
  });

  it('refuses a bad value of every option before any GPU work', () => {
    expectEveryOptionChecked(generateCli);
  });

  it('prints one line naming a bad option or a missing prompt, with exit code 2', () => {
    const bad = runCliProcess('src/cli/generate.ts', ['--prompt', 'x', '--top-p', '1.5']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('generate: --top-p must be a number > 0 and ≤ 1 (got "1.5")');
    const none = runCliProcess('src/cli/generate.ts', []);
    expect(none.status).toBe(2);
    expect(none.stderr).toBe('generate: give --prompt TEXT or --prompts FILE (one of them)');
    const help = runCliProcess('src/cli/generate.ts', ['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--max-new N +new tokens per prompt at most \(default 64\)/);
  });

  it('a GPU command in a session without XDG_RUNTIME_DIR prints nothing the user did not cause', () => {
    // As `npm run evolve` and the other GPU commands start: through the Dawn environment, here from a headless session.
    const env = { ...process.env };
    delete env.XDG_RUNTIME_DIR;
    const r = spawnSync(process.execPath, ['scripts/node-gpu.mjs', 'src/cli/generate.ts', '--prompt', 'Q: 2+3=', '--max-new', '2'], { encoding: 'utf8', env, timeout: 14 * 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/completion: /);
    const printed = (r.stderr + r.stdout).split('\n').filter((l) => !/^npm warn/.test(l));
    expect(printed.filter((l) => /XDG_RUNTIME_DIR|error/i.test(l))).toEqual([]);
  });
});
