import { describe, expect, it } from 'vitest';
import { hasReference, type MathProblem, type Problem } from '../data/problem';
import type { BankEvent } from './bank';
import { METHODS } from './config';
import { DEFAULT_LOOP, type RunShapeHints, type Validators } from './loopContract';
import { checkReferences, Evolution, stratified, validateHeldOut, type MetricsRecord, type RunModel, type RunEvent, type RunState, type RunStore } from './run';
import type { RunSettings } from './settings';
import { DEFAULT_TEMPLATES } from './templates';
import type { ValidationOutcomes } from './validation';
import type { SftPair } from '../data/sftPairs';
import type { SftExample } from '../train/sft';
import { math, ScriptedModel, validators } from './testUtils';

const pairsOf = (examples: SftExample[]) => examples.filter((e): e is SftPair => 'prompt' in e);

const SEEDS: Problem[] = [math('s1', '1+2=?', '3'), math('s2', '5-3=?', '2'), math('s3', '4+4=?', '8'), math('s4', '9-1=?', '8')];
const VALIDATION: Problem[] = [math('v1', '2+2=?', '4'), math('v2', '7-2=?', '5'), math('v3', '3+3=?', '6')];

const SETTINGS: RunSettings = {
  ...DEFAULT_LOOP,
  method: METHODS.sage,
  templates: DEFAULT_TEMPLATES,
  proposals: 4,
  trainProblems: 4,
  solverSamples: 2,
  difficultySamples: 2,
  steps: 5,
  warmupSteps: 3,
  warmupSolverShare: 0.7,
  warmupPlanVariants: 2,
  warmupAnswerPairs: 1,
  warmupRehearsal: 0,
  warmupCorpusProblems: 0,
  challengerWarmup: 'seeds',
  warmupSolverTarget: 'answer',
  warmupLr: 2e-3,
  evalEvery: 2,
  patience: 2,
  validationLimit: 10,
  nearDuplicate: 0.85,
};

class MemoryStore implements RunStore {
  records: MetricsRecord[] = [];
  transcriptCount = 0;
  events: BankEvent[] = [];
  states: RunState[] = [];
  async metrics(m: MetricsRecord) {
    this.records.push(JSON.parse(JSON.stringify(m)) as MetricsRecord);
  }
  async transcripts(t: unknown[]) {
    this.transcriptCount += t.length;
  }
  outcomeRecords: ValidationOutcomes[] = [];
  async outcomes(o: ValidationOutcomes[]) {
    this.outcomeRecords.push(...o);
  }
  bank(e: BankEvent) {
    this.events.push(JSON.parse(JSON.stringify(e)) as BankEvent);
  }
  async state(s: RunState) {
    this.states.push(structuredClone(s));
  }
}

