/**
 * The warm-up that teaches a model trained from scratch the roles' formats before the
 * loop: seeds rendered into each role's template as SFT pairs (section 4). Solver: problem
 * → worked answer; Planner: problem → the solution's steps as a plan; Challenger: reference
 * problems → a seed's problem in the Challenger's format, taught as CHALLENGER_WARMUPS says;
 * Critic: graded scores (criticData.ts) — a real problem high, a corrupted one lower by how it
 * was corrupted; a problem's own plan high, the same plan with a wrong number or another
 * problem's plan low. A Critic taught only high scores for plans scores every plan alike, and
 * the gate it drives filters nothing.
 */
import { hasReference, type Problem } from '../data/problem';
import type { SftPair } from '../train/sft';
import { shuffle } from '../util/random';
import { alterNumber, consistentVariant, corruptProblem, PLAN_TARGETS, planOf, PROBLEM_TARGETS, steps, wrongPlan } from './criticData';
import { assertLines, referenceList, render, type Templates } from './templates';

/**
 * How the warm-up teaches the Challenger, from a prompt of reference seeds and another seed
 * written as its output (`<question>…</question>` and the answer, or the solution and tests):
 * the pair to train on, or none. Whatever the warm-up trains the Challenger to write after
 * "Harder" is what it proposes before the loop rewards anything.
 */
type ChallengerPair = (prompt: string, question: string, rest: string) => SftPair | null;

export const CHALLENGER_WARMUPS = {
  /**
   * The seed's problem written whole: the format, and that a harder problem is another seed
   * (the shipped tiny-curriculum checkpoint was warmed up so; kept to reproduce it).
   */
  seeds: (prompt, question, rest) => ({ prompt, response: `<question>${question}</question>${rest}` }),
  /**
   * The format alone: the seed's question is read but not trained on (an untrained span), its
   * tags and answer are, so that what the Challenger writes between the tags is left to the
   * model's pretraining. The answer stays taught: it is the question's value, not new content.
   */
  format: (prompt, question, rest) => ({ prompt, response: `<question>${question}</question>${rest}`, untrained: [['<question>'.length, '<question>'.length + question.length]] }),
  /** No Challenger pairs: its format is left to the prompt (a model from scratch may not learn it). */
  none: () => null,
} as const satisfies Record<string, ChallengerPair>;

export type ChallengerWarmup = keyof typeof CHALLENGER_WARMUPS;
export const CHALLENGER_WARMUP_NAMES = Object.keys(CHALLENGER_WARMUPS) as ChallengerWarmup[];

export interface WarmupOptions {
  templates: Templates;
  /** How the Challenger is taught (CHALLENGER_WARMUPS). */
  challenger: ChallengerWarmup;
  /** Reference problems shown to the Challenger. */
  references: number;
  /** Longest worked solution kept in a Solver target (bytes); longer ones give the answer alone. */
  maxSolution: number;
  /**
   * The Solver's share of the pairs, reached by repeating its pairs (never by dropping the
   * other roles'): the loop's rewards carry signal only once the Solver answers some problems.
   * At or below the natural share (one Solver pair or two of about eight per seed) nothing repeats.
   */
  solverShare: number;
  /**
   * Per seed with a plan, this many variants with a number changed alike in problem and plan
   * (consistentVariant), each taught as a matching plan and, with a number changed in the plan
   * alone, as an altered one, so that matching plans are not strings it can memorise. Measured
   * (data/models/README.md): 300 warm-up steps from the shipped checkpoint with 2 variants left
   * the plan AUC at chance (0.46, against 0.50 without), so the default is none.
   */
  planVariants: number;
}

/** Solver pairs repeated (whole copies, then a random part of one more) to make up `share` of all pairs. */
function weightSolver(solver: SftPair[], others: SftPair[], share: number, random: () => number): SftPair[] {
  if (!solver.length || share >= 1) return [...solver, ...others];
  const wanted = Math.round((share / (1 - share)) * others.length);
  if (wanted <= solver.length) return [...solver, ...others];
  const copies = Math.floor(wanted / solver.length);
  const repeated = Array.from({ length: copies }, () => solver).flat();
  return [...repeated, ...shuffle(solver, random).slice(0, wanted - repeated.length), ...others];
}

