/**
 * The self-evolution loop over one model playing every role. Per step, each phase is one
 * batched generation: Challenger proposes → Critic scores the problems → Solver attempts
 * each new problem n times (difficulty) → the bank admits → a training batch is sampled →
 * Planner plans → Critic scores the plans → Solver solves (the plan shown only when
 * s_p ≥ beta) → validators → rewards → advantages → one policy-gradient update.
 * The step is these roles in this order for every method: what a method changes in them is a
 * named variant (variants.ts), so comparing methods never means reading different steps.
 * It orchestrates over LoopModel and Validators and knows nothing of the GPU.
 */
import { hasReference, type Problem } from '../data/problem';
import type { PolicyStepResult, Rollout } from '../train/policy';
import { rng } from '../util/random';
import { mean } from '../util/stats';
import { computeAdvantages, type Advantages, type GroupStats } from './advantages';
import type { BankEntry, Origin, ProblemBank, RejectReason } from './bank';
import type { MethodConfig, RoleName } from './config';
import type { Completion, GenerationHint, LoopModel, LoopSettings, Phase, RunShapeHints, Validators } from './loopContract';
import { criticScore, parseOutput, type Parsed } from './parse';
import { challengerReward, passesPlanGate, PLANNER_REWARDS, scoreOrDefault, type ProposalOutcome } from './rewards';
import { planVerdict, plansCheckable } from './validators';
import { OUTPUTS, referenceList, render, stopStrings, type CriticTemplate, type TemplateName } from './templates';
import { CRITIC_PLAN_REWARDS, criticFormatOnly, generated, judgingOf, SOLVER_REWARDS, trainingDraw, type About, type Checked, type CriticRewarding, type ProposalToCheck, type StepActions } from './variants';

/** One rollout kept for the transcripts. */
export interface Transcript {
  step: number;
  role: RoleName;
  template: TemplateName;
  prompt: string;
  output: string;
  fields: Record<string, string>;
  format: number;
  score?: number | null;
  verdict?: string;
  reward: number;
  /** The advantage the update gave it; null for a role that does not train, or a group left out (absent in older records). */
  advantage?: number | null;
  /** Whether its problem is a seed or one the Challenger wrote (a Challenger's own proposal: generated); absent in older records. */
  origin?: Origin;
}

export interface StepMetrics {
  step: number;
  /** Generation, validators and training over the step; `phases`: wall time from each phase boundary to the next. */
  seconds: { generation: number; validators: number; training: number; total: number; phases: Partial<Record<Phase, number>> };
  bank: { size: number; seeds: number; admitted: number; admittedThisStep: number; rejected: Record<RejectReason, number> };
  rewards: Partial<Record<RoleName, number>>;
  advantageStd: Partial<Record<RoleName, number>>;
  groups: GroupStats[];
  /** Per role, the share of its advantage groups whose rewards had no spread (no signal). */
  zeroSpreadShare: Partial<Record<RoleName, number>>;
  /** The share of the Solver's rollouts judged correct, among those on problems with a reference (null: none had one). */
  solverAccuracy: number | null;
  /** The share of the step's Solver rollouts on problems the Challenger wrote. */
  generatedShare: number;
  /**
   * The Solver's training rollouts on seeds and on generated problems (difficulty attempts
   * aside), and each one's share of the update's response tokens (null: no update ran);
   * absent in older records.
   */
  solverRollouts?: { seeds: number; generated: number; tokenShare: { seeds: number; generated: number } | null };
  /** Among the step's plans the environment can read (planVerdict), the share that compute their problem's answer; null: none readable, or no Planner. */
  plansRight: number | null;
  /** Per role: the mean completion length in tokens, and the share cut off at the token limit. */
  responses: Partial<Record<RoleName, { meanTokens: number; truncatedShare: number }>>;
  loss: PolicyStepResult | null;
  /** Kernel shape classes tuned during this step (new shapes: the step took longer for it). */
  tunedKernels: number;
  tokens: { generated: number; trained: number };
  tokensPerS: number;
}

interface Scored extends About {
  role: RoleName;
  template: TemplateName;
  prompt: string;
  completion: Completion;
  parsed: Parsed;
  reward: number;
  score?: number | null;
  verdict?: string;
}

