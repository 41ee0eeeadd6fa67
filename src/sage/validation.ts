/**
 * Validation: greedy pass@1 of the Solver on the held-out split, overall and per source,
 * and early stopping after `patience` evaluations without a new best.
 */
import type { Problem } from '../data/problem';
import type { LoopModel, Validators } from './loop';
import { render, stopStrings, type Templates } from './templates';

export interface ValidationResult {
  step: number;
  accuracy: number;
  perSource: Record<string, { correct: number; total: number; accuracy: number }>;
  /** Per difficulty level, where problems carry one. */
  perLevel: Record<string, { correct: number; total: number; accuracy: number }>;
}

export async function validate(
  model: LoopModel,
  validators: Validators,
  problems: readonly Problem[],
  o: { templates: Templates; maxNewTokens: number; step: number },
): Promise<ValidationResult> {
  if (!problems.length) throw new Error('validation: no held-out problems');
  const outs = await model.generate({
    prompts: problems.map((p) => render(o.templates.solver, { problem: p.statement })),
    maxNewTokens: o.maxNewTokens,
    temperature: 0,
    topK: 0,
    topP: 1,
    seed: 0,
    stop: stopStrings('solver'),
  });
  const verdicts = await Promise.all(outs.map((c, i) => validators.judge(problems[i]!, c.text)));
  const tally = (key: (p: Problem) => string | undefined) => {
    const out: ValidationResult['perSource'] = {};
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
    step: o.step,
    accuracy: verdicts.filter((v) => v >= 1).length / problems.length,
    perSource: tally((p) => p.source),
    perLevel: tally((p) => (p.level === undefined ? undefined : String(p.level))),
  };
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
    if (!this.best || result.accuracy > this.best.accuracy) {
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
