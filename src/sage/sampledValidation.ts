/**
 * Validation in more than one form and by sampling: what a model answers greedily and what
 * sampling can find (pass@k, Chen et al. 2021's unbiased estimator over n samples a problem),
 * per level and pooled, in the task's format (the Solver's template, judged as the loop judges
 * it) and in the arithmetic corpus's form (`EXPR =`, the text a base pretrained on that corpus
 * continues with the value). RL sharpens what sampling can already find, so pass@k in the
 * task's format bounds what a run can draw out; beside the corpus's form it shows how much of
 * what the model knows its format hides.
 */
import type { Problem } from '../data/problem';
import { passAtK, reportedKs } from '../util/stats';
import type { LoopModel, Validators } from './loopContract';
import { render, stopStrings, type Templates } from './templates';

/** How a problem is put to the model in one form, and how a continuation is judged there. */
interface ValidationForm {
  /** Whether the problem can be put in this form. */
  applies(p: Problem): boolean;
  prompt(p: Problem, templates: Templates): string;
  maxNewTokens(solverTokens: number): number;
  stop: readonly string[];
  /** 1 right, 0 wrong, in between a code problem's share of tests passed. */
  judge(p: Problem, text: string, validators: Validators): Promise<number>;
}

/** The first number a continuation writes (`-` and decimals kept), or null. */
export function firstNumber(text: string): string | null {
  return /-?\d+(?:\.\d+)?/.exec(text)?.[0] ?? null;
}

/**
 * Enough for ` VALUE.` after `EXPR =` (the corpus's values stop at 999), a little more for a
 * chain (` 7*5-2 = 33`), whose first number is then the step, not the answer: wrong, as in the
 * base's own probe (scripts/fixtures/pretrain_base.py --evaluate).
 */
const CORPUS_TOKENS = 8;

export const VALIDATION_FORMS = {
  /** The task's format: the Solver's template, its answer judged by the validators, as the loop's validation does. */
  task: {
    applies: () => true,
    prompt: (p, t) => render(t.solver, { problem: p.statement }),
    maxNewTokens: (solver) => solver,
    stop: stopStrings('solver'),
    judge: (p, text, validators) => validators.judge(p, text),
  },
  /**
   * The arithmetic corpus's form: the problem's expression then ` =` (BOS first, as every
   * prompt), right when the first number of the continuation is the answer. Problems with an
   * expression only (the curriculum's).
   */
  corpus: {
    applies: (p) => p.kind === 'math' && p.expression !== undefined && p.answer !== undefined,
    prompt: (p) => `${(p as Problem & { kind: 'math' }).expression} =`,
    maxNewTokens: () => CORPUS_TOKENS,
    stop: [],
    judge: async (p, text) => (firstNumber(text) === (p as Problem & { kind: 'math' }).answer ? 1 : 0),
  },
} as const satisfies Record<string, ValidationForm>;

export type FormName = keyof typeof VALIDATION_FORMS;
export const FORM_NAMES = Object.keys(VALIDATION_FORMS) as FormName[];

/** One problem in one form: its greedy verdict, and how many of its samples were right. */
export interface SampledOutcome {
  id: string;
  level?: number;
  greedy: number;
  /** Samples drawn (0: greedy only). */
  n: number;
  /** Samples right (verdict 1). */
  c: number;
}

/** A group's greedy accuracy and pass@k for each reported k. */
export interface SampledTally {
  problems: number;
  greedy: number;
  passAt: Record<string, number>;
}

/** One form's results: pooled over every problem, and per level. */
export interface FormResult {
  form: FormName;
  all: SampledTally;
  perLevel: Record<string, SampledTally>;
  outcomes: SampledOutcome[];
}

export interface SampledOptions {
  templates: Templates;
  /** The Solver's token limit (the task's format). */
  solverTokens: number;
  /** Samples per problem (0: greedy only). */
  samples: number;
  temperature: number;
  seed: number;
  /** Rows generated at once: n samples of a problem stay in one batch, each its own sampling stream. */
  batchRows: number;
  /** After each batch: how many of the form's batches are done (a long evaluation shows its pace). */
  onBatch?: (done: number, total: number) => void;
}

