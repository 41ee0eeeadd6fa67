import { parquetReadObjects } from 'hyparquet';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KernelPlan } from '../gpu/kernelPlan';
import { CACHE_VERSION } from '../gpu/ops/autotune';
import type { MatmulVariant } from '../gpu/ops/matmulVariants';
import { importCheckpoint } from '../model/checkpoint';
import { escapeRegExp } from '../data/curriculum';
import { DEFAULT_LOOP } from '../sage/loopContract';
import { modelDefaults } from '../sage/settings';
import { DEFAULT_MODEL, SHIPPED_MODEL_CATALOGUE } from '../sage/shippedModels';
import { evolveCli, run as evolve, runTemplates } from './evolve';
import { checkpointRecord, readCheckpointFolder, SHIPPED_MODEL } from './runFiles';
import { expectEveryOptionChecked, runCliInProcess, runCliProcess } from './testUtils';

/** The bytes of a Parquet file as the reader takes them. */
const arrayBufferOf = (b: Uint8Array) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

describe('evolve command line', () => {
  it('refuses a bad value of every option before any GPU work', () => {
    expectEveryOptionChecked(evolveCli);
  });

  it('prompts the shipped checkpoint, given no --templates, with the compact prompts it records, and takes their defaults', () => {
    const templates = runTemplates(undefined, undefined, { dir: SHIPPED_MODEL, record: checkpointRecord(SHIPPED_MODEL) });
    expect(templates).toBe('compact');
    expect(modelDefaults(templates, false)).toMatchObject({ lr: DEFAULT_LOOP.lr, maxNewTokens: DEFAULT_LOOP.maxNewTokens });
    // A preset from scratch: compact; a resumed run: its own, unless --templates says otherwise.
    expect(runTemplates(undefined, undefined, null)).toBe('compact');
    expect(runTemplates(undefined, 'instruct', null)).toBe('instruct');
    expect(runTemplates('compact', 'instruct', null)).toBe('compact');
  });

  it('--steps 0 reads and reports the seed and validation files, bad lines by number', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    const seeds = join(dir, 'seeds.jsonl');
    writeFileSync(seeds, ['{"question": "1+1=?", "answer": "2"}', 'not json', '{"question": "1+1=?", "answer": 2}', '{"problem": "x"}', '{"question": "2+25=?", "answer": 27}'].join('\n'));
    const r = runCliProcess('src/cli/evolve.ts', ['--seeds', seeds, '--steps', '0']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/seeds: .*seeds\.jsonl: 3 problems \(2 qa, 1 question\), 1 bad lines, 1 duplicates loaded once/);
    expect(r.stdout).toMatch(/validation: data\/validation\/curriculum-1000\.jsonl: 1000 problems \(1000 curriculum\)/);
    expect(r.stderr).toMatch(/seeds\.jsonl:2: skipped: not valid JSON/);
    expect(r.stderr).toMatch(/seeds\.jsonl:3: duplicate of line 1/);
  });

  it('says before a run how many validation problems share content with a seed, refuses them with one line, or drops them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    const seeds = join(dir, 'seeds.jsonl');
    const validation = join(dir, 'validation.jsonl');
    writeFileSync(seeds, ['{"id": "s1", "question": "Bo has three pens and buys 4 more. How many pens?", "answer": "7"}', '{"id": "s2", "question": "What is 7 times 8?", "answer": "56"}'].join('\n'));
    writeFileSync(validation, [
      '{"id": "v1", "question": "Ivy has 3 pens and buys four more. How many pens?", "answer": "7"}',
      '{"id": "v2", "question": "What is 7 times 9?", "answer": "63"}',
      '{"id": "v3", "question": "what is seven times eight", "answer": "56"}',
      '{"id": "v4", "question": "Jo adds 4 to 3: 3+4=?", "answer": "7", "expression": "3+4"}',
    ].join('\n'));
    const refused = await runCliInProcess(evolve, ['--seeds', seeds, '--validation', validation, '--steps', '0']);
    expect(refused.status).toBe(2);
    const lines = refused.stderr.trim().split('\n');
    expect(lines[0]).toBe('2 of 4 validation problems share their content with a seed (a score on them measures recall, not generalisation), e.g.:');
    expect(lines.slice(1, 3)).toEqual(['  v1 "Ivy has 3 pens and buys four more. How many pens?" ↔ seed s1', '  v3 "what is seven times eight" ↔ seed s2']);
    expect(lines.at(-1)).toBe('evolve: 2 validation problems share their content with a seed, and a score on them measures recall, not generalisation: give --drop-overlap to drop them, or another --validation');
    const dropped = await runCliInProcess(evolve, ['--seeds', seeds, '--validation', validation, '--steps', '0', '--drop-overlap']);
    expect(dropped.status, dropped.stderr).toBe(0);
    expect(dropped.stdout).toMatch(/^dropped 2 validation problems that share their content with a seed; 2 remain$/m);
    // The shipped curriculum's seeds as their own validation: nothing would be held out.
    const same = await runCliInProcess(evolve, ['--seeds', 'data/seeds/curriculum-500.jsonl', '--validation', 'data/seeds/curriculum-500.jsonl', '--steps', '0', '--drop-overlap']);
    expect(same.status).toBe(2);
    expect(same.stderr).toMatch(/^500 of 500 validation problems share their content with a seed/m);
    expect(same.stderr.trim().split('\n').at(-1)).toBe('evolve: every validation problem shares its content with a seed: nothing is held out');
  });

  it('refuses a bad --config, unchecked seeds and a folder that holds a run, with one line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, '{"proposals": 0}');
    const bad = await runCliInProcess(evolve, ['--config', config, '--steps', '1']);
    expect(bad.status).toBe(2);
    expect(bad.stderr.split('\n').at(-1)).toBe(`evolve: --config ${config}: proposals must be an integer ≥ 1 (got 0)`);
    // Questions without answers: only a validator-free method trains on them.
    const questions = join(dir, 'questions.jsonl');
    writeFileSync(questions, ['{"question": "1+1=?", "answer": "2"}', '{"question": "What is 3+4?"}'].join('\n'));
    const unchecked = await runCliInProcess(evolve, ['--seeds', questions, '--steps', '1', '--method', 'rlvr']);
    expect(unchecked.status).toBe(1);
    expect(unchecked.stderr.trim().split('\n').at(-1)).toBe(
      'evolve: seeds: 1 problems have no answer (first: questions.jsonl:2); rlvr checks the Solver\'s answers against them: give each an answer, or run a validator-free method (mae)',
    );
    // A folder that holds a run is not written over: its records would mix with the new run's.
    const run = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    writeFileSync(join(run, 'metrics.jsonl'), '{"kind":"validation","step":0}\n');
    const taken = await runCliInProcess(evolve, ['--steps', '1', '--out', run]);
    expect(taken.status).toBe(2);
    expect(taken.stderr.trim().split('\n').at(-1)).toBe(`evolve: --out ${run} already holds a run (metrics.jsonl): give another folder, or --resume ${run} to continue it`);
    expect(readFileSync(join(run, 'metrics.jsonl'), 'utf8')).toBe('{"kind":"validation","step":0}\n');
    // A --model folder that holds no checkpoint: refused naming it and why, before a run folder is made.
    const notModel = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
    const never = join(dir, 'never');
    const noModel = await runCliInProcess(evolve, ['--model', notModel, '--steps', '1', '--out', never]);
    expect(noModel.status).toBe(1);
    expect(noModel.stderr.trim().split('\n').at(-1)).toBe(`evolve: ${notModel}: config.json is missing`);
    expect(existsSync(never)).toBe(false);
  });
});

