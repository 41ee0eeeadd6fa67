/**
 * Validation, greedy, on the held-out split: pass@1 of the Solver alone, overall and per
 * source and level; for a method with a Planner, the same in its own inference mode (the
 * Planner plans, the Critic scores the plan, the Solver sees it when it passes the gate);
 * for a method with a Critic, its discrimination (AUC) on held-out pairs. Early stopping
 * follows the method's own mode. Every problem's outcome in every mode is kept beside the
 * tallies: a comparison of two runs on the same problems is paired by problem.
 */
import type { Problem } from '../data/problem';
import type { RewardConfig } from './config';
import { auc, type CriticProbe } from './criticData';
import type { LoopModel, Validators } from './loopContract';
import { criticScore, parseOutput } from './parse';
import { passesPlanGate } from './rewards';
import { OUTPUTS, render, stopStrings, type CriticTemplate, type TemplateName, type Templates } from './templates';

export type Tally = Record<string, { correct: number; total: number; accuracy: number }>;

export interface Accuracy {
  accuracy: number;
  perSource: Tally;
  /** Per difficulty level, where problems carry one. */
  perLevel: Tally;
}

export interface ValidationResult extends Accuracy {
  step: number;
  /** Planner, Critic and Solver as the method infers: the share of plans shown, and the accuracy. */
  planned?: Accuracy & { planShown: number };
  /**
   * The Critic's AUC: real problems against corrupted ones, a problem's own plan against wrong
   * ones, a right answer against one with a number changed (absent from records made before it was probed).
   */
  critic?: { problemAuc: number | null; planAuc: number | null; answerAuc?: number | null; pairs: { problems: number; plans: number; answers?: number } };
}

/** The inference modes a validation measures: the Solver alone, and the method's own (Planner, Critic gate, Solver). */
export type ValidationMode = 'solver' | 'planned';

/** One held-out problem's result in one mode. */
export interface ProblemOutcome {
  id: string;
  source: string;
  level?: number;
  /** The validator's verdict: 1 right, 0 wrong, in between a code problem's share of tests passed. */
  verdict: number;
  /** The `<answer>` the Solver gave (code cut to ANSWER_CHARS), or null when it gave none. */
  answer: string | null;
  /** Own mode: whether the Solver was shown the Planner's plan (it passed the Critic's gate). */
  planShown?: boolean;
}

/** One line of outcomes.jsonl: every problem of one validation in one mode. */
export interface ValidationOutcomes {
  step: number;
  mode: ValidationMode;
  problems: ProblemOutcome[];
}

/** What a validation yields: the tallies, and each problem's outcome per mode. */
export interface Validated {
  result: ValidationResult;
  outcomes: ValidationOutcomes[];
}

/** An answer's length kept in the outcomes: enough to read a wrong answer, not a whole program. */
export const ANSWER_CHARS = 200;

/** The accuracy that ranks a validation: the method's own inference mode. */
export function ownAccuracy(r: Pick<ValidationResult, 'accuracy' | 'planned'>): number {
  return r.planned?.accuracy ?? r.accuracy;
}

export interface ValidationOptions {
  templates: Templates;
  maxNewTokens: Record<'planner' | 'solver' | 'critic', number>;
  step: number;
  /** Validate in the Planner's mode too (the method has a Planner and a Critic). */
  planned?: { rewards: RewardConfig };
  /** Measure the Critic on these pairs (the method has a Critic). */
  criticProbe?: CriticProbe;
  /** How an unparsable score counts (the loop's consumers' default). */
  unparsableScore: number;
}

async function greedy(model: Pick<LoopModel, 'generate'>, template: TemplateName, prompts: string[], maxNewTokens: number): Promise<string[]> {
  if (!prompts.length) return [];
  const outs = await model.generate({ prompts, maxNewTokens, temperature: 0, topK: 0, topP: 1, seed: 0, stop: stopStrings(template) });
  return outs.map((c) => c.text);
}

function accuracyOf(problems: readonly Problem[], verdicts: readonly number[]): Accuracy {
  const tally = (key: (p: Problem) => string | undefined) => {
    const out: Tally = {};
    problems.forEach((p, i) => {
      const k = key(p);
      if (k === undefined) return;
      const t = (out[k] ??= { correct: 0, total: 0, accuracy: 0 });
      t.total++;
      if (verdicts[i]! >= 1) t.correct++;
    });
    for (const t of Object.values(out)) t.accuracy = t.correct / t.total;
    return out;
  };
  return {
    accuracy: verdicts.filter((v) => v >= 1).length / problems.length,
    perSource: tally((p) => p.source),
    perLevel: tally((p) => (p.level === undefined ? undefined : String(p.level))),
  };
}