/** A Challenger's proposal through the step: its prompt and output, then its score and its validator's check. */
interface Proposal extends ProposalToCheck {
  references: BankEntry[];
  template: 'challenger' | 'challengerCode';
  prompt: string;
  completion: Completion;
}

interface CheckedProposal extends Proposal {
  quality: number | null;
  check: Checked;
}

/** A training problem's plan as the Solver may see it; `score` undefined where the method has no Planner, 0 where there is nothing to score. */
interface Plan {
  text: string;
  score: number | null | undefined;
}

const UNPLANNED: Plan = { text: '', score: undefined };

/** What the update made of the step's trained rollouts. */
interface Update extends Advantages {
  trained: Scored[];
  loss: PolicyStepResult | null;
  trainingMs: number;
}

const NO_PROBLEM: Checked = { unusable: 'no problem in the output' };

/** A seed per (step, phase), so a run is reproducible and phases draw independent streams. */
function phaseSeed(seed: number, step: number, phase: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 2654435761) + Math.imul(step + 1, 40503) + phase * 7919) >>> 0;
}

/** The transcripts' draw has a stream of its own: sampling them leaves every other draw of the loop as it was. */
const TRANSCRIPT_STREAM = 100;

/** One item of each group (by `key`, in the order groups first appear) drawn uniformly. */
function oneOfEach<T>(items: readonly T[], key: (x: T) => string, random: () => number): T[] {
  const groups = new Map<string, T[]>();
  for (const x of items) {
    const g = groups.get(key(x));
    if (g) g.push(x);
    else groups.set(key(x), [x]);
  }
  return [...groups.values()].map((g) => g[Math.floor(random() * g.length)]!);
}

const about = (e: BankEntry): About => ({ kind: e.problem.kind, origin: e.provenance.origin });

/** Whether the method's Challenger writes problems for its bank. */
const challenges = (m: MethodConfig) => m.evolveBank && m.roles.includes('challenger');

/**
 * What a run with these settings will ask of its model: each phase's generation (and
 * validation's) with a prompt as long as its longest, rendered from the longest seeds (a
 * stand-in plan or answer as long as the problem), and whether it trains.
 */
export function runShapeHints(s: LoopSettings, seeds: readonly Problem[], heldOut: number): RunShapeHints {
  const m = s.method;
  const has = (role: RoleName) => m.roles.includes(role);
  const longest = [...seeds].sort((a, b) => b.statement.length - a.statement.length);
  const generations: GenerationHint[] = [];
  for (const kind of ['math', 'code'] as const) {
    const top = longest.filter((p) => p.kind === kind).slice(0, Math.max(1, s.references));
    if (!top.length) continue;
    const problem = top[0]!.statement;
    const t = s.templates;
    const problems = trainingDraw(s).most(s.trainProblems);
    const solve = problems * s.solverSamples;
    const add = (rows: number, distinct: number, prompt: string) => generations.push({ rows, distinct, prompt });
    add(heldOut, heldOut, render(t.solver, { problem }));
    add(solve, problems, render(has('planner') ? t.solverWithPlan : t.solver, { problem, plan: problem }));
    if (has('planner')) {
      add(problems, problems, render(t.planner, { problem }));
      add(problems, problems, render(t.criticPlan, { problem, plan: problem }));
    }
    if (m.solverReward === 'judge') add(solve, solve, render(t.criticAnswer, { problem, answer: problem }));
    if (challenges(m)) {
      add(s.proposals, s.proposals, render(t[kind === 'code' ? 'challengerCode' : 'challenger'], { references: referenceList(top, t), kind }));
      add(s.proposals, s.proposals, render(t.criticProblem, { problem }));
      add(s.proposals * s.difficultySamples, s.proposals, render(t.solver, { problem }));
      if (m.validatorFree) add(s.proposals * s.difficultySamples, s.proposals * s.difficultySamples, render(t.criticAnswer, { problem, answer: problem }));
    }
  }
  return { generations, trains: m.trained.length > 0 };
}