/** A short warm-up: the run's mechanics, not learning (the documented runs measure that). */
const WARMUP_STEPS = 2;

/** A fresh folder holding the first 4 shipped seeds and a --config file of these loop settings. */
function smallRun(settings: Record<string, unknown>, seedLines = readFileSync('data/seeds/curriculum-500.jsonl', 'utf8').split('\n').slice(0, 4)): { dir: string; seeds: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sage-evolve-'));
  const seeds = join(dir, 'seeds.jsonl');
  writeFileSync(seeds, seedLines.join('\n'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify(settings));
  return { dir, seeds, config };
}

describe('evolve on Dawn, end to end', () => {
  it('runs 2 steps after a warm-up: records well formed, the bank grows or says why not, updates run or say why not, the bank as verl datasets, the run resumes; a LoRA run over an f16 base', async () => {
    const { dir, seeds, config } = smallRun({ proposals: 4, trainProblems: 4, solverSamples: 2, difficultySamples: 2, maxNewTokens: { challenger: 32, planner: 24, solver: 16, critic: 8 } });
    const out = join(dir, 'run');
    const common = ['--seeds', seeds, '--config', config, '--validation-limit', '4', '--eval-every', '2'];
    const r = await runCliInProcess(evolve, [...common, '--preset', 'tiny', '--steps', '2', '--warmup-steps', String(WARMUP_STEPS), '--challenger-warmup', 'none', '--out', out]);
    expect(r.stdout).toMatch(/model: the tiny preset from scratch \(seed 0\), warmed up for \d+ steps/);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).settings.challengerWarmup).toBe('none');
    expect(r.stdout).toMatch(/done \(steps\) after 2 steps/);
    const records = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
    expect(records.map((m) => [m.kind, m.step])).toEqual([['validation', 0], ['step', 0], ['step', 1]]);
    for (const m of records.slice(1)) {
      expect(Object.keys(m.seconds)).toEqual(['generation', 'validators', 'training', 'total', 'phases']);
      // Every phase of a SAGE step is timed, and the phases add up to no more than the step.
      expect(Object.keys(m.seconds.phases)).toEqual(['propose', 'score-problems', 'difficulty', 'admit', 'plan', 'score-plans', 'solve', 'update']);
      const phases = Object.values(m.seconds.phases as Record<string, number>).reduce((a, b) => a + b, 0);
      expect(phases).toBeLessThanOrEqual(m.seconds.total + 1e-6);
      expect(phases).toBeGreaterThan(0.5 * m.seconds.total);
      // Every proposal was admitted or rejected for a counted reason.
      const rejected = Object.values(m.bank.rejected as Record<string, number>).reduce((a, b) => a + b, 0);
      expect(m.bank.admitted + rejected).toBeGreaterThanOrEqual(4 * (m.step + 1));
      expect(m.tokens.generated).toBeGreaterThan(0);
    }
    expect(records[2]!.validation.perLevel).toBeDefined();
    // A step updates the weights when some (role, task) group's rewards differ; when none do,
    // every advantage is 0 and the step says so with no loss (a barely warmed-up model's
    // outputs often all fail the format alike).
    for (const m of records.slice(1)) {
      if (m.loss) expect(m.loss.finite && m.loss.gradNorm > 0 && m.loss.tokens > 0).toBe(true);
      else expect((m.groups as { std: number; mean: number }[]).every((g) => g.std <= 1e-12 * Math.max(1, Math.abs(g.mean)))).toBe(true);
    }
    const transcripts = readFileSync(join(out, 'transcripts.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(new Set(transcripts.map((t) => t.role))).toContain('solver');
    // The export re-imports and the run resumes where it stopped.
    const last = importCheckpoint(readCheckpointFolder(join(out, 'last')));
    expect(last.config.hidden_size).toBe(128);
    // Each checkpoint records the prompts the run trained with: a preset from scratch, compact.
    for (const tag of ['warmup', 'best', 'last']) expect(importCheckpoint(readCheckpointFolder(join(out, tag))).templates).toBe('compact');
    // Beside last/, the bank as verl's training set (every entry, seeds and admitted problems) and the held-out split as its validation set.
    const verlRows = async (file: string) => (await parquetReadObjects({ file: arrayBufferOf(readFileSync(join(out, file))) })) as { extra_info: { split: string; origin: string } }[];
    const banked = readFileSync(join(out, 'bank-events.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"type":"admit"')).length;
    const train = await verlRows('verl/train.parquet');
    expect(train).toHaveLength(4 + banked);
    expect(train.filter((x) => x.extra_info.origin === 'generated')).toHaveLength(banked);
    const test = await verlRows('verl/test.parquet');
    expect(test).toHaveLength(JSON.parse(readFileSync(join(out, 'validation.json'), 'utf8')).length);
    expect(test.every((x) => x.extra_info.split === 'test' && x.extra_info.origin === 'held-out')).toBe(true);
    const again = await runCliInProcess(evolve, [...common, '--steps', '1', '--resume', out]);
    expect(again.status, again.stderr).toBe(0);
    const state = JSON.parse(readFileSync(join(out, 'state.json'), 'utf8')) as { step: number };
    expect(state.step).toBe(3);
    expect(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')).toHaveLength(4);
    // A resumed run goes on with its own method and problems: another one is refused, nothing written.
    const other = await runCliInProcess(evolve, ['--steps', '1', '--resume', out, '--method', 'rlvr']);
    expect(other.status).toBe(2);
    expect(other.stderr.trim().split('\n').at(-1)).toBe('evolve: --resume continues the run as it began (--method sage): --method rlvr does not apply');
    const teach = await runCliInProcess(evolve, ['--steps', '1', '--resume', out, '--challenger-warmup', 'seeds']);
    expect(teach.status).toBe(2);
    expect(teach.stderr.trim().split('\n').at(-1)).toBe('evolve: --resume continues the run as it began (--challenger-warmup none, its warm-up done): --challenger-warmup seeds does not apply');
    expect(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')).toHaveLength(4);

    // A run on a LoRA adapter over the base in f16: it steps, records the mode, and its last
    // checkpoint holds the merged model with the adapter in adapter/.
    const loraOut = join(dir, 'lora-run');
    // Its f16 shape classes are this run's alone: it measures none of them (--skip-tuning) and says so.
    const lora = await runCliInProcess(evolve, [...common, '--steps', '1', '--warmup-steps', '0', '--lora-rank', '4', '--base-dtype', 'f16', '--skip-tuning', '--out', loraOut]);
    expect(lora.status, lora.stderr).toBe(0);
    expect(lora.stdout).toContain('kernels: none tuned (--skip-tuning)');
    expect(lora.stdout).not.toMatch(/tuning kernels|new kernel shapes tuned/);
    expect(lora.stdout).toMatch(/LoRA r 4 alpha 8 on .* base frozen in f16/);
    expect(lora.stdout).toMatch(/base weights in f16 · GPU memory training at 8×256: \d+ MiB in full, \d+ MiB with LoRA, \d+ MiB with LoRA on an f16 base; KV cache \d+ MiB \(8 rows × 256 positions\)/);
    expect(JSON.parse(readFileSync(join(loraOut, 'config.json'), 'utf8'))).toMatchObject({ lora: { rank: 4 }, baseDtype: 'f16' });
    expect(importCheckpoint(readCheckpointFolder(join(loraOut, 'last'))).lora?.config.rank).toBe(4);
  });

  describe('from the shipped checkpoint', () => {
    // One run with no model option serves both tests below: its first step is the start of a
    // run cut after step k (the first test) and a run from the shipped checkpoint (the second).
    // Each run is a process start, pipeline compiles and validations: minutes on SwiftShader.
    const k = 1;
    const m = 2;
    let whole = '';
    let cut = '';
    let cutStdout = '';
    let cutRecord: Record<string, unknown> = {};
    beforeAll(async () => {
      // Room for the Solver's worked answer (\`2+3 = 5 <answer>5</answer>\`, a token a byte). Seeds of level 3, which the
      // shipped Solver answers about half the time, and 4 samples each: groups with right and wrong samples, so that steps update
      // the weights (it answers level 1 always, and a group all right has no advantage).
      const level3 = readFileSync('data/seeds/curriculum-all-levels-1000.jsonl', 'utf8').split('\n').filter((l) => l.includes('"level":3')).slice(0, 4);
      const { dir, seeds, config } = smallRun({ proposals: 2, trainProblems: 2, solverSamples: 4, difficultySamples: 2, maxNewTokens: { challenger: 24, planner: 16, solver: 40, critic: 6 } }, level3);
      // From the shipped checkpoint (no warm-up), every rollout kept, a checkpoint after every step, validation only at the ends.
      const common = ['--seeds', seeds, '--config', config, '--validation-limit', '2', '--eval-every', '100', '--transcripts', 'all', '--checkpoint-every', '1'];
      // Cut after one step, two more: the resumed run's own update carries into its next step.
      whole = join(dir, 'whole');
      cut = join(dir, 'cut');
      for (const [out, steps] of [[whole, k + m], [cut, k]] as const) {
        const r = await runCliInProcess(evolve, [...common, '--seed', '3', '--steps', String(steps), '--out', out]);
        expect(r.status, r.stderr).toBe(0);
        if (out === cut) cutStdout = r.stdout;
      }
      // As the cut run recorded itself, before the resumed run adds its start and settings.
      cutRecord = JSON.parse(readFileSync(join(cut, 'config.json'), 'utf8')) as Record<string, unknown>;
    });

    it('a run cut after step k and resumed without --seed makes the batches, rewards and weights of the run never cut', async () => {
      // Nothing but the run folder and the steps: every other setting comes from the record; an option given replaces its recorded value and says so.
      const resumed = await runCliInProcess(evolve, ['--resume', cut, '--steps', String(m), '--patience', '9']);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(resumed.stdout.split('\n').filter((l) => l.includes('replaces the recorded'))).toEqual(['--patience 9 replaces the recorded 5']);
      const recorded = JSON.parse(readFileSync(join(cut, 'config.json'), 'utf8')) as { settings: Record<string, unknown>; starts: { kernels: string }[] };
      expect(recorded.settings).toMatchObject({ seed: 3, transcripts: 'all', evalEvery: 100, validationLimit: 2, patience: 9, proposals: 2 });
      // On the kernels it began with, whatever this machine's table says now.
      expect(resumed.stdout).toMatch(/^kernels: the plan this run recorded \(\d+ matmul classes measured, \d+ untuned\), not this machine's tuning$/m);
      expect(recorded.starts.map((s) => s.kernels)).toEqual(['tuned', 'recorded']);

      const lines = (out: string, file: string) => readFileSync(join(out, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown> & { step: number });
      // The records of the steps after k, less their timings.
      const after = (out: string, file: string) =>
        lines(out, file).filter((r) => r.step >= k && r.kind !== 'validation').map(({ seconds: _s, tokensPerS: _t, tunedKernels: _k, ...r }) => r);
      const steps = after(whole, 'metrics.jsonl');
      expect(steps.map((r) => r.step)).toEqual([1, 2]);
      expect(steps.some((r) => r.loss !== null), 'an update after step k').toBe(true);
      expect(after(cut, 'metrics.jsonl')).toEqual(steps);
      // Every rollout of those steps: the same prompts, outputs, rewards and advantages.
      const transcripts = after(whole, 'transcripts.jsonl');
      expect(transcripts.map((t) => t.role)).toEqual(expect.arrayContaining(['challenger', 'planner', 'solver']));
      expect(after(cut, 'transcripts.jsonl')).toEqual(transcripts);
      expect(readFileSync(join(cut, 'bank-events.jsonl'), 'utf8')).toBe(readFileSync(join(whole, 'bank-events.jsonl'), 'utf8'));
      // The weights and the optimizer's state, bit for bit.
      for (const file of ['model.safetensors', 'optimizer.safetensors']) {
        expect(readFileSync(join(cut, 'last', file)).equals(readFileSync(join(whole, 'last', file))), file).toBe(true);
      }
      // A resumed run's warm-up is done: another warm-up setting is refused, nothing run.
      const warm = await runCliInProcess(evolve, ['--resume', cut, '--steps', '1', '--warmup-steps', '5']);
      expect(warm.status).toBe(2);
      expect(warm.stderr.trim().split('\n').at(-1)).toBe('evolve: --resume continues the run as it began (--warmup-steps 0, its warm-up done): --warmup-steps 5 does not apply');
    });

    it('with no model option a run starts from the shipped checkpoint: its first step with no warm-up, and says so', async () => {
      expect(cutStdout).toMatch(new RegExp(`^model: ${escapeRegExp(`${SHIPPED_MODEL}, ${SHIPPED_MODEL_CATALOGUE[DEFAULT_MODEL]}`)} .*--preset tiny warms one up from scratch instead$`, 'm'));
      expect(cutStdout).not.toMatch(/^warm-up \d+/m);
      expect(cutStdout).toMatch(/step 1\/1 /);
      expect(cutRecord).toMatchObject({ model: SHIPPED_MODEL, preset: null, templates: 'compact', settings: { warmupSteps: 0 } });
      const both = await runCliInProcess(evolve, ['--model', 'data/models/tiny-curriculum', '--preset', 'tiny']);
      expect(both.status).toBe(2);
      expect(both.stderr).toBe('evolve: --model and --preset are exclusive (a checkpoint, or a preset trained from scratch)');
    });
  });

  it('a run records its commit, clock times and kernel plan; a rerun on that plan makes the same outcomes and weights whatever this machine\'s tuning says', async () => {
    const { dir, seeds, config } = smallRun({ proposals: 2, trainProblems: 2, solverSamples: 2, difficultySamples: 2, maxNewTokens: { challenger: 24, planner: 16, solver: 40, critic: 6 } });
    // A warm-up step updates the weights whatever the rollouts: a plan that rounds otherwise shows in them.
    // No kernel is measured (minutes on SwiftShader): each run's cache file alone decides the variants, as a tuner's timed winners would.
    const common = ['--seeds', seeds, '--config', config, '--validation-limit', '2', '--eval-every', '100', '--seed', '5', '--steps', '1', '--warmup-steps', '1', '--challenger-warmup', 'none', '--skip-tuning'];
    /** A run on a machine whose tuning table is `table` (shape class → variant). */
    const evolveOn = async (out: string, table: Record<string, MatmulVariant> | null, extra: string[] = []) => {
      const cacheFile = join(dir, `${basename(out)}-cache.json`);
      writeFileSync(cacheFile, JSON.stringify(table ? { [`${CACHE_VERSION}:${adapter}`]: JSON.stringify(table) } : {}));
      const r = await runCliInProcess(evolve, [...common, '--out', out, ...extra], { SAGE_CACHE_FILE: cacheFile });
      expect(r.status, r.stderr).toBe(0);
      return { stdout: r.stdout, plan: JSON.parse(readFileSync(join(out, 'kernels.json'), 'utf8')) as KernelPlan };
    };
    const same = (a: string, b: string, file: string) => readFileSync(join(a, file)).equals(readFileSync(join(b, file)));
    let adapter = '';

    // Nothing tuned: every class on SwiftShader's heuristic.
    const plain = join(dir, 'plain');
    const first = await evolveOn(plain, null);
    expect(Object.keys(first.plan.matmul)).toEqual([]);
    expect(first.plan.untuned.length).toBeGreaterThan(5);
    expect(first.plan).toMatchObject({ architecture: 'swiftshader', serialRows: true, fusedPrologues: false });
    adapter = first.plan.adapter;
    // The recorded start: its clock times and this checkout's commit.
    const started = (JSON.parse(readFileSync(join(plain, 'config.json'), 'utf8')) as { starts: { started: string; ended: string; commit: string; dirty: boolean; kernels: string }[] }).starts;
    expect(started).toHaveLength(1);
    expect(started[0]!.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(typeof started[0]!.dirty).toBe('boolean');
    expect(Date.parse(started[0]!.ended)).toBeGreaterThanOrEqual(Date.parse(started[0]!.started));
    expect(started[0]!.kernels).toBe('tuned');

    // A machine whose tuner picked other variants for every class: the run records them, and its weights differ.
    // The weight gradients' classes (op(A) transposed: Xᵀ·dY), where the heuristic runs reg: tiled
    // sums in another order than reg and reg-wide. The other classes keep the heuristic's variants.
    const gradients = first.plan.untuned.filter((k) => k.startsWith('TN|'));
    expect(gradients.length).toBeGreaterThan(3);
    const table = (variant: MatmulVariant) => Object.fromEntries(gradients.map((k) => [k, variant]));
    const tunedOut = join(dir, 'tuned');
    const tuned = await evolveOn(tunedOut, table('tiled'));
    expect(tuned.plan.matmul).toEqual(table('tiled'));
    expect(same(plain, tunedOut, 'warmup/model.safetensors'), 'another plan rounds otherwise').toBe(false);

    // That run's plan followed on a machine whose tuner picks a third set: the same outcomes and weights, bit for bit.
    const replayOut = join(dir, 'replay');
    const replay = await evolveOn(replayOut, table('reg-wide'), ['--replay-plan', tunedOut]);
    expect(replay.stdout).toMatch(/^kernels: the plan recorded in .*tuned \(\d+ matmul classes measured, \d+ untuned\), not this machine's tuning$/m);
    expect(replay.plan).toEqual(tuned.plan);
    for (const file of ['outcomes.jsonl', 'bank-events.jsonl', 'warmup/model.safetensors', 'last/model.safetensors']) expect(same(tunedOut, replayOut, file), file).toBe(true);
    const replayStart = (JSON.parse(readFileSync(join(replayOut, 'config.json'), 'utf8')) as { starts: { kernels: string }[] }).starts;
    expect(replayStart.map((s) => s.kernels)).toEqual([`replayed from ${tunedOut}`]);
    // Resumed, it follows its own plan; --replay-plan does not apply there, and a folder without a plan is refused.
    const resumed = await runCliInProcess(evolve, ['--resume', replayOut, '--steps', '1', '--replay-plan', tunedOut]);
    expect(resumed.status).toBe(2);
    expect(resumed.stderr.trim().split('\n').at(-1)).toBe('evolve: --resume follows the kernel plan the run recorded: --replay-plan does not apply');
    const none = await runCliInProcess(evolve, [...common, '--out', join(dir, 'none'), '--replay-plan', dir]);
    expect(none.status).toBe(2);
    expect(none.stderr.trim().split('\n').at(-1)).toBe(`evolve: --replay-plan ${dir}: no kernels.json there (not a run folder, or a run from before kernel plans were recorded)`);
  });
});
