import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHIPPED_SPLITS } from '../data/curriculum';
import { CEILING } from '../research/compare';
import { PILOT_BAR, type ComparisonPlan, type PilotRecord } from '../research/namedLevels';
import { compareCli, prepare } from './compare';
import { SHIPPED_MODEL } from './runFiles';
import { parseCommandLine, UsageError } from './options';
import { expectEveryOptionChecked, runCliProcess } from './testUtils';

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

  it('refuses a pilot, a primary or named levels it cannot honour, each in one line before any run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-compare-plan-'));
    // In this process (a process start is seconds): what the command line would print after "compare: ".
    const refused = async (args: string[]) => {
      try {
        const line = parseCommandLine(compareCli, ['--out', join(dir, 'cmp'), ...args])!;
        await prepare(line.values, line.given);
      } catch (e) {
        expect(e).toBeInstanceOf(UsageError);
        expect((e as Error).message).not.toContain('\n');
        return `compare: ${(e as Error).message}`;
      }
      throw new Error(`accepted ${args.join(' ')}`);
    };
    expect(await refused(['--pilot', '--methods', 'sage'])).toBe(`compare: --methods: not with --pilot (a pilot runs rlvr and ${CEILING.name} and reports ${CEILING.name} − rlvr)`);
    expect(await refused(['--pilot', '--report-only'])).toBe(`compare: --report-only: no pilot in ${join(dir, 'cmp')} (its pilot.json is written when its runs start)`);
    expect(await refused(['--primary', 'sage:mae', '--methods', 'sage,rlvr'])).toBe('compare: --primary sage:mae: no method mae (one of sage, rlvr)');
    expect(await refused(['--primary', 'rlvr'])).toBe('compare: --primary rlvr: expected METHOD:BASELINE, e.g. sage-verified-problems:rlvr');
    expect(await refused(['--levels', '3,9'])).toBe(`compare: --levels 3,9: no held-out problem of level 9 in ${SHIPPED_SPLITS.validation.file}`);
    expect(await refused(['--levels', '2,3'])).toBe(`compare: --levels 2,3: the seeds (${SHIPPED_SPLITS.seeds.file}) show level 2: name held-out levels they do not`);
    expect(await refused(['--resamples', '2000'])).toBe('compare: --resamples must be an integer ≥ 10000 (got "2000")');
    expect(await refused(['--primary', 'sage:rlvr', '--report-only'])).toBe(`compare: --primary sage:rlvr: a primary is named with a comparison's first command, before its runs (${join(dir, 'cmp')} has no plan.json)`);
    // A pilot record: none there, unfinished, of another checkpoint, on the comparison's seeds, on other levels.
    const pilot = join(dir, 'pilot');
    mkdirSync(pilot);
    expect(await refused(['--pilot-record', pilot])).toBe(`compare: --pilot-record ${pilot}: no pilot record there (pilot.json, written by npm run compare -- --pilot)`);
    const interval = { estimate: 0.12, lo: 0.05, hi: 0.19, se: 0.03, insideNoise: false, problems: 240, seeds: [2, 2], seedsResampled: true, seedsPaired: true, resamples: 10_000 };
    const record: PilotRecord = {
      kind: 'pilot', levels: ['3', '4', '5'], bar: PILOT_BAR.text, model: SHIPPED_MODEL, steps: 40, seeds: [1000, 1001], methods: ['rlvr', CEILING.name],
      seedProblems: SHIPPED_SPLITS.seeds.file, ceilingSeeds: SHIPPED_SPLITS.ceiling.file, validation: SHIPPED_SPLITS.validation.file, validationLimit: 400, resamples: 10_000, startedAt: 'T',
      result: { clears: true, reason: 'r', pooled: interval, perLevel: {}, finishedAt: 'T' },
    };
    const write = (r: PilotRecord) => writeFileSync(join(pilot, 'pilot.json'), JSON.stringify(r));
    write({ ...record, result: null });
    expect(await refused(['--pilot-record', pilot])).toBe(`compare: --pilot-record ${pilot}: the pilot has no verdict yet (its runs are not finished)`);
    write({ ...record, model: 'data/models/other' });
    expect(await refused(['--pilot-record', pilot])).toBe(`compare: --pilot-record ${pilot}: the pilot ran from data/models/other, this comparison from ${SHIPPED_MODEL}`);
    write({ ...record, seeds: [3, 4] });
    expect(await refused(['--pilot-record', pilot])).toBe(`compare: --pilot-record ${pilot}: seeds 3,4 were the pilot's: a comparison may not reuse them`);
    write(record);
    expect(await refused(['--pilot-record', pilot, '--levels', '4,5'])).toBe('compare: --levels 4,5: the pilot named 3,4,5 before its runs');
    // A plan recorded at a comparison's start: its primary is not renamed, nor added after the runs.
    const cmp = join(dir, 'cmp');
    mkdirSync(cmp);
    const plan: ComparisonPlan = { kind: 'comparison', primary: 'sage:rlvr', levels: ['3', '4', '5'], pilot: null, methods: ['sage', 'rlvr'], seeds: [0], steps: 1, model: SHIPPED_MODEL, resamples: 10_000, recordedAt: 'T', runsBefore: 0 };
    writeFileSync(join(cmp, 'plan.json'), JSON.stringify(plan));
    expect(await refused(['--primary', 'rlvr:sage', '--report-only'])).toBe(`compare: --primary rlvr:sage: this comparison named sage:rlvr at its start (${join(cmp, 'plan.json')})`);
    expect(await refused(['--levels', '3', '--report-only'])).toBe(`compare: --levels 3: the comparison in ${cmp} named 3,4,5 before its runs`);
    writeFileSync(join(cmp, 'plan.json'), JSON.stringify({ ...plan, primary: null }));
    expect(await refused(['--primary', 'sage:rlvr', '--report-only'])).toBe(`compare: --primary sage:rlvr: this comparison started without one (${join(cmp, 'plan.json')}): a primary is named before the runs; start another --out`);
  });

  it('runs a pilot on seeds of its own, records its levels before the runs and its verdict after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-pilot-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ proposals: 2, trainProblems: 2, solverSamples: 2, difficultySamples: 2, maxNewTokens: { challenger: 24, planner: 16, solver: 12, critic: 8 } }));
    const pilot = join(dir, 'pilot');
    // 10 held-out problems: two of each level, so the named levels 3 and 4 have four. Both runs at once (--jobs 2).
    const r = runCliProcess('src/cli/compare.ts', ['--pilot', '--config', config, '--validation-limit', '10', '--eval-every', '1', '--repeats', '1', '--steps', '1', '--levels', '3,4', '--out', pilot, '--jobs', '2']);
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(pilot, 'rlvr', 'seed-1000', 'state.json'))).toBe(true);
    expect(existsSync(join(pilot, CEILING.name, 'seed-1000', 'state.json'))).toBe(true);
    expect(existsSync(join(pilot, 'rlvr', 'seed-0'))).toBe(false);
    const record = JSON.parse(readFileSync(join(pilot, 'pilot.json'), 'utf8')) as PilotRecord;
    expect(record).toMatchObject({ kind: 'pilot', levels: ['3', '4'], seeds: [1000], steps: 1, bar: PILOT_BAR.text, model: SHIPPED_MODEL, resamples: 10_000 });
    // The verdict is written either way; one seed and four problems cannot clear the bar with an interval above 0 unless the ceiling is right on all four and RLVR on none.
    expect(record.result).not.toBeNull();
    expect(record.result!.pooled).toMatchObject({ problems: 4, seeds: [1, 1] });
    expect(record.result!.clears).toBe(record.result!.pooled!.estimate >= 0.1 && record.result!.pooled!.lo > 0);
    const md = readFileSync(join(pilot, 'summary.md'), 'utf8');
    expect(md).toContain(`Pilot: ${CEILING.name} − rlvr, the Solver alone, final after 1 step, seed 1000, on the levels 3-4 named at its start`);
    expect(md).toContain(record.result!.clears ? '**Clears the bar**' : '**Fails the bar**');
    expect(md.indexOf('**')).toBeLessThan(md.indexOf('## Exploratory'));
    // Given again with other levels: refused, the levels were named before the runs.
    const line = parseCommandLine(compareCli, ['--pilot', '--levels', '3', '--out', pilot, '--report-only'])!;
    await expect(prepare(line.values, line.given)).rejects.toThrow(`--levels 3: the pilot in ${pilot} named 3,4 before its runs`);
  });

  it('runs methods × seeds from the shipped checkpoint, reports paired intervals from the outcomes, keeps finished runs and resumes the rest', () => {
    expect(compareCli.options.repeats.default).toBe(5);
    const dir = mkdtempSync(join(tmpdir(), 'sage-compare-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ proposals: 2, trainProblems: 2, solverSamples: 2, difficultySamples: 2, maxNewTokens: { challenger: 24, planner: 16, solver: 12, critic: 8 } }));
    const out = join(dir, 'cmp');
    const common = ['--config', config, '--validation-limit', '4', '--eval-every', '1', '--repeats', '2', '--out', out];
    // The pilot it rests on (its record as a pilot writes it; a pilot's own run is the test above).
    const pilot = join(dir, 'pilot');
    mkdirSync(pilot);
    const gap = { estimate: 0.12, lo: 0.05, hi: 0.19, se: 0.03, insideNoise: false, problems: 240, seeds: [2, 2], seedsResampled: true, seedsPaired: true, resamples: 10_000 };
    writeFileSync(join(pilot, 'pilot.json'), JSON.stringify({
      kind: 'pilot', levels: ['3', '4'], bar: PILOT_BAR.text, model: SHIPPED_MODEL, steps: 40, seeds: [1000, 1001], methods: ['rlvr', CEILING.name],
      seedProblems: SHIPPED_SPLITS.seeds.file, ceilingSeeds: SHIPPED_SPLITS.ceiling.file, validation: SHIPPED_SPLITS.validation.file, validationLimit: 400, resamples: 10_000, startedAt: 'T',
      result: { clears: true, reason: '+12.0 points pooled, the interval [+5.0, +19.0] above 0', pooled: gap, perLevel: {}, finishedAt: 'T' },
    } satisfies PilotRecord));
    // RLVR and the ceiling keep the test short (the Solver alone); the summary of SAGE's extra figures is tested in src/research/compare.test.ts.
    const r = runCliProcess('src/cli/compare.ts', [...common, '--methods', `rlvr,${CEILING.name}`, '--steps', '1', '--primary', `${CEILING.name}:rlvr`, '--pilot-record', pilot]);
    expect(r.status, r.stderr).toBe(0);
    // Named before the runs: the primary figure, the levels (the pilot's), the pilot; and given first in the report.
    expect(JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8'))).toMatchObject({ primary: `${CEILING.name}:rlvr`, levels: ['3', '4'], runsBefore: 0, seeds: [0, 1], pilot: { dir: pilot, clears: true, seeds: [1000, 1001] } });
    const first = readFileSync(join(out, 'summary.md'), 'utf8');
    expect(first).toContain(`**Pilot** (\`${pilot}\`): cleared the bar (${PILOT_BAR.text}): +12.0 points pooled, the interval [+5.0, +19.0] above 0;`);
    expect(first).toMatch(new RegExp(`\\*\\*Primary comparison\\*\\*, named before the runs started \\([^)]+\\): ${CEILING.name} − rlvr, the Solver alone, final, levels 3-4 pooled: [+-][\\d.]+ \\[[^\\]]+\\](, inside the noise)? \\(2 problems, 2 and 2 seeds`));
    expect(first.indexOf('**Primary comparison**')).toBeLessThan(first.indexOf('## Exploratory'));
    expect(first.indexOf('## Exploratory')).toBeLessThan(first.indexOf('| method |'));
    expect(JSON.parse(readFileSync(join(out, 'primary.json'), 'utf8'))).toMatchObject({ primary: `${CEILING.name}:rlvr`, levels: ['3', '4'], pooled: { problems: 2, seeds: [2, 2] } });
    for (const [m, method, seeds] of [['rlvr', 'rlvr', SHIPPED_SPLITS.seeds.file], [CEILING.name, 'rlvr', SHIPPED_SPLITS.ceiling.file]] as const) {
      for (const s of [0, 1]) {
        const state = JSON.parse(readFileSync(join(out, m, `seed-${s}`, 'state.json'), 'utf8')) as { step: number };
        expect(state.step).toBe(1);
        expect(JSON.parse(readFileSync(join(out, m, `seed-${s}`, 'config.json'), 'utf8'))).toMatchObject({ method, seeds, model: SHIPPED_MODEL, settings: { seed: s, patience: 2 } });
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
    // Each run's provenance from its config.json: one process, tuned on this machine (a date beside the time where the runs span midnight).
    const clock = '(\\d{4}-\\d\\d-\\d\\d )?\\d\\d:\\d\\d';
    expect(md.indexOf('## Runs')).toBeGreaterThan(md.indexOf('| method |'));
    for (const m of ['rlvr', CEILING.name]) for (const s of [0, 1]) expect(md).toMatch(new RegExp(`\\| \`${m}\` seed ${s} \\| [^|]+ \\| ${clock} \\| ${clock} \\| \\d+ \\| 1 \\| tuned \\|`));
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