/** Greedy accuracy and the mean pass@k over a group of outcomes, for every k the samples allow. */
export function tally(outcomes: readonly SampledOutcome[], samples: number): SampledTally {
  const passAt: Record<string, number> = {};
  if (samples > 0) for (const k of reportedKs(samples)) passAt[k] = outcomes.reduce((s, o) => s + passAtK(o.n, o.c, k), 0) / outcomes.length;
  return { problems: outcomes.length, greedy: outcomes.filter((o) => o.greedy >= 1).length / outcomes.length, passAt };
}

/** Outcomes split by level (those without one left out), each level a tally. */
export function perLevel(outcomes: readonly SampledOutcome[], samples: number): Record<string, SampledTally> {
  const levels = new Map<string, SampledOutcome[]>();
  for (const o of outcomes) if (o.level !== undefined) levels.set(String(o.level), [...(levels.get(String(o.level)) ?? []), o]);
  return Object.fromEntries([...levels.entries()].sort(([a], [b]) => Number(a) - Number(b)).map(([l, os]) => [l, tally(os, samples)]));
}

/** Problems in batches of whole problems: at most `rows` rows a batch of `per` rows each (one problem at least). */
function batches<T>(items: readonly T[], per: number, rows: number): T[][] {
  const size = Math.max(1, Math.floor(rows / per));
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The problems, in one form: greedy, then `samples` samples each at the temperature, judged.
 * `greedy`, the verdicts of a greedy pass already made in this form (the loop's validation is
 * the task's), one per problem that applies, in order, spares generating it again.
 */
export async function validateForm(
  model: Pick<LoopModel, 'generate'>,
  validators: Validators,
  problems: readonly Problem[],
  name: FormName,
  o: SampledOptions,
  greedy?: readonly number[],
): Promise<FormResult> {
  const form: ValidationForm = VALIDATION_FORMS[name];
  const ps = problems.filter((p) => form.applies(p));
  if (!ps.length) throw new Error(`no held-out problem can be put in the ${name} form`);
  const maxNewTokens = form.maxNewTokens(o.solverTokens);
  const stop = [...form.stop];
  const outcomes: SampledOutcome[] = ps.map((p) => ({ id: p.id, ...(p.level === undefined ? {} : { level: p.level }), greedy: 0, n: 0, c: 0 }));
  let call = 0;
  const greedyBatches = greedy ? [] : batches(ps.map((p, i) => ({ p, i })), 1, o.batchRows);
  const sampleBatches = o.samples > 0 ? batches(ps.map((p, i) => ({ p, i })), o.samples, o.batchRows) : [];
  const total = greedyBatches.length + sampleBatches.length;
  if (greedy && greedy.length !== ps.length) throw new Error(`${greedy.length} greedy verdicts for ${ps.length} problems`);
  greedy?.forEach((v, i) => (outcomes[i]!.greedy = v));
  // Greedy: every row alike, so one problem a row.
  for (const group of greedyBatches) {
    const outs = await model.generate({ prompts: group.map(({ p }) => form.prompt(p, o.templates)), maxNewTokens, temperature: 0, topK: 0, topP: 1, seed: o.seed, stop });
    const verdicts = await Promise.all(outs.map((c, j) => form.judge(group[j]!.p, c.text, validators)));
    group.forEach(({ i }, j) => (outcomes[i]!.greedy = verdicts[j]!));
    call++;
    o.onBatch?.(call, total);
  }
  for (const group of sampleBatches) {
    const rows = group.flatMap(({ p, i }) => Array.from({ length: o.samples }, () => ({ p, i })));
    // Each batch its own seed: row b of every batch would otherwise draw the same stream.
    const outs = await model.generate({ prompts: rows.map(({ p }) => form.prompt(p, o.templates)), maxNewTokens, temperature: o.temperature, topK: 0, topP: 1, seed: o.seed + call, stop });
    const verdicts = await Promise.all(outs.map((c, j) => form.judge(rows[j]!.p, c.text, validators)));
    rows.forEach(({ i }, j) => {
      outcomes[i]!.n++;
      if (verdicts[j]! >= 1) outcomes[i]!.c++;
    });
    call++;
    o.onBatch?.(call, total);
  }
  return { form: name, all: tally(outcomes, o.samples), perLevel: perLevel(outcomes, o.samples), outcomes };
}