export class SageLoop {
  step = 0;
  private generatedTokens = 0;
  private generationMs = 0;
  private validatorMs = 0;
  /** The step's rollouts with their rewards, in the order they were made: the transcripts and the update keep it. */
  private scored: Scored[] = [];

  constructor(
    readonly model: LoopModel,
    readonly validators: Validators,
    readonly bank: ProblemBank,
    readonly settings: LoopSettings,
    /** Called at each phase boundary; a pause holds the step there until it resolves, a throw abandons it. */
    private readonly onPhase: (phase: Phase) => void | Promise<void> = () => {},
  ) {}

  /** Time the step spent held at phase boundaries (a pause), left out of its timings. */
  private heldMs = 0;
  /** The phase in flight and when it began (held time excluded), for the per-phase timings. */
  private current: { phase: Phase; since: number } | null = null;
  private phaseMs: Partial<Record<Phase, number>> = {};

  private readonly act: StepActions = {
    critic: (template, items, about, phase, rewarding) => this.critic(template, items, about, phase, rewarding),
    validate: (f) => this.timedValidator(() => f(this.validators)),
    phase: (phase) => this.phase(phase),
  };

  private endPhase(now: number): void {
    if (this.current) this.phaseMs[this.current.phase] = (this.phaseMs[this.current.phase] ?? 0) + now - this.current.since;
    this.current = null;
  }

  private async phase(phase: Phase): Promise<void> {
    const t0 = performance.now();
    this.endPhase(t0);
    await this.onPhase(phase);
    const t1 = performance.now();
    this.heldMs += t1 - t0;
    this.current = { phase, since: t1 };
  }

  /** One batched generation; a batch mixing templates stops at any of their closing tags. */
  private async generate(template: TemplateName | readonly TemplateName[], role: 'challenger' | 'planner' | 'solver' | 'critic', prompts: string[], phase: number): Promise<Completion[]> {
    if (!prompts.length) return [];
    const s = this.settings;
    const t0 = performance.now();
    const out = await this.model.generate({
      prompts,
      maxNewTokens: s.maxNewTokens[role],
      temperature: s.temperature,
      topK: s.topK,
      topP: s.topP,
      seed: phaseSeed(s.seed, this.step, phase),
      stop: [...new Set((typeof template === 'string' ? [template] : template).flatMap(stopStrings))],
    });
    this.generationMs += performance.now() - t0;
    for (const c of out) this.generatedTokens += c.completionIds.length;
    return out;
  }

