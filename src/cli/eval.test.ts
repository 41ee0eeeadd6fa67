import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ProblemOutcome, ValidationOutcomes, ValidationResult } from '../sage/validation';
import { tally, type SampledOutcome, type SampledTally } from '../sage/sampledValidation';
import { evalCli, run as evaluate } from './eval';
import { SHIPPED_MODEL } from './runFiles';
import { expectEveryOptionChecked, runCliInProcess, runCliProcess } from './testUtils';

const VALIDATION = 'data/validation/curriculum-1000.jsonl';

describe('eval command line', () => {
  it('refuses a bad value of every option before any GPU work', () => {
    expectEveryOptionChecked(evalCli);
  });
});

describe('eval by form and by sampling', () => {
  it('refuses the corpus form where no held-out problem has an expression, before any GPU work', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'sage-eval-')), 'eval');
    const r = runCliProcess('src/cli/eval.ts', ['--validation', 'data/validation/gsm8k-test-1319.jsonl', '--limit', '3', '--corpus-form', '--out', out]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('eval: --corpus-form: none of the 3 held-out problems has an arithmetic expression to write as `EXPR =` (curriculum problems have one)');
  });
});

describe('eval on Dawn', () => {
  it('samples each problem N times in the task format and the corpus form: the greedy task verdicts are the validation\'s, and the tallies are those of samples.jsonl', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-eval-'));
    const lines = readFileSync(VALIDATION, 'utf8').split('\n');
    const validation = join(dir, 'validation.jsonl');
    writeFileSync(validation, [0, 200, 400].map((i) => lines[i]).join('\n'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ maxNewTokens: { planner: 8, solver: 16, critic: 8 } }));
    const out = join(dir, 'eval');
    const r = await runCliInProcess(evaluate, ['--validation', validation, '--method', 'rlvr', '--config', config, '--samples', '3', '--temperature', '1', '--corpus-form', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    const solver = (JSON.parse(readFileSync(join(out, 'outcomes.jsonl'), 'utf8').split('\n')[0]!) as ValidationOutcomes).problems;
    const forms = readFileSync(join(out, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { form: string; samples: number; problems: SampledOutcome[] });
    expect(forms.map((f) => [f.form, f.samples])).toEqual([['task', 3], ['corpus', 3]]);
    expect(forms[0]!.problems.map((p) => [p.id, p.greedy])).toEqual(solver.map((p) => [p.id, p.verdict]));
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { samples: number; forms: Record<string, { all: SampledTally; perLevel: Record<string, SampledTally> }> };
    expect(summary.samples).toBe(3);
    for (const f of forms) {
      expect(f.problems.every((p) => p.n === 3 && p.c >= 0 && p.c <= 3)).toBe(true);
      expect(summary.forms[f.form]!.all).toEqual(tally(f.problems, 3));
      expect(Object.keys(summary.forms[f.form]!.perLevel)).toEqual(['1', '2', '3']);
      const printed = r.stdout.split('\n').find((l) => l.startsWith(f.form) && /pass@3/.test(l))!;
      const all = f.problems.reduce((s, p) => s + (p.c > 0 ? 1 : 0), 0) / 3;
      expect(printed.split(/\s{2,}/)[2]).toBe(`${(100 * all).toFixed(1)}%`);
    }
  });


  it("scores the shipped checkpoint with the prompts it records: its outcomes file agrees with the summary and the printed table, and an evaluation's folder is not written over", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-eval-'));
    // Levels 1, 1, 2, 2, 3: four problems taken in turn from each level are L1, L2, L3, L1.
    const lines = readFileSync(VALIDATION, 'utf8').split('\n');
    const validation = join(dir, 'validation.jsonl');
    writeFileSync(validation, [0, 1, 200, 201, 400].map((i) => lines[i]).join('\n'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ maxNewTokens: { planner: 24, solver: 16, critic: 8 } }));
    const out = join(dir, 'eval');
    const args = ['--validation', validation, '--limit', '4', '--config', config, '--out', out];
    const r = await runCliInProcess(evaluate, args);
    expect(r.status, r.stderr).toBe(0);
    // No --templates: the shipped checkpoint's record (compact), not instruct.
    expect(r.stdout).toMatch(new RegExp(`^model ${SHIPPED_MODEL} · [\\d.]+M params · compact prompts · SAGE: .* · 4 of 5 held-out problems · token limits Planner 24, Solver 16, Critic 8`, 'm'));

    const outcomes = readFileSync(join(out, 'outcomes.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as ValidationOutcomes);
    expect(outcomes.map((o) => [o.step, o.mode])).toEqual([[0, 'solver'], [0, 'planned']]);
    const ids = (xs: ProblemOutcome[]) => xs.map((p) => p.id);
    expect(ids(outcomes[0]!.problems)).toEqual(['curriculum/L1/2-0001', 'curriculum/L2/2-0001', 'curriculum/L3/2-0001', 'curriculum/L1/2-0002']);
    expect(ids(outcomes[1]!.problems)).toEqual(ids(outcomes[0]!.problems));
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { templates: string; method: string; limit: number; result: ValidationResult };
    expect(summary).toMatchObject({ templates: 'compact', method: 'sage', limit: 4 });
    const { result } = summary;

    const right = (ps: ProblemOutcome[]) => ps.filter((p) => p.verdict >= 1);
    const table = r.stdout.split('\n');
    for (const [mode, tally, row] of [['solver', result, 'Solver alone'], ['planned', result.planned!, "sage's own mode"]] as const) {
      const ps = outcomes.find((o) => o.mode === mode)!.problems;
      expect(tally.accuracy).toBe(right(ps).length / ps.length);
      for (const level of ['1', '2', '3']) {
        const at = ps.filter((p) => String(p.level) === level);
        expect(tally.perLevel[level]).toMatchObject({ correct: right(at).length, total: at.length });
      }
      // The printed row: overall, then L1, L2, L3, each from the same counts.
      const printed = table.find((l) => l.startsWith(row));
      const cell = (ok: number, n: number) => `${((100 * ok) / n).toFixed(1)}% ${ok}/${n}`;
      const byLevel = ['1', '2', '3'].map((l) => ps.filter((p) => String(p.level) === l)).map((at) => cell(right(at).length, at.length));
      expect(printed).toMatch(new RegExp(`^${row}\\s+${(100 * tally.accuracy).toFixed(1)}% ± [\\d.]+ \\(${right(ps).length}/4\\)\\s+${byLevel.join('\\s+')}$`));
    }
    const shown = outcomes[1]!.problems.filter((p) => p.planShown).length;
    expect(result.planned!.planShown).toBe(shown / 4);
    expect(r.stdout).toContain(`plans shown to the Solver (passed the Critic's gate): ${((100 * shown) / 4).toFixed(1)}%`);
    // The Critic's probe: as many held-out problems as the validation, each real and corrupted, its answer right and wrong.
    expect(result.critic!.pairs).toEqual({ problems: 4, plans: 4, answers: 4 });
    expect(r.stdout).toMatch(
      /^Critic AUC: problems (\d\.\d{3}|-) \(4 real against corrupted\), plans (\d\.\d{3}|-) \(4 own plan against a wrong one\), answers (\d\.\d{3}|-) \(4 right against a number changed\)$/m,
    );

    const again = await runCliInProcess(evaluate, args);
    expect(again.status).toBe(2);
    expect(again.stderr).toBe(`eval: --out ${out} already holds an evaluation (outcomes.jsonl): give another folder`);
  });
});
