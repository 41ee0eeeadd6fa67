import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHIPPED_SPLITS } from '../data/curriculum';
import { CEILING } from '../sage/compare';
import { compareCli } from './compare';
import { expectEveryOptionChecked, runCliProcess } from './testing';

describe('compare command line', () => {
  it('refuses a bad value of every option before any run', () => {
    expectEveryOptionChecked(compareCli);
    const r = runCliProcess('src/cli/compare.ts', ['--methods', 'rlvr,rlvr']);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toBe('compare: --methods: a method given twice');
    // The shipped ceiling's seeds extend the shipped seeds only.
    const other = runCliProcess('src/cli/compare.ts', ['--seeds', 'data/seeds/gsm8k-148.jsonl', '--methods', `rlvr,${CEILING.name}`]);
    expect(other.status).toBe(2);
    expect(other.stderr.trim().split('\n').at(-1)).toBe(`compare: --methods ${CEILING.name}: its seeds (--ceiling-seeds, default ${SHIPPED_SPLITS.ceiling.file}) extend the shipped seeds, not data/seeds/gsm8k-148.jsonl: give --ceiling-seeds too`);
    // An export onto the comparison's own folder would copy each record onto itself.
    const onto = runCliProcess('src/cli/compare.ts', ['--out', 'runs/compare', '--export', 'runs/./compare/', '--report-only']);
    expect(onto.status).toBe(2);
    expect(onto.stderr.trim().split('\n').at(-1)).toBe("compare: --export runs/./compare/: the comparison's own folder (--out): give another");
  });

  it('runs methods × seeds from the shipped checkpoint, reports paired intervals from the outcomes, keeps finished runs and resumes the rest', () => {
    expect(compareCli.options.repeats.default).toBe(5);
    const dir = mkdtempSync(join(tmpdir(), 'sage-compare-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ proposals: 2, trainProblems: 2, solverSamples: 2, difficultySamples: 2, maxNewTokens: { challenger: 24, planner: 16, solver: 12, critic: 8 } }));
    const out = join(dir, 'cmp');
    const common = ['--config', config, '--validation-limit', '4', '--eval-every', '1', '--repeats', '2', '--out', out];
    // RLVR and the ceiling keep the test short (the Solver alone); the summary of SAGE's extra figures is tested in src/sage/compare.test.ts.
    const r = runCliProcess('src/cli/compare.ts', [...common, '--methods', `rlvr,${CEILING.name}`, '--steps', '1']);
    expect(r.status, r.stderr).toBe(0);
    for (const [m, method, seeds] of [['rlvr', 'rlvr', SHIPPED_SPLITS.seeds.file], [CEILING.name, 'rlvr', SHIPPED_SPLITS.ceiling.file]] as const) {
      for (const s of [0, 1]) {
        const state = JSON.parse(readFileSync(join(out, m, `seed-${s}`, 'state.json'), 'utf8')) as { step: number };
        expect(state.step).toBe(1);
        expect(JSON.parse(readFileSync(join(out, m, `seed-${s}`, 'config.json'), 'utf8'))).toMatchObject({ method, seeds, model: 'data/models/tiny-arith', settings: { seed: s, patience: 2 } });
      }
    }
    const md = readFileSync(join(out, 'summary.md'), 'utf8');
    // The ceiling beside the method, said what it is; the bank's levels (RLVR's admits none).
    expect(md).toContain(`${CEILING.name}: ${CEILING.label}.`);
    expect(md).toMatch(new RegExp(`\\| ${CEILING.name} \\| 2 \\| 4 \\|`));
    expect(md).toContain('What the bank admitted, by level:');
    // Two seeds on the same 4 problems: start, final, and the gain with its paired interval.
    expect(md).toMatch(/\| rlvr \| 2 \| 4 \| [\d.]+ ± [\d.]+ \| [\d.]+ ± [\d.]+ \| [+-][\d.]+ \[[+-][\d.]+, [+-][\d.]+\]( inside the noise)? \|/);
    expect(md).not.toMatch(/\bSE\)/);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { method: string; final: { own: { n: number } }; paired: { own: { gain: { problems: number; seeds: number[] } } } }[];
    expect(summary.map((s) => s.method)).toEqual(['rlvr', CEILING.name]);
    expect(summary[0]!.final.own.n).toBe(2);
    expect(summary[0]!.paired.own.gain).toMatchObject({ problems: 4, seeds: [2] });
    expect(readFileSync(join(out, 'chart.svg'), 'utf8')).toContain('<polygon');
    expect(existsSync(join(out, 'rlvr', 'seed-0.log'))).toBe(true);

    // Given again with more steps: each run continues from its own step.
    const again = runCliProcess('src/cli/compare.ts', [...common, '--methods', 'rlvr', '--steps', '2']);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/\[rlvr seed 0\] resuming after step 1/);
    const state = JSON.parse(readFileSync(join(out, 'rlvr', 'seed-1', 'state.json'), 'utf8')) as { step: number };
    expect(state.step).toBe(2);
    // Resumed without --seed, a run keeps its own; only the longer comparison's patience replaces the recorded one.
    expect(JSON.parse(readFileSync(join(out, 'rlvr', 'seed-1', 'config.json'), 'utf8'))).toMatchObject({ settings: { seed: 1, patience: 3, evalEvery: 1, validationLimit: 4, proposals: 2 } });
    expect(again.stdout).toMatch(/\[rlvr seed 1\] --patience 3 replaces the recorded 2$/m);
    const done = runCliProcess('src/cli/compare.ts', [...common, '--methods', 'rlvr', '--steps', '2']);
    expect(done.stdout).toMatch(/\[rlvr seed 1\] done earlier \(2 steps\)/);
    // A report while runs are short of the steps (in flight, or stopped): those are left out and named, not reported at their last validation.
    const partial = runCliProcess('src/cli/compare.ts', [...common, '--methods', `rlvr,${CEILING.name}`, '--steps', '2', '--report-only']);
    expect(partial.status, partial.stderr).toBe(0);
    const partialMd = readFileSync(join(out, 'summary.md'), 'utf8');
    expect(partialMd).toContain(`Left out, not finished: ${CEILING.name} seed 0 (1 of 2 steps), ${CEILING.name} seed 1 (1 of 2 steps).`);
    expect((JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { method: string }[]).map((x) => x.method)).toEqual(['rlvr']);
    // Exported: the report and the finished runs' records and logs, no checkpoints; a comparison given the copy counts its runs as done.
    const exported = join(dir, 'exported');
    const exp = runCliProcess('src/cli/compare.ts', [...common, '--methods', `rlvr,${CEILING.name}`, '--steps', '2', '--report-only', '--export', exported]);
    expect(exp.status, exp.stderr).toBe(0);
    expect(readFileSync(join(exported, 'summary.md'), 'utf8')).toBe(partialMd);
    for (const s of [0, 1]) {
      expect(readdirSync(join(exported, 'rlvr', `seed-${s}`)).sort()).toEqual(readdirSync(join(out, 'rlvr', `seed-${s}`)).filter((f) => !statSync(join(out, 'rlvr', `seed-${s}`, f)).isDirectory()).sort());
      expect(readFileSync(join(exported, 'rlvr', `seed-${s}`, 'outcomes.jsonl'), 'utf8')).toBe(readFileSync(join(out, 'rlvr', `seed-${s}`, 'outcomes.jsonl'), 'utf8'));
      expect(existsSync(join(exported, 'rlvr', `seed-${s}.log`))).toBe(true);
    }
    expect(existsSync(join(exported, CEILING.name))).toBe(false);
    const fromCopy = runCliProcess('src/cli/compare.ts', [...common.slice(0, -1), exported, '--methods', 'rlvr', '--steps', '2']);
    expect(fromCopy.status, fromCopy.stderr).toBe(0);
    expect(fromCopy.stdout).toMatch(/\[rlvr seed 0\] done earlier \(2 steps\)[^]*\[rlvr seed 1\] done earlier \(2 steps\)/);
    const none = runCliProcess('src/cli/compare.ts', [...common, '--methods', CEILING.name, '--steps', '2', '--report-only']);
    expect(none.stdout.trim().split('\n').at(-1)).toBe(`no run in ${out} has made its 2 steps yet`);
    // A run recorded before per-problem outcomes were: reported, with no paired interval, and said so.
    rmSync(join(out, 'rlvr', 'seed-1', 'outcomes.jsonl'));
    const old = runCliProcess('src/cli/compare.ts', [...common, '--methods', 'rlvr', '--steps', '2', '--report-only']);
    expect(old.status, old.stderr).toBe(0);
    expect(readFileSync(join(out, 'summary.md'), 'utf8')).toContain('rlvr: no per-problem outcomes');
  });
});