  private async timedValidator<T>(f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await f();
    } finally {
      this.validatorMs += performance.now() - t0;
    }
  }

  /** Critic scores for (problem, plan?, answer?) items; null where unparsable. */
  private async critic(template: CriticTemplate, items: Record<string, string>[], about: About[], phase: number, rewarding: CriticRewarding = criticFormatOnly): Promise<(number | null)[]> {
    const prompts = items.map((v) => render(this.settings.templates[template], v));
    const outs = await this.generate(template, 'critic', prompts, phase);
    return outs.map((c, i) => {
      const parsed = parseOutput(c.text, OUTPUTS[template]);
      const score = criticScore(parsed.fields.score);
      // An unparsable score earns the Critic no format reward.
      const format = score === null ? 0 : parsed.format;
      this.scored.push({ role: 'critic', template, ...about[i]!, prompt: prompts[i]!, completion: c, parsed, score, ...rewarding({ score, format }, i) });
      return score;
    });
  }

  /** Runs one step; returns its metrics and a sample of transcripts. */
  async runStep(): Promise<{ metrics: StepMetrics; transcripts: Transcript[] }> {
    const s = this.settings;
    const started = this.begin();
    const random = rng(phaseSeed(s.seed, this.step, 99));
    const admittedBefore = this.bank.admittedCount;

    await this.challenge(random);
    const batch = trainingDraw(s).draw(this.bank, s.trainProblems, random, s.sampling);
    const { plans, plansRight } = await this.plan(batch);
    const solved = await this.solve(batch, plans);
    const update = await this.update();

    const ended = performance.now();
    this.endPhase(ended);
    const metrics = this.metrics({ ...solved, batch, plansRight, update, admittedBefore, totalMs: ended - started - this.heldMs });
    const transcripts = this.transcripts(this.scored, new Map(update.trained.map((x, i) => [x, update.kept[i] ? update.advantages[i]! : null])));
    this.step++;
    return { metrics, transcripts };
  }

  /** Starts the step's counters afresh; returns when it began. */
  private begin(): number {
    this.generationMs = 0;
    this.validatorMs = 0;
    this.generatedTokens = 0;
    this.heldMs = 0;
    this.phaseMs = {};
    this.current = null;
    this.scored = [];
    return performance.now();
  }

  /** Only a method that grows its bank has the Challenger write problems. */
  private async challenge(random: () => number): Promise<void> {
    if (!challenges(this.settings.method)) return;
    const proposals = await this.propose(random);
    const checked = await this.scoreProblems(proposals);
    const passRates = await this.difficulty(checked);
    await this.admit(checked, passRates);
  }

  private async propose(random: () => number): Promise<Proposal[]> {
    const s = this.settings;
    await this.phase('propose');
    // Each proposal is of the kind of a problem drawn from the bank, so code and math are
    // proposed in the bank's proportions; its references are of that kind.
    // References are drawn uniformly: `sampling` mixes new problems into what is trained on, not into what is imitated.
    const kinds = Array.from({ length: s.proposals }, () => this.bank.sample(1, random)[0]!.problem.kind);
    const references = kinds.map((kind) => this.bank.sample(s.references, random, undefined, (e) => e.problem.kind === kind));
    const templates = kinds.map((kind): Proposal['template'] => (kind === 'code' ? 'challengerCode' : 'challenger'));
    const prompts = references.map((rs, i) => render(s.templates[templates[i]!], { references: referenceList(rs.map((e) => e.problem), s.templates), kind: kinds[i]! }));
    const outs = await this.generate(templates, 'challenger', prompts, 1);
    return outs.map((completion, i) => ({
      kind: kinds[i]!, id: `gen/${this.step}/${i}`, references: references[i]!, template: templates[i]!, prompt: prompts[i]!, completion,
      parsed: parseOutput(completion.text, OUTPUTS[templates[i]!]),
    }));
  }

  /** A proposal with nothing parsed has no problem to score or check. */
  private async scoreProblems(proposals: Proposal[]): Promise<CheckedProposal[]> {
    const m = this.settings.method;
    await this.phase('score-problems');
    const wellFormed = proposals.filter((p) => p.parsed.format > 0);
    const qualities = await this.critic('criticProblem', wellFormed.map((p) => ({ problem: p.parsed.fields.question! })), wellFormed.map((p) => generated(p.kind)), 2);
    const checks = await judgingOf(m).check(this.act, wellFormed, m.answers);
    const assessed = new Map(wellFormed.map((p, k) => [p, { quality: qualities[k]!, check: checks[k]! }]));
    return proposals.map((p) => ({ ...p, ...(assessed.get(p) ?? { quality: null, check: NO_PROBLEM }) }));
  }

  /** Only a problem that can earn the difficulty term (usable, s_q ≥ alpha) is attempted: other attempts would change no reward. */
  private async difficulty(proposals: CheckedProposal[]): Promise<Map<CheckedProposal, number>> {
    const s = this.settings;
    const r = s.method.rewards;
    await this.phase('difficulty');
    const gated = proposals.filter((p): p is CheckedProposal & { check: { problem: Problem } } => 'problem' in p.check && scoreOrDefault(p.quality, r) >= r.alpha);
    const attempts = gated.flatMap((p) => Array.from({ length: s.difficultySamples }, () => p.check.problem));
    const outs = await this.generate('solver', 'solver', attempts.map((p) => render(s.templates.solver, { problem: p.statement })), 3);
    const marks = await judgingOf(s.method).grade(this.act, attempts, outs, r);
    return new Map(gated.map((p, g) => [p, mean(marks.slice(g * s.difficultySamples, (g + 1) * s.difficultySamples))]));
  }

  /** The Challenger is paid for what the bank made of its proposal, so that no rejected one out-earns an admitted one. */
  private async admit(proposals: CheckedProposal[], passRates: Map<CheckedProposal, number>): Promise<void> {
    const s = this.settings;
    const r = s.method.rewards;
    await this.phase('admit');
    for (const p of proposals) {
      let verdict: string;
      // What the reward sees: a duplicate is invalid even when it is also below alpha (the bank counts the first reason).
      let outcome: ProposalOutcome = { kind: 'invalid' };
      if (!('problem' in p.check)) {
        this.bank.reject(p.parsed.format > 0 ? judgingOf(s.method).unusable : 'unparsable', this.step);
        verdict = p.parsed.format > 0 ? `rejected: ${p.check.unusable}` : 'rejected: unparsable';
      } else {
        const reason = this.bank.consider({
          problem: p.check.problem,
          parents: p.references.map((e) => e.problem.id),
          step: this.step,
          quality: scoreOrDefault(p.quality, r),
          validatorUsable: true,
          passRate: passRates.get(p) ?? null,
        });
        verdict = reason ? `rejected: ${reason}` : 'admitted';
        if (!reason) outcome = { kind: 'admitted', solverPassRate: passRates.get(p)! };
        // The bank stops at the first reason: below alpha, it has not looked for a duplicate yet.
        else if (reason === 'quality' && !this.bank.duplicateOf(p.check.problem)) outcome = { kind: 'below-alpha' };
      }
      const reward = challengerReward({ quality: p.quality, format: p.parsed.format, outcome }, r, s.difficulty);
      this.scored.push({ role: 'challenger', template: p.template, ...generated(p.kind), prompt: p.prompt, completion: p.completion, parsed: p.parsed, score: p.quality, verdict, reward });
    }
  }

  /** Without a Planner the Solver sees no plan and its reward has no plan term. */
  private async plan(batch: BankEntry[]): Promise<{ plans: Plan[]; plansRight: number | null }> {
    const s = this.settings;
    const m = s.method;
    if (!m.roles.includes('planner')) return { plans: batch.map(() => UNPLANNED), plansRight: null };
    await this.phase('plan');
    const prompts = batch.map((e) => render(s.templates.planner, { problem: e.problem.statement }));
    const outs = await this.generate('planner', 'planner', prompts, 4);
    const plans = outs.map((c) => parseOutput(c.text, OUTPUTS.planner));
    await this.phase('score-plans');
    const withPlan = batch.map((_, i) => i).filter((i) => plans[i]!.fields.plan?.trim());
    // What the environment computes of each problem's plan: null for no plan or one it cannot read.
    const verdicts = batch.map((e, i) => (plans[i]!.fields.plan?.trim() ? planVerdict(e.problem, plans[i]!.fields.plan!) : null));
    const rights = withPlan.map((i) => verdicts[i]!);
    const readable = rights.filter((x): x is boolean => x !== null);
    const criticReward = CRITIC_PLAN_REWARDS[m.criticReward];
    const items = withPlan.map((i) => ({ problem: batch[i]!.problem.statement, plan: plans[i]!.fields.plan! }));
    const scores = await this.critic('criticPlan', items, withPlan.map((i) => about(batch[i]!)), 5, (x, k) => criticReward({ ...x, right: rights[k]! }, m.rewards));
    // Nothing to score (no plan, an empty one) scores 0; an unparsable score of a plan stays null (0.5 for its consumers).
    const planScores: (number | null)[] = batch.map(() => 0);
    withPlan.forEach((i, k) => (planScores[i] = scores[k]!));
    const plannerReward = PLANNER_REWARDS[m.plannerReward];
    outs.forEach((c, i) =>
      this.scored.push({
        role: 'planner', template: 'planner', ...about(batch[i]!), prompt: prompts[i]!, completion: c, parsed: plans[i]!,
        score: planScores[i],
        // A problem the environment cannot check has no verdict (undefined), a missing or unreadable plan of one it can, null.
        reward: plannerReward({ planScore: planScores[i]!, right: plansCheckable(batch[i]!.problem) ? verdicts[i]! : undefined, format: plans[i]!.format }, m.rewards),
      }),
    );
    return {
      plans: plans.map((p, i) => ({ text: p.fields.plan ?? '', score: planScores[i] })),
      plansRight: readable.length ? mean(readable.map((x) => (x ? 1 : 0))) : null,
    };
  }

  /** Each problem's pass rate goes to the bank, so its history shows what the Solver can do as it trains. */
  private async solve(batch: BankEntry[], plans: Plan[]): Promise<{ items: number[]; correct: (number | null)[] }> {
    const s = this.settings;
    const m = s.method;
    const r = m.rewards;
    await this.phase('solve');
    const items = batch.flatMap((_, i) => Array.from({ length: s.solverSamples }, () => i));
    const template = ({ text, score }: Plan): TemplateName => (score !== undefined && text.trim() && passesPlanGate(score, r) ? 'solverWithPlan' : 'solver');
    const prompts = items.map((i) => render(s.templates[template(plans[i]!)], { problem: batch[i]!.problem.statement, plan: plans[i]!.text }));
    const outs = await this.generate('solver', 'solver', prompts, 6);
    // A question with no reference answer (validator-free runs) is left unchecked: the Judge's score is all it gets.
    const correct = await this.timedValidator(() =>
      Promise.all(outs.map((c, k) => {
        const p = batch[items[k]!]!.problem;
        return hasReference(p) ? this.validators.judge(p, c.text) : null;
      })),
    );
    const rewarding = SOLVER_REWARDS[m.solverReward];
    const judged = await rewarding.judge(this.act, outs.map((c, k) => ({ problem: batch[items[k]!]!.problem.statement, answer: c.text })), items.map((i) => about(batch[i]!)));
    outs.forEach((c, k) => {
      const i = items[k]!;
      const t = template(plans[i]!);
      const parsed = parseOutput(c.text, OUTPUTS[t]);
      const reward = rewarding.reward({ planScore: plans[i]!.score, correct: correct[k]!, judged: judged[k], format: parsed.format }, r);
      const verdict = correct[k] === null ? 'unchecked' : correct[k]! >= 1 ? 'correct' : 'wrong';
      this.scored.push({ role: 'solver', template: t, ...about(batch[i]!), prompt: prompts[k]!, completion: c, parsed, score: correct[k], verdict, reward });
    });
    const passed = judgingOf(m).passed(correct, judged, r);
    batch.forEach((e, i) => {
      const rates = passed.filter((_, k) => items[k] === i);
      if (rates.length) this.bank.recordPassRate(e.problem.id, this.step, mean(rates));
    });
    return { items, correct };
  }

  private async update(): Promise<Update> {
    const s = this.settings;
    await this.phase('update');
    const trained = this.scored.filter((x) => s.method.trained.includes(x.role));
    const advantages = computeAdvantages(
      trained.map((x) => ({ task: `${x.role}/${x.kind}`, prompt: x.prompt, reward: x.reward })),
      s.advantage,
      { dropZeroSpread: s.dropZeroSpread },
    );
    const rollouts: Rollout[] = trained.flatMap((x, i) =>
      advantages.kept[i] ? [{ promptIds: x.completion.promptIds, completionIds: x.completion.completionIds, oldLogprobs: x.completion.modelLogprobs, advantage: advantages.advantages[i]!, group: x.role }] : [],
    );
    // Greedy rollouts carry untempered log-probs (the sampler's convention): trained at T = 1.
    const t0 = performance.now();
    const loss = rollouts.some((x) => x.advantage !== 0) ? await this.model.train(rollouts, { lr: s.lr, temperature: s.temperature > 0 ? s.temperature : 1 }) : null;
    return { ...advantages, trained, loss, trainingMs: performance.now() - t0 };
  }

  private metrics(done: { batch: BankEntry[]; items: number[]; correct: (number | null)[]; plansRight: number | null; update: Update; admittedBefore: number; totalMs: number }): StepMetrics {
    const m = this.settings.method;
    const scored = this.scored;
    const { trained, advantages, kept, groups, spread, loss } = done.update;
    // A role's share over the groups of all its task kinds.
    const zeroSpreadShare: StepMetrics['zeroSpreadShare'] = {};
    for (const role of m.trained) {
      const mine = Object.entries(spread).filter(([task]) => task.startsWith(`${role}/`)).map(([, c]) => c);
      const total = mine.reduce((n, c) => n + c.groups, 0);
      if (total) zeroSpreadShare[role] = mine.reduce((n, c) => n + c.zero, 0) / total;
    }
    // The Solver's rollouts by the origin of their problem, and their part of the update's response tokens.
    const solverOn = (origin: Origin) => (x: Scored) => x.role === 'solver' && x.origin === origin;
    const updateTokens = (f: (x: Scored) => boolean) => trained.reduce((n, x, i) => n + (kept[i] && f(x) ? x.completion.completionIds.length : 0), 0);
    const allTokens = updateTokens(() => true);
    const solverRollouts: StepMetrics['solverRollouts'] = {
      seeds: scored.filter(solverOn('seed')).length,
      generated: scored.filter(solverOn('generated')).length,
      tokenShare: loss && allTokens ? { seeds: updateTokens(solverOn('seed')) / allTokens, generated: updateTokens(solverOn('generated')) / allTokens } : null,
    };
    const byRole = (role: RoleName) => scored.filter((x) => x.role === role);
    const responses: StepMetrics['responses'] = {};
    for (const role of m.roles) {
      const xs = byRole(role);
      if (xs.length) responses[role] = { meanTokens: mean(xs.map((x) => x.completion.completionIds.length)), truncatedShare: mean(xs.map((x) => (x.completion.truncated ? 1 : 0))) };
    }
    const rewards: StepMetrics['rewards'] = {};
    const advantageStd: StepMetrics['advantageStd'] = {};
    for (const role of m.roles) {
      const xs = byRole(role);
      if (!xs.length) continue;
      rewards[role] = mean(xs.map((x) => x.reward));
      const as = trained.map((x, i) => (x.role === role ? advantages[i]! : null)).filter((a): a is number => a !== null);
      if (as.length) {
        const m = mean(as);
        advantageStd[role] = Math.sqrt(mean(as.map((a) => (a - m) ** 2)));
      }
    }
    const checked = done.correct.filter((c): c is number => c !== null);
    return {
      step: this.step,
      seconds: {
        generation: this.generationMs / 1e3, validators: this.validatorMs / 1e3, training: done.update.trainingMs / 1e3, total: done.totalMs / 1e3,
        phases: Object.fromEntries(Object.entries(this.phaseMs).map(([k, ms]) => [k, ms / 1e3])),
      },
      bank: {
        size: this.bank.size,
        seeds: this.bank.seedCount,
        admitted: this.bank.admittedCount,
        admittedThisStep: this.bank.admittedCount - done.admittedBefore,
        rejected: { ...this.bank.rejected },
      },
      rewards,
      advantageStd,
      groups,
      zeroSpreadShare,
      solverAccuracy: checked.length ? mean(checked.map((c) => (c >= 1 ? 1 : 0))) : null,
      generatedShare: mean(done.items.map((i) => (done.batch[i]!.provenance.origin === 'generated' ? 1 : 0))),
      solverRollouts,
      plansRight: done.plansRight,
      responses,
      loss,
      tunedKernels: loss?.tuned ?? 0,
      tokens: { generated: this.generatedTokens, trained: loss?.tokens ?? 0 },
      tokensPerS: (this.generatedTokens + (loss?.tokens ?? 0)) / (done.totalMs / 1e3),
    };
  }

  /**
   * One rollout of each (role, template) of the step drawn uniformly, or every rollout
   * (transcripts 'all'). Uniform, not the first: a batch lists the newest generated problems
   * first, so the first rollout would describe the role on generated problems alone.
   */
  private transcripts(scored: readonly Scored[], advantageOf: ReadonlyMap<Scored, number | null>): Transcript[] {
    const s = this.settings;
    const kept = s.transcripts === 'all' ? scored : oneOfEach(scored, (x) => `${x.role}/${x.template}`, rng(phaseSeed(s.seed, this.step, TRANSCRIPT_STREAM)));
    return kept.map((x) => ({
      step: this.step, role: x.role, template: x.template, prompt: x.prompt, output: x.completion.text,
      fields: x.parsed.fields, format: x.parsed.format, score: x.score, verdict: x.verdict, reward: x.reward, advantage: advantageOf.get(x) ?? null, origin: x.origin,
    }));
  }
}