describe('an evolution run', () => {
  it('tunes its kernels before the first generation, from every phase\'s batch and its longest prompts', async () => {
    const model: ScriptedModel & Pick<RunModel, 'prepare'> = new ScriptedModel();
    const calls: string[] = [];
    const generate = model.generate.bind(model);
    model.generate = (r) => (calls.push('generate'), generate(r));
    let hints: RunShapeHints | null = null;
    model.prepare = async (h, onProgress) => {
      calls.push('prepare');
      hints = h;
      for (let i = 0; i <= 3; i++) onProgress(i, 3);
      return 3;
    };
    const events: RunEvent[] = [];
    await new Evolution({ ...SETTINGS, steps: 1, warmupSteps: 0 }, SEEDS, VALIDATION, model, validators, new MemoryStore(), (e) => events.push(e)).run();
    expect(calls[0]).toBe('prepare');
    expect(calls.filter((c) => c === 'prepare')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'tuning')).toEqual([0, 1, 2, 3].map((done) => ({ type: 'tuning', done, total: 3 })));
    const h = hints!;
    expect(h.trains).toBe(true);
    // Validation (3 held-out problems), the Solver's 4 × 2 rows of 4 distinct problems, the difficulty attempts 4 × 2 of 4.
    expect(h.generations).toContainEqual(expect.objectContaining({ rows: 3, distinct: 3 }));
    expect(h.generations).toContainEqual(expect.objectContaining({ rows: 8, distinct: 4 }));
    // The Challenger's prompt carries references: the longest of the prompts.
    const longest = Math.max(...h.generations.map((g) => g.prompt.length));
    expect(h.generations.find((g) => g.prompt.length === longest)!.prompt).toContain(SEEDS[0]!.statement);
  });

  it('warms up, validates before the first step and every E steps, keeps the best, stops early', async () => {
    const model = new ScriptedModel();
    const store = new MemoryStore();
    const events: RunEvent[] = [];
    const run = new Evolution(SETTINGS, SEEDS, VALIDATION, model, validators, store, (e) => events.push(e));
    const state = await run.run();
    expect(model.warmups).toHaveLength(1);
    expect(events.filter((e) => e.type === 'warmup').map((e) => e.type === 'warmup' && e.step)).toEqual([1, 2, 3]);
    // The scripted Solver never improves: the baseline is the best, then 2 evaluations without gain.
    expect(store.records.map((r) => [r.kind, r.step, r.validation?.accuracy])).toEqual([
      ['validation', 0, 2 / 3],
      ['step', 0, undefined],
      ['step', 1, 2 / 3],
      ['step', 2, undefined],
      ['step', 3, 2 / 3],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'done', reason: 'early-stop' });
    expect(state).toMatchObject({ step: 4, warmedUp: true, evaluationsWithoutGain: 2, best: { step: 0 } });
    expect(model.checkpoints).toEqual(['warmup', 'best', 'last']);
    expect(store.transcriptCount).toBeGreaterThan(0);
    expect(store.events.some((e) => e.type === 'admit')).toBe(true);
    // Every validation measured SAGE in its own mode and its Critic, on no more problems than its budget.
    const validations = store.records.flatMap((r) => (r.validation ? [r.validation] : []));
    expect(validations.every((v) => v.planned !== undefined && v.critic !== undefined)).toBe(true);
    expect(validations[0]!.critic!.pairs.problems).toBeLessThanOrEqual(SETTINGS.validationLimit);
    // Each validation's per-problem outcomes, in both modes, agree with its tallies.
    expect(store.outcomeRecords.map((o) => [o.step, o.mode])).toEqual(validations.flatMap((v) => [[v.step, 'solver'], [v.step, 'planned']]));
    for (const o of store.outcomeRecords) {
      const v = validations.find((x) => x.step === o.step)!;
      expect(o.problems.map((p) => p.id)).toEqual(VALIDATION.map((p) => p.id));
      expect(o.problems.filter((p) => p.verdict >= 1).length / o.problems.length).toBe(o.mode === 'solver' ? v.accuracy : v.planned!.accuracy);
    }
  });

  it('warms the Challenger up on problems the model wrote itself, continuing reference seeds, when asked (own)', async () => {
    const model = new ScriptedModel();
    const events: RunEvent[] = [];
    await new Evolution({ ...SETTINGS, steps: 1, challengerWarmup: 'own' }, SEEDS, VALIDATION, model, validators, new MemoryStore(), (e) => events.push(e)).run();
    // One continuation per math seed, sampled as the loop samples, each stopped at its line's end.
    const first = model.requests[0]!;
    expect(first.prompts).toHaveLength(SEEDS.length);
    expect(first).toMatchObject({ stop: ['\n'], temperature: SETTINGS.temperature, maxNewTokens: SETTINGS.maxNewTokens.challenger });
    for (const p of first.prompts) expect(p.endsWith('</answer>\n')).toBe(true);
    // The unreadable one dropped; the others taught in turn as the Challenger's output.
    const own = events.find((e) => e.type === 'own-problems');
    expect(own).toMatchObject({ written: SEEDS.length, read: SEEDS.length - 1 });
    const challenger = pairsOf(model.warmups[0]!).filter((p) => p.prompt.includes('harder'));
    expect(challenger).toHaveLength(SEEDS.length);
    expect(challenger.every((p) => /^<question>(\d+)\*\1=\?<\/question><answer>\d+<\/answer>$/.test(p.response))).toBe(true);
    expect(challenger.map((p) => p.response)).toContain('<question>2*2=?</question><answer>4</answer>');
  });

  it('rehearses corpus documents beside the role pairs when asked, and says how many', async () => {
    const model = new ScriptedModel();
    const events: RunEvent[] = [];
    await new Evolution({ ...SETTINGS, steps: 1, warmupRehearsal: 0.5 }, SEEDS, VALIDATION, model, validators, new MemoryStore(), (e) => events.push(e)).run();
    const examples = model.warmups[0]!;
    const pairs = pairsOf(examples).length;
    expect(pairs).toBeGreaterThan(0);
    expect(examples.length).toBe(2 * pairs);
    expect(events.find((e) => e.type === 'rehearsal')).toEqual({ type: 'rehearsal', documents: pairs, pairs });
  });

  it('resumes from its saved state and bank events where it left off', async () => {
    const first = new MemoryStore();
    const a = new Evolution({ ...SETTINGS, steps: 2, patience: 10 }, SEEDS, VALIDATION, new ScriptedModel(), validators, first, () => {});
    await a.run();
    const saved = first.states.at(-1)!;
    expect(saved.step).toBe(2);
    const model = new ScriptedModel();
    const second = new MemoryStore();
    const b = new Evolution({ ...SETTINGS, steps: 1, patience: 10 }, SEEDS, VALIDATION, model, validators, second, () => {}, {
      state: saved,
      bankEvents: first.events,
    });
    expect(b.bank.size).toBe(a.bank.size);
    expect(b.bank.rejected).toEqual(a.bank.rejected);
    await b.run();
    expect(model.warmups).toHaveLength(0);
    expect(second.records.map((r) => [r.kind, r.step])).toEqual([['step', 2]]);
    expect(second.states.at(-1)!.step).toBe(3);
  });

  it('a stop asked for mid-step abandons that step at the next phase boundary: no update, the last whole step saved', async () => {
    const model = new ScriptedModel();
    const store = new MemoryStore();
    const run: Evolution = new Evolution({ ...SETTINGS, warmupSteps: 0, patience: 10 }, SEEDS, VALIDATION, model, validators, store, (e) => {
      if (e.type === 'phase' && e.step === 1 && e.phase === 'plan') run.stop();
    });
    const state = await run.run();
    expect(state.step).toBe(1);
    // Step 0's update ran; step 1 stopped before its Solver generated or any update.
    expect(model.trained).toHaveLength(1);
    expect(store.records.filter((r) => r.kind === 'step').map((r) => r.step)).toEqual([0]);
    expect(store.states.at(-1)!.step).toBe(1);
    expect(model.checkpoints.at(-1)).toBe('last');
  });

  it('pauses at a phase boundary, steps once, resumes, and leaves paused time out of the timings', async () => {
    const model = new ScriptedModel();
    const events: RunEvent[] = [];
    let run!: Evolution;
    let pausedOnce = false;
    run = new Evolution({ ...SETTINGS, warmupSteps: 0, steps: 3, patience: 10 }, SEEDS, VALIDATION, model, validators, new MemoryStore(), (e) => {
      events.push(e);
      if (e.type === 'phase' && e.step === 0 && e.phase === 'solve' && !pausedOnce) {
        pausedOnce = true;
        run.pause();
      }
    });
    const finished = run.run();
    const waitFor = async (pred: () => boolean) => {
      for (let i = 0; i < 1000 && !pred(); i++) await new Promise((r) => setTimeout(r, 1));
      expect(pred()).toBe(true);
    };
    await waitFor(() => run.isPaused);
    const solvesBefore = model.requests.length;
    const held = performance.now();
    await new Promise((r) => setTimeout(r, 500));
    // Held: nothing generates while paused.
    expect(model.requests.length).toBe(solvesBefore);
    expect(events.at(-1)).toMatchObject({ type: 'paused', step: 0, phase: 'update' });
    const heldMs = performance.now() - held;
    run.stepOnce();
    // The step in flight ends, then the run holds before the next one.
    await waitFor(() => run.isPaused && events.some((e) => e.type === 'step' && e.metrics.step === 0));
    expect(events.filter((e) => e.type === 'step')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'paused', step: 1, phase: 'step' });
    run.resume();
    const state = await finished;
    expect(state.step).toBe(3);
    const first = events.find((e) => e.type === 'step' && e.metrics.step === 0) as Extract<RunEvent, { type: 'step' }>;
    // The half second held is not counted as the step's time (a scripted step takes microseconds).
    expect(first.metrics.seconds.total * 1000).toBeLessThan(heldMs);
    expect(events.filter((e) => e.type === 'resumed')).toHaveLength(2);
  });

  it('a stop request ends the run after the step in flight, saving the last checkpoint', async () => {
    const model = new ScriptedModel();
    let run: Evolution;
    const store = new MemoryStore();
    run = new Evolution({ ...SETTINGS, warmupSteps: 0, patience: 10 }, SEEDS, VALIDATION, model, validators, store, (e) => {
      if (e.type === 'step' && e.metrics.step === 1) run.stop();
    });
    const state = await run.run();
    expect(state.step).toBe(2);
    expect(model.checkpoints.at(-1)).toBe('last');
  });
});

