import { describe, expect, it } from 'vitest';
import type { Problem } from '../data/problem';
import { ProblemBank } from './bank';
import { METHODS, type MethodConfig } from './config';
import { SageLoop, type StepMetrics, type Transcript } from './loop';
import { DEFAULT_LOOP, type Completion, type GenerationRequest, type LoopSettings, type Phase } from './loopContract';
import { OUTPUTS } from './templates';
import { parseOutput } from './parse';
import { DEFAULT_TEMPLATES } from './templates';
import { math, ScriptedModel, validators } from './testUtils';
import { EarlyStopping, validate } from './validation';

const SEEDS: Problem[] = [math('s1', '1+2=?', '3'), math('s2', '5-3=?', '2'), math('s3', '4+4=?', '8'), math('s4', '9-1=?', '8')];

function loop(method: MethodConfig, model = new ScriptedModel(), over: Partial<LoopSettings> = {}) {
  const { bank } = ProblemBank.fromSeeds(SEEDS, { alpha: method.rewards.alpha, nearDuplicate: 0.85 });
  const phases: Phase[] = [];
  const l = new SageLoop(model, validators, bank, { ...DEFAULT_LOOP, method, templates: DEFAULT_TEMPLATES, proposals: 4, trainProblems: 4, solverSamples: 2, difficultySamples: 3, ...over }, (p) => {
    phases.push(p);
  });
  return { l, model, bank, phases };
}