function solverTarget(p: Problem, maxSolution: number): string {
  if (p.kind === 'code') return `<answer>\n${(p.solution ?? '').trim()}\n</answer>`;
  const worked = p.solution ? steps(p.solution).join(' ') : '';
  return worked && worked.length <= maxSolution ? `${worked}\n<answer>${p.answer}</answer>` : `<answer>${p.answer}</answer>`;
}

const score = (n: number) => `<score>${n}</score>`;

export function warmupPairs(seeds: readonly Problem[], o: WarmupOptions, random: () => number): SftPair[] {
  const t = o.templates;
  const solver: SftPair[] = [];
  const pairs: SftPair[] = [];
  const math = seeds.filter((p) => p.kind === 'math');
  const code = seeds.filter((p) => assertLines(p) && p.solution);
  const teach: ChallengerPair = CHALLENGER_WARMUPS[o.challenger];
  for (const p of seeds) {
    const plan = planOf(p);
    // A question alone has no answer to teach the Solver or the Challenger: it teaches the Critic.
    if (hasReference(p)) solver.push({ prompt: render(t.solver, { problem: p.statement }), response: solverTarget(p, o.maxSolution) });
    if (plan) {
      solver.push({ prompt: render(t.solverWithPlan, { problem: p.statement, plan }), response: solverTarget(p, o.maxSolution) });
      pairs.push({ prompt: render(t.planner, { problem: p.statement }), response: `<plan>${plan}</plan>` });
      pairs.push({ prompt: render(t.criticPlan, { problem: p.statement, plan }), response: score(PLAN_TARGETS.matching) });
      const wrong = wrongPlan(p, seeds, random);
      if (wrong) pairs.push({ prompt: render(t.criticPlan, { problem: p.statement, plan: wrong.plan }), response: score(PLAN_TARGETS[wrong.variant]) });
      for (let v = 0; v < o.planVariants; v++) {
        const variant = consistentVariant(p.statement, plan, random);
        const altered = variant && alterNumber(variant.plan, random);
        if (!variant || !altered) break;
        pairs.push({ prompt: render(t.criticPlan, { problem: variant.statement, plan: variant.plan }), response: score(PLAN_TARGETS.matching) });
        pairs.push({ prompt: render(t.criticPlan, { problem: variant.statement, plan: altered }), response: score(PLAN_TARGETS.altered) });
      }
    }
    pairs.push({ prompt: render(t.criticProblem, { problem: p.statement }), response: score(PROBLEM_TARGETS.real) });
    const bad = corruptProblem(p.statement, random);
    pairs.push({ prompt: render(t.criticProblem, { problem: bad.text }), response: score(PROBLEM_TARGETS[bad.variant]) });
    const challenger = (pair: SftPair | null) => pair && pairs.push(pair);
    if (p.kind === 'math' && p.answer !== undefined && math.length > o.references) {
      const refs = shuffle(math.filter((q) => q.id !== p.id), random).slice(0, o.references);
      challenger(teach(render(t.challenger, { references: referenceList(refs, t), kind: 'math' }), p.statement, `<answer>${p.answer}</answer>`));
    }
    // Code: another seed with its solution and its asserts (problems tested by asserts only).
    const asserts = assertLines(p);
    if (asserts && p.solution && code.length > o.references) {
      const refs = shuffle(code.filter((q) => q.id !== p.id), random).slice(0, o.references);
      challenger(teach(render(t.challengerCode, { references: referenceList(refs, t), kind: 'code' }), p.statement, `<solution>${p.solution.trim()}</solution><tests>${asserts.join('\n')}</tests>`));
    }
  }
  return shuffle(weightSolver(solver, pairs, o.solverShare, random), random);
}