describe('seeds that are questions alone', () => {
  const questions: Problem[] = (SEEDS as MathProblem[]).map(({ answer: _, ...p }) => ({ ...p, format: 'question' }));

  it('a method with validators and every validation refuse them, naming the first; MAE trains on them, its Judge scoring the answers', async () => {
    const model = new ScriptedModel();
    expect(() => checkReferences(questions, VALIDATION, METHODS.sage)).toThrow(
      "seeds: 4 problems have no answer (first: s1); sage checks the Solver's answers against them: give each an answer, or run a validator-free method (mae)",
    );
    expect(() => checkReferences(SEEDS, questions, METHODS.mae)).toThrow(/^validation: 4 problems have no answer \(first: s1\)/);
    expect(() => checkReferences(questions, VALIDATION, METHODS.mae)).not.toThrow();
    // The validators are never asked about a problem they cannot check.
    const asked: string[] = [];
    const strict: Validators = {
      ...validators,
      judge: async (p, response) => {
        if (!hasReference(p)) throw new Error(`judged ${p.id}, which has no answer`);
        asked.push(p.id);
        return validators.judge(p, response);
      },
    };
    const store = new MemoryStore();
    const state = await new Evolution({ ...SETTINGS, method: METHODS.mae, steps: 2, patience: 10 }, questions, VALIDATION, model, strict, store, () => {}).run();
    expect(state.step).toBe(2);
    // The warm-up teaches no Solver or Challenger answer it does not have.
    expect(model.warmups[0]!.length).toBeGreaterThan(0);
    expect(pairsOf(model.warmups[0]!).some((p) => p.response.includes('undefined') || p.response.includes('<answer></answer>'))).toBe(false);
    const steps = store.records.filter((r): r is Extract<MetricsRecord, { kind: 'step' }> => r.kind === 'step');
    // Accuracy on the training problems counts the checkable ones alone (the Challenger's, with its answer): none, null.
    for (const m of steps) expect(m.generatedShare > 0 || m.solverAccuracy === null).toBe(true);
    expect(asked.every((id) => !id.startsWith('s'))).toBe(true);
    expect(model.trained.length).toBeGreaterThan(0);
  });
});