/** Greedy Critic scores of items rendered into its template, an unparsable one counted as its consumers count it. */
export async function criticScores(
  model: Pick<LoopModel, 'generate'>,
  template: CriticTemplate,
  items: readonly Record<string, string>[],
  o: Pick<ValidationOptions, 'templates' | 'maxNewTokens' | 'unparsableScore'>,
): Promise<number[]> {
  return (await greedy(model, template, items.map((v) => render(o.templates[template], v)), o.maxNewTokens.critic)).map(
    (text) => criticScore(parseOutput(text, OUTPUTS[template]).fields.score) ?? o.unparsableScore,
  );
}

function outcomesOf(problems: readonly Problem[], texts: readonly string[], verdicts: readonly number[], shown?: ReadonlySet<number>): ProblemOutcome[] {
  return problems.map((p, i) => {
    const answer = parseOutput(texts[i]!, OUTPUTS.solver).fields.answer?.trim();
    return {
      id: p.id,
      source: p.source,
      ...(p.level === undefined ? {} : { level: p.level }),
      verdict: verdicts[i]!,
      answer: answer === undefined ? null : answer.slice(0, ANSWER_CHARS),
      ...(shown ? { planShown: shown.has(i) } : {}),
    };
  });
}

export async function validate(model: Pick<LoopModel, 'generate'>, validators: Validators, problems: readonly Problem[], o: ValidationOptions): Promise<Validated> {
  if (!problems.length) throw new Error('validation: no held-out problems');
  const t = o.templates;
  const judgeAll = (texts: string[]) => Promise.all(texts.map((text, i) => validators.judge(problems[i]!, text)));
  const scores = (template: CriticTemplate, items: Record<string, string>[]) => criticScores(model, template, items, o);

  const plain = await greedy(model, 'solver', problems.map((p) => render(t.solver, { problem: p.statement })), o.maxNewTokens.solver);
  const plainVerdicts = await judgeAll(plain);
  const result: ValidationResult = { step: o.step, ...accuracyOf(problems, plainVerdicts) };
  const outcomes: ValidationOutcomes[] = [{ step: o.step, mode: 'solver', problems: outcomesOf(problems, plain, plainVerdicts) }];

  if (o.planned) {
    const plans = (await greedy(model, 'planner', problems.map((p) => render(t.planner, { problem: p.statement })), o.maxNewTokens.planner)).map(
      (text) => parseOutput(text, OUTPUTS.planner).fields.plan?.trim() ?? '',
    );
    const withPlan = problems.map((_, i) => i).filter((i) => plans[i]);
    const planScores = await scores('criticPlan', withPlan.map((i) => ({ problem: problems[i]!.statement, plan: plans[i]! })));
    const shown = new Set(withPlan.filter((_, k) => passesPlanGate(planScores[k]!, o.planned!.rewards)));
    const texts = await greedy(
      model,
      'solverWithPlan',
      problems.map((p, i) => (shown.has(i) ? render(t.solverWithPlan, { problem: p.statement, plan: plans[i]! }) : render(t.solver, { problem: p.statement }))),
      o.maxNewTokens.solver,
    );
    const verdicts = await judgeAll(texts);
    result.planned = { ...accuracyOf(problems, verdicts), planShown: shown.size / problems.length };
    outcomes.push({ step: o.step, mode: 'planned', problems: outcomesOf(problems, texts, verdicts, shown) });
  }

  if (o.criticProbe) {
    const { problems: ps, plans, answers } = o.criticProbe;
    const problemScores = await scores('criticProblem', ps.map((x) => ({ problem: x.statement })));
    const planScores = await scores('criticPlan', plans.map((x) => ({ problem: x.problem, plan: x.plan })));
    const answerScores = await scores('criticAnswer', answers.map((x) => ({ problem: x.problem, answer: x.answer })));
    const split = <T>(xs: readonly T[], ss: number[], good: (x: T) => boolean) =>
      auc(ss.filter((_, i) => good(xs[i]!)), ss.filter((_, i) => !good(xs[i]!)));
    result.critic = {
      problemAuc: split(ps, problemScores, (x) => x.real),
      planAuc: split(plans, planScores, (x) => x.matching),
      answerAuc: split(answers, answerScores, (x) => x.right),
      pairs: { problems: ps.length / 2, plans: plans.length / 2, answers: answers.length / 2 },
    };
  }
  return { result, outcomes };
}

/** Tracks the best validation accuracy; `stop` turns true after `patience` evaluations without gain. */
export class EarlyStopping {
  best: ValidationResult | null;
  /** Evaluations since the best. */
  since: number;

  constructor(
    readonly patience: number,
    resume: { best: ValidationResult | null; since: number } = { best: null, since: 0 },
  ) {
    if (!(Number.isInteger(patience) && patience >= 1)) throw new Error(`patience must be a positive integer (got ${patience})`);
    this.best = resume.best;
    this.since = resume.since;
  }

  /** Records a result; true when it is a new best (keep that checkpoint). */
  record(result: ValidationResult): boolean {
    if (!this.best || ownAccuracy(result) > ownAccuracy(this.best)) {
      this.best = result;
      this.since = 0;
      return true;
    }
    this.since++;
    return false;
  }

  get stop(): boolean {
    return this.since >= this.patience;
  }
}