describe('the SAGE loop (orchestration)', () => {
  it('runs every phase in order, grows the bank, and trains every role on whitened rewards', async () => {
    const { l, model, bank, phases } = loop(METHODS.sage, new ScriptedModel(), { transcripts: 'all' });
    const { metrics, transcripts } = await l.runStep();
    expect(phases).toEqual(['propose', 'score-problems', 'difficulty', 'admit', 'plan', 'score-plans', 'solve', 'update']);
    // Proposal 0 is unparsable; 1-3 are sums the scripted Solver always gets right.
    expect(metrics.bank).toMatchObject({ size: 7, seeds: 4, admitted: 3, admittedThisStep: 3 });
    expect(metrics.bank.rejected.unparsable).toBe(1);
    const provenance = bank.get('gen/0/1')!.provenance;
    expect(provenance).toMatchObject({ origin: 'generated', step: 0, quality: 8 / 9, parents: expect.any(Array) });
    // Its difficulty attempts first; later rates when it is sampled for training.
    expect(provenance.passRates[0]).toEqual([0, 1]);
    expect(Object.keys(metrics.rewards).sort()).toEqual(['challenger', 'critic', 'planner', 'solver']);
    // Each role's mean completion length; the scripted model never runs into its limit.
    expect(metrics.responses.critic).toEqual({ meanTokens: '<score>9</score>'.length, truncatedShare: 0 });
    expect(metrics.responses.solver!.meanTokens).toBeGreaterThan(0);
    // Half the training batch comes from the newest admitted problems (this step's three), the rest from the whole bank.
    expect(metrics.generatedShare).toBeGreaterThanOrEqual(0.5);
    // The Challenger: thirds for admitted problems (difficulty 0: solved every time), 0 for garbage.
    const challenger = transcripts.find((t) => t.role === 'challenger')!;
    expect(challenger).toMatchObject({ verdict: 'rejected: unparsable', reward: 0 });
    const rollouts = model.trained[0]!;
    expect(rollouts.length).toBe(4 + 3 + 4 + 4 + 8); // proposals, problem scores, plans, plan scores, solutions
    // Advantages are whitened within each (role, kind) group: they sum to zero there.
    expect(metrics.groups.map((g) => g.group).sort()).toEqual(['challenger/math', 'critic/math', 'planner/math', 'solver/math']);
    expect(rollouts.reduce((a, r) => a + r.advantage, 0)).toBeCloseTo(0, 9);
    expect(rollouts.every((r) => r.oldLogprobs.length === r.completionIds.length)).toBe(true);
    expect(metrics.loss?.tokens).toBe(rollouts.reduce((n, r) => n + r.completionIds.length, 0));
    // Sampling at temperature 1 with the roles' stop strings; the Critic is short.
    expect(model.requests.every((r) => r.temperature === 1)).toBe(true);
    expect(model.requests.find((r) => r.prompts[0]!.includes('Rate'))).toMatchObject({ maxNewTokens: DEFAULT_LOOP.maxNewTokens.critic, stop: ['</score>'] });
  });

  it('pays no rejected proposal more than an admitted one, and nothing for a plan that is not there', async () => {
    // A Challenger that games: a wrong claimed answer, a problem, the same problem again, another; an empty plan.
    class Gaming extends ScriptedModel {
      override async generate(r: GenerationRequest): Promise<Completion[]> {
        const outs = await super.generate(r);
        const texts = ['<question>2+13=?</question><answer>x</answer>', '<question>1+11=?</question><answer>12</answer>', '<question>1+11=?</question><answer>12</answer>', '<question>3+13=?</question><answer>16</answer>'];
        return outs.map((o, i) => {
          const prompt = r.prompts[i]!;
          const text = prompt.includes('harder') ? texts[i]! : prompt.includes('<plan>') && i === 0 ? '<plan></plan>' : o.text;
          return { ...o, text, completionIds: [...Buffer.from(text)], modelLogprobs: [...Buffer.from(text)].map(() => -1) };
        });
      }
    }
    const { l } = loop(METHODS.sage, new Gaming());
    const { metrics } = await l.runStep();
    expect(metrics.bank.admittedThisStep).toBe(2);
    expect(metrics.bank.rejected).toMatchObject({ validator: 1, duplicate: 1 });
    const format = parseOutput('<question>1+11=?</question><answer>12</answer>', OUTPUTS.challenger).format;
    const admitted = (8 / 9 + 0 + format) / 3;
    const invalid = format / 3;
    expect(invalid).toBeLessThan(admitted);
    expect(metrics.rewards.challenger).toBeCloseTo((2 * admitted + 2 * invalid) / 4, 9);
    // The empty plan is not scored: it earns the Planner its format share alone, the Solver no plan credit.
    const empty = parseOutput('<plan></plan>', OUTPUTS.planner).format;
    const scored = parseOutput('<plan>Compute it.</plan>', OUTPUTS.planner).format;
    expect(metrics.rewards.planner).toBeCloseTo((0.2 * empty + 3 * (0.8 * (8 / 9) + 0.2 * scored)) / 4, 9);
  });

  it('grounded plans: the Critic is paid for agreeing with what the environment computes of each plan; the step records the share of right plans', async () => {
    // Plans that compute the problem's expression for two problems and a wrong one for the others; the Critic scores every plan 9.
    class Planning extends ScriptedModel {
      override async generate(r: GenerationRequest): Promise<Completion[]> {
        const outs = await super.generate(r);
        return outs.map((o, i) => {
          const prompt = r.prompts[i]!;
          if (!prompt.includes('<plan>') || prompt.includes('Rate')) return o;
          const expression = /(\d+[-+]\d+)=\?/.exec(prompt)![1]!;
          const text = `<plan>Compute ${i % 2 === 0 ? expression : '1+1'}.</plan>`;
          return { ...o, text, completionIds: [...Buffer.from(text)], modelLogprobs: [...Buffer.from(text)].map(() => -1) };
        });
      }
    }
    const rewardsOf = async (method: MethodConfig) => {
      const model = new Planning();
      const { bank } = ProblemBank.fromSeeds(SEEDS, { alpha: method.rewards.alpha, nearDuplicate: 0.85 });
      const settings = { ...DEFAULT_LOOP, method, templates: DEFAULT_TEMPLATES, proposals: 4, trainProblems: 4, solverSamples: 2, difficultySamples: 3, transcripts: 'all' as const };
      const { metrics, transcripts } = await new SageLoop(model, validators, bank, settings).runStep();
      return { metrics, plans: transcripts.filter((t) => t.template === 'criticPlan'), planners: transcripts.filter((t) => t.template === 'planner') };
    };
    const grounded = await rewardsOf(METHODS['sage-grounded-plans']);
    const g = METHODS['sage-grounded-plans'].rewards.criticGrounded;
    const right = grounded.plans.filter((t) => t.verdict === 'plan computes the answer');
    const wrong = grounded.plans.filter((t) => t.verdict === 'plan computes another value');
    expect(right.length + wrong.length).toBe(4);
    expect(right.length).toBeGreaterThanOrEqual(1);
    for (const t of right) expect(t.reward).toBeCloseTo(g.agreement * (8 / 9) + g.format, 9);
    for (const t of wrong) expect(t.reward).toBeCloseTo(g.agreement / 9 + g.format, 9);
    expect(grounded.metrics.plansRight).toBeCloseTo(right.length / 4, 12);
    expect(grounded.metrics.zeroSpreadShare.critic).toBeLessThan(1);
    // The paper's SAGE pays the same plans the Critic's format alone; the share is recorded all the same.
    const sage = await rewardsOf(METHODS.sage);
    for (const t of sage.plans) expect(t.reward).toBe(1);
    expect(sage.metrics.plansRight).toBeCloseTo(grounded.metrics.plansRight!, 12);
    // Its Planner earns the Critic's 9 for every plan, right or wrong; the grounded Planner earns the plan term only when the plan computes the answer.
    const format = parseOutput('<plan>Compute 1+1.</plan>', OUTPUTS.planner).format;
    for (const t of sage.planners) expect(t.reward).toBeCloseTo(0.8 * (8 / 9) + 0.2 * format, 9);
    const planner = await rewardsOf(METHODS['sage-grounded-planner']);
    expect(planner.planners).toHaveLength(4);
    const planRight = (t: { output: string }) => /Compute (\d+[-+]\d+)\./.exec(t.output)![1]! !== '1+1';
    expect(planner.planners.filter(planRight).length).toBeGreaterThanOrEqual(1);
    for (const t of planner.planners) expect(t.reward).toBeCloseTo((planRight(t) ? 0.8 : 0) + 0.2 * format, 9);
  });

  it('without the plan gate (beta = 0) every plan reaches the Solver, one scored 1/10 included', async () => {
    class Harsh extends ScriptedModel {
      override async generate(r: GenerationRequest): Promise<Completion[]> {
        const outs = await super.generate(r);
        return outs.map((o, i) => (r.prompts[i]!.includes('Rate') && r.prompts[i]!.includes('Plan') ? { ...o, text: '<score>1</score>' } : o));
      }
    }
    for (const [method, shown] of [[METHODS['sage-no-plan-gate'], true], [METHODS.sage, false]] as const) {
      const model = new Harsh();
      const { l } = loop(method, model);
      await l.runStep();
      // The Solver's batch: 4 problems × 2 samples (the difficulty attempts are 3 × 3).
      const solve = model.requests.find((r) => r.prompts.length === 8 && !r.prompts[0]!.includes('Rate'))!;
      expect(solve.prompts.every((p) => p.includes('Compute it.')), method.name).toBe(shown);
    }
  });

  it('reports the zero-spread share per role and can drop those groups from the update (the Critic scoring everything 9)', async () => {
    const text = (ids: readonly number[]) => Buffer.from(ids.slice(1)).toString();
    for (const drop of [false, true]) {
      const model = new ScriptedModel();
      const { bank } = ProblemBank.fromSeeds(SEEDS, { alpha: 0.7, nearDuplicate: 0.85 });
      const settings = { ...DEFAULT_LOOP, method: METHODS.sage, templates: DEFAULT_TEMPLATES, proposals: 4, trainProblems: 4, solverSamples: 2, difficultySamples: 3, dropZeroSpread: drop };
      const { metrics } = await new SageLoop(model, validators, bank, settings).runStep();
      // The Critic's one group (critic/math) has every reward alike; the Challenger's (garbage among problems) does not.
      expect(metrics.zeroSpreadShare).toMatchObject({ critic: 1, challenger: 0 });
      const critic = model.trained[0]!.filter((r) => text(r.promptIds).includes('Rate'));
      expect(critic.length, `drop ${drop}`).toBe(drop ? 0 : 7);
    }
  });

  it('records the share of each role\'s completions cut off at the token limit', async () => {
    class Rambling extends ScriptedModel {
      override async generate(r: GenerationRequest): Promise<Completion[]> {
        return (await super.generate(r)).map((o) => ({ ...o, truncated: o.text.startsWith('<answer>') }));
      }
    }
    const { l } = loop(METHODS.sage, new Rambling());
    const { metrics } = await l.runStep();
    expect(metrics.responses.solver!.truncatedShare).toBe(1);
    expect(metrics.responses.planner!.truncatedShare).toBe(0);
  });

  it('keeps every rollout with its reward and advantage when asked (transcripts all), one per role and template by default', async () => {
    const sample = loop(METHODS.sage);
    const few = (await sample.l.runStep()).transcripts;
    expect(new Set(few.map((t) => `${t.role}/${t.template}`)).size).toBe(few.length);
    const { bank } = ProblemBank.fromSeeds(SEEDS, { alpha: METHODS.sage.rewards.alpha, nearDuplicate: 0.85 });
    const model = new ScriptedModel();
    const l = new SageLoop(model, validators, bank, { ...DEFAULT_LOOP, method: METHODS.sage, templates: DEFAULT_TEMPLATES, proposals: 4, trainProblems: 4, solverSamples: 2, difficultySamples: 3, transcripts: 'all' });
    const { transcripts } = await l.runStep();
    // 4 proposals, 3 problem scores, 4 plans, 4 plan scores, 8 solutions.
    expect(transcripts.filter((t) => t.role === 'challenger')).toHaveLength(4);
    expect(transcripts.filter((t) => t.role === 'solver')).toHaveLength(8);
    expect(transcripts).toHaveLength(4 + 3 + 4 + 4 + 8);
    // Task-relative whitening: each role's advantages have mean 0 over the step.
    const solver = transcripts.filter((t) => t.role === 'solver').map((t) => t.advantage!);
    expect(solver.every((a) => Number.isFinite(a))).toBe(true);
    expect(solver.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 9);
    // Each rollout trained carries its role, for the update's statistics per role.
    expect(new Set(model.trained[0]!.map((r) => r.group))).toEqual(new Set(['challenger', 'critic', 'planner', 'solver']));
  });

  it('is reproducible: the same seed gives the same requests and rewards', async () => {
    const a = loop(METHODS.sage);
    const b = loop(METHODS.sage);
    for (let i = 0; i < 2; i++) {
      const [x, y] = [await a.l.runStep(), await b.l.runStep()];
      expect(y.metrics.rewards).toEqual(x.metrics.rewards);
    }
    expect(b.model.requests).toEqual(a.model.requests);
    expect(new Set(a.model.requests.map((r) => r.seed)).size).toBeGreaterThan(6);
  });

  it('transcripts sample: a Planner transcript is on a generated problem as often as the batch holds them (not the first rollout, always generated)', async () => {
    const { l } = loop(METHODS.sage, new ScriptedModel(), { seed: 7 });
    const steps = 150;
    // Per step the sampled plan is on a generated problem with probability the batch's generated share (one plan per problem).
    let generated = 0;
    let expected = 0;
    let variance = 0;
    for (let i = 0; i < steps; i++) {
      const { metrics, transcripts } = await l.runStep();
      const plans = transcripts.filter((t) => t.role === 'planner');
      expect(plans).toHaveLength(1);
      if (plans[0]!.origin === 'generated') generated++;
      expected += metrics.generatedShare;
      variance += metrics.generatedShare * (1 - metrics.generatedShare);
    }
    const sd = Math.sqrt(variance);
    // The batch mixes both kinds (the test can tell a biased sample), and the count lies within 5 SD of its expectation (p < 1e-6; the seed is fixed besides).
    expect(steps - expected).toBeGreaterThan(10 * sd);
    expect(expected).toBeGreaterThan(10 * sd);
    expect(Math.abs(generated - expected)).toBeLessThan(5 * sd);
  });

  it('transcripts sample: the same seed gives the same choice, another seed another, and the choice leaves the loop\'s other draws as they were', async () => {
    const run = async (over: Partial<LoopSettings>) => {
      const x = loop(METHODS.sage, new ScriptedModel(), over);
      const out: { metrics: StepMetrics; transcripts: Transcript[] }[] = [];
      for (let i = 0; i < 6; i++) out.push(await x.l.runStep());
      return { out, requests: x.model.requests, trained: x.model.trained };
    };
    const [a, b, all, other] = [await run({ seed: 3 }), await run({ seed: 3 }), await run({ seed: 3, transcripts: 'all' }), await run({ seed: 4 })];
    expect(b.out.map((x) => x.transcripts)).toEqual(a.out.map((x) => x.transcripts));
    expect(other.out.map((x) => x.transcripts)).not.toEqual(a.out.map((x) => x.transcripts));
    // Keeping every transcript instead changes no prompt, generation seed, reward or update: the sample has its own stream.
    expect(all.requests).toEqual(a.requests);
    expect(all.trained).toEqual(a.trained);
    const withoutTime = (m: StepMetrics) => ({ ...m, seconds: null, tokensPerS: null });
    expect(all.out.map((x) => withoutTime(x.metrics))).toEqual(a.out.map((x) => withoutTime(x.metrics)));
    a.out.forEach((x, step) => {
      // One of each role and template, each one of the step's rollouts, each naming its problem's origin.
      expect(new Set(x.transcripts.map((t) => `${t.role}/${t.template}`)).size).toBe(x.transcripts.length);
      for (const t of x.transcripts) expect(all.out[step]!.transcripts).toContainEqual(t);
      // The scripted Challenger's problems are i+(i+10); the seeds' second operands are below 10.
      const generated = (t: Transcript) => t.role === 'challenger' || Number(/\d+[-+](\d+)=\?/.exec(t.prompt)![1]) >= 10;
      for (const t of x.transcripts) expect(t.origin).toBe(generated(t) ? 'generated' : 'seed');
      expect(new Set(all.out[step]!.transcripts.map((t) => t.origin))).toEqual(new Set(['seed', 'generated']));
    });
    const rlvr = loop(METHODS.rlvr);
    expect((await rlvr.l.runStep()).transcripts.map((t) => t.origin)).toEqual(['seed']);
  });

  it('the difficulty term as a choice: under the band an admitted problem nobody solves earns no difficulty credit, under the paper\'s the most', async () => {
    // Proposals the Challenger claims right but the scripted Solver never solves (it answers 0 to a difference).
    class Unsolvable extends ScriptedModel {
      override async generate(r: GenerationRequest): Promise<Completion[]> {
        const outs = await super.generate(r);
        return outs.map((o, i) => {
          if (!r.prompts[i]!.includes('harder')) return o;
          const text = `<question>${i + 20}-${i + 1}=?</question><answer>19</answer>`;
          return { ...o, text, completionIds: [...Buffer.from(text)], modelLogprobs: [...Buffer.from(text)].map(() => -1) };
        });
      }
    }
    const format = parseOutput('<question>20-1=?</question><answer>19</answer>', OUTPUTS.challenger).format;
    for (const [difficulty, credit] of [['paper', 1], ['band', 0]] as const) {
      const { l, bank } = loop(METHODS.sage, new Unsolvable(), { difficulty });
      const { metrics } = await l.runStep();
      expect(metrics.bank.admittedThisStep).toBe(4);
      expect(bank.get('gen/0/0')!.provenance.passRates[0]).toEqual([0, 0]);
      expect(metrics.rewards.challenger, difficulty).toBeCloseTo((8 / 9 + credit + format) / 3, 9);
    }
  });

  it('records the Solver\'s rollouts on seeds and generated problems; seed parity keeps the seeds at RLVR\'s count, the generated ones on top', async () => {
    const steps = async (method: MethodConfig, over: Partial<LoopSettings> = {}) => {
      const x = loop(method, new ScriptedModel(), over);
      const out: StepMetrics[] = [];
      for (let i = 0; i < 4; i++) out.push((await x.l.runStep()).metrics);
      return { out, trained: x.model.trained };
    };
    const rlvr = await steps(METHODS.rlvr);
    const shared = await steps(METHODS.sage);
    const parity = await steps(METHODS.sage, { seedParity: true });
    // RLVR: 4 seed problems × 2 samples a step. Parity changes nothing for it.
    for (const m of rlvr.out) expect(m.solverRollouts).toMatchObject({ seeds: 8, generated: 0 });
    expect((await steps(METHODS.rlvr, { seedParity: true })).trained).toEqual(rlvr.trained);
    shared.out.forEach((m, step) => {
      const p = parity.out[step]!;
      // Shared: generated problems take seeds' places in a batch of 4.
      expect(m.solverRollouts!.seeds + m.solverRollouts!.generated).toBe(8);
      expect(m.solverRollouts!.generated).toBeGreaterThan(0);
      expect(m.generatedShare).toBeCloseTo(m.solverRollouts!.generated / 8, 12);
      // Parity: RLVR's seeds, and the same draw's generated problems on top.
      expect(p.solverRollouts).toMatchObject({ seeds: rlvr.out[step]!.solverRollouts!.seeds, generated: m.solverRollouts!.generated });
    });
    // The shares of the update's response tokens: the Solver's rollouts (group 'solver') split by the origin of their problem.
    for (const run of [shared, parity, rlvr]) {
      run.out.forEach((m, step) => {
        const rollouts = run.trained[step]!;
        const tokens = (rs: typeof rollouts) => rs.reduce((n, r) => n + r.completionIds.length, 0);
        const share = m.solverRollouts!.tokenShare!;
        expect(share.seeds + share.generated).toBeCloseTo(tokens(rollouts.filter((r) => r.group === 'solver')) / tokens(rollouts), 12);
        expect(share.seeds).toBeGreaterThan(0);
      });
    }
    expect(rlvr.out.every((m) => m.solverRollouts!.tokenShare!.seeds === 1)).toBe(true);
  });

  it('MAE: no Planner, the judge scores answers and that is the Solver’s reward', async () => {
    const { l, phases } = loop(METHODS.mae);
    const { metrics } = await l.runStep();
    expect(phases).not.toContain('plan');
    expect(phases).toContain('judge-answers');
    expect(metrics.rewards.planner).toBeUndefined();
    expect(metrics.rewards.solver).toBeCloseTo(0.5 * (8 / 9) + 0.5 * 1, 9);
  });

  it('MAE is validator-free: problems banked on the Judge’s quality alone, difficulty from its scores of the attempts', async () => {
    const model = new ScriptedModel();
    const { bank } = ProblemBank.fromSeeds(SEEDS, { alpha: METHODS.mae.rewards.alpha, nearDuplicate: 0.85 });
    // Validators that refuse every proposal and fail every answer: MAE must not consult them for entry or difficulty.
    const refusing = { ...validators, propose: async () => ({ unusable: 'refused' }) };
    const l = new SageLoop(model, refusing, bank, { ...DEFAULT_LOOP, method: METHODS.mae, templates: DEFAULT_TEMPLATES, proposals: 4, trainProblems: 4, solverSamples: 2, difficultySamples: 3 });
    const { metrics } = await l.runStep();
    // Proposal 0 is unparsable; 1-3 are admitted on the Judge's 9/10 although the validators refuse them.
    expect(metrics.bank).toMatchObject({ admitted: 3, admittedThisStep: 3 });
    expect(metrics.bank.rejected.unparsable).toBe(1);
    expect(metrics.bank.rejected.validator).toBe(0);
    // The pass rate is the Judge's mean score of the 3 attempts (9 → 8/9), not the validators' verdicts (1 for these sums).
    expect(bank.get('gen/0/1')!.provenance.passRates[0]).toEqual([0, 8 / 9]);
    const judgedAttempts = model.requests.find((r) => r.prompts.length === 9 && r.prompts.every((x) => x.includes('Rate the answer')));
    expect(judgedAttempts).toBeDefined();
  });

  it('RLVR: the Solver alone on the seeds; frozen roles generate but do not train', async () => {
    const rlvr = loop(METHODS.rlvr);
    const { metrics } = await rlvr.l.runStep();
    expect(rlvr.phases).toEqual(['solve', 'update']);
    expect(metrics.bank.size).toBe(4);
    expect(rlvr.model.trained[0]!.length).toBe(8);
    // Half the seeds are differences the script gets wrong: solver accuracy 1/2.
    expect(metrics.solverAccuracy).toBe(0.5);
    const frozen = loop(METHODS['sage-freeze-critic']);
    await frozen.l.runStep();
    expect(frozen.model.trained[0]!.length).toBe(4 + 4 + 8);
  });

  it('validates greedily per source and level, and stops after patience evaluations without gain', async () => {
    const model = new ScriptedModel();
    const problems = [{ ...math('v1', '2+2=?', '4'), level: 1 }, { ...math('v2', '7-2=?', '5'), level: 2, source: 'other' }];
    const { result: v, outcomes } = await validate(model, validators, problems, { templates: DEFAULT_TEMPLATES, maxNewTokens: { solver: 16, planner: 8, critic: 4 }, step: 3, unparsableScore: 0.5 });
    // Each problem's outcome beside the tallies, in the one mode asked for.
    expect(outcomes.map((o) => o.mode)).toEqual(['solver']);
    expect(outcomes[0]!.problems.map((p) => [p.id, p.verdict, p.level])).toEqual([['v1', 1, 1], ['v2', 0, 2]]);
    expect(model.requests[0]).toMatchObject({ temperature: 0, maxNewTokens: 16 });
    // No Planner or Critic asked for: the Solver alone.
    expect(model.requests).toHaveLength(1);
    expect(v.planned).toBeUndefined();
    expect(v.critic).toBeUndefined();
    expect(v).toMatchObject({ step: 3, accuracy: 0.5, perSource: { seeds: { correct: 1, total: 1 }, other: { correct: 0, total: 1 } }, perLevel: { '1': { accuracy: 1 } } });
    const es = new EarlyStopping(2);
    expect(es.record({ ...v, accuracy: 0.5 })).toBe(true);
    expect(es.record({ ...v, accuracy: 0.5 })).toBe(false);
    expect(es.stop).toBe(false);
    expect(es.record({ ...v, accuracy: 0.4 })).toBe(false);
    expect(es.stop).toBe(true);
    expect(es.best!.accuracy).toBe(0.5);
  });
});