describe('a run that resumes from its last checkpoint alone', () => {
  it('saves last/ every N steps and at the end, each with the state that goes with it', async () => {
    const model = new ScriptedModel();
    const saved: { state: RunState; checkpoints: string[] }[] = [];
    const store = new MemoryStore();
    const folderLike: RunStore = Object.assign(store, {
      checkpointing: { every: 2, saved: async (s: RunState) => void saved.push({ state: structuredClone(s), checkpoints: [...model.checkpoints] }) },
    });
    await new Evolution({ ...SETTINGS, warmupSteps: 0, steps: 5, patience: 10 }, SEEDS, VALIDATION, model, validators, folderLike, () => {}).run();
    expect(saved.map((x) => x.state.step)).toEqual([2, 4, 5]);
    // Each state reaches the store after its weights, and the step's records before both.
    for (const x of saved) expect(x.checkpoints.at(-1)).toBe('last');
    expect(model.checkpoints.filter((t) => t === 'last')).toHaveLength(3);
    expect(saved[1]!.state).toEqual(store.states[3]);
  });

  it('without checkpointing (the lab, whose export takes the weights as they are) saves last/ only at the end', async () => {
    const model = new ScriptedModel();
    await new Evolution({ ...SETTINGS, warmupSteps: 0, steps: 5, patience: 10 }, SEEDS, VALIDATION, model, validators, new MemoryStore(), () => {}).run();
    expect(model.checkpoints.filter((t) => t === 'last')).toHaveLength(1);
  });
});

describe('a model validated on its own', () => {
  it("is the run's validation before its first step: the same requests, tallies and outcomes", async () => {
    for (const method of [METHODS.sage, METHODS.mae, METHODS.rlvr]) {
      const settings = { ...SETTINGS, method, warmupSteps: 0, steps: 1, validationLimit: 2 };
      const inRun = new ScriptedModel();
      const store = new MemoryStore();
      await new Evolution(settings, SEEDS, VALIDATION, inRun, validators, store, () => {}).run();
      const alone = new ScriptedModel();
      const { result, outcomes } = await validateHeldOut(alone, validators, VALIDATION, settings);
      expect(inRun.requests.slice(0, alone.requests.length)).toEqual(alone.requests);
      expect(store.records[0]).toEqual({ kind: 'validation', step: 0, validation: result });
      expect(store.outcomeRecords.filter((o) => o.step === 0)).toEqual(outcomes);
      expect(outcomes.map((o) => o.mode)).toEqual(method === METHODS.sage ? ['solver', 'planned'] : ['solver']);
      expect(result.critic === undefined).toBe(method === METHODS.rlvr);
    }
  });
});

describe('the held-out subset', () => {
  it('takes problems in turn from every source and level, the same every time', () => {
    const split = [1, 1, 1, 2, 2, 3].map((level, i) => ({ ...math(`v${i}`, `${i}+1=?`, String(i + 1)), level }));
    expect(stratified(split, 4).map((p) => p.id)).toEqual(['v0', 'v3', 'v5', 'v1']);
    expect(stratified(split, 100)).toHaveLength(6);
  });
});
