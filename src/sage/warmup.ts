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
import { canonicalExpressions, corpusDocuments, corpusQuestions, parseArithmetic, workedSteps } from '../data/arithmeticCorpus';
import { hasReference, type Problem } from '../data/problem';
import type { SftPair } from '../data/sftPairs';
import type { SftDocument } from '../train/sft';
import { rng, shuffle } from '../util/random';
import type { GenerationRequest } from './loopContract';
import { alterAnswer, alterNumber, ANSWER_TARGETS, consistentVariant, corruptProblem, PLAN_TARGETS, planOf, PROBLEM_TARGETS, steps, wrongPlan } from './criticData';
import { assertLines, referenceList, render, type Templates } from './templates';
import { computedAnswer } from './validators';

/** What a Challenger writes: its question, and what follows it (the answer, or the solution and tests). */
export interface ChallengerTarget {
  question: string;
  rest: string;
}

/**
 * How the warm-up teaches the Challenger, from a prompt of reference seeds: the pair to train
 * on, or none, given another seed written as the Challenger's output and, when the model wrote
 * one, a problem of its own (ownProblems). Whatever the warm-up trains the Challenger to write
 * after "Harder" is what it proposes before the loop rewards anything.
 */
type ChallengerPair = (prompt: string, seed: ChallengerTarget, own: ChallengerTarget | undefined) => SftPair | null;

const written = (prompt: string, t: ChallengerTarget): SftPair => ({ prompt, response: `<question>${t.question}</question>${t.rest}` });

export const CHALLENGER_WARMUPS = {
  /**
   * Another seed's problem: the format, and that a harder problem is another seed (the
   * shipped tiny-curriculum checkpoint was warmed up so; kept to reproduce it).
   */
  seeds: (prompt, seed) => written(prompt, seed),
  /**
   * A problem the model wrote itself before the warm-up, continuing a list of reference seeds
   * (ownProblemPrompts, readOwnProblem), in the Challenger's tags with the answer it gave: the
   * format is taught, the content and the claim are what its pretraining puts after such
   * problems. Math only.
   */
  own: (prompt, _seed, own) => (own ? written(prompt, own) : null),
  /** No Challenger pairs: its format is left to the prompt (a model from scratch may not learn it). */
  none: () => null,
} as const satisfies Record<string, ChallengerPair>;

export type ChallengerWarmup = keyof typeof CHALLENGER_WARMUPS;
export const CHALLENGER_WARMUP_NAMES = Object.keys(CHALLENGER_WARMUPS) as ChallengerWarmup[];

/**
 * Prompts whose continuation is one more problem in the references' own style: `references`
 * math seeds rendered as the Challenger's references are, one a line, and a line break.
 */
export function ownProblemPrompts(seeds: readonly Problem[], n: number, o: { templates: Templates; references: number }, random: () => number): string[] {
  const math = seeds.filter((p) => p.kind === 'math' && p.answer !== undefined);
  return Array.from({ length: n }, () => `${referenceList(shuffle([...math], random).slice(0, o.references), o.templates)}\n`);
}

/** What the `own` problems are sampled with: the loop's sampling, the Challenger's token limit, the run's seed and prompts. */
export interface OwnProblemSettings {
  templates: Templates;
  references: number;
  seed: number;
  temperature: number;
  topK: number;
  topP: number;
  maxNewTokens: { challenger: number };
}

/**
 * Problems a model writes before its warm-up (the `own` Challenger warm-up): as many
 * continuations as there are math seeds, each of a list of reference seeds, sampled as the
 * loop samples; the first problem each states with its answer is kept (readOwnProblem). The
 * same for a run's warm-up and for a reference trainer's examples (scripts/own-problems.ts).
 */
export async function writeOwnProblems(
  generate: (request: GenerationRequest) => Promise<readonly { text: string }[]>,
  seeds: readonly Problem[],
  s: OwnProblemSettings,
): Promise<{ written: number; read: { question: string; answer: string }[] }> {
  const n = seeds.filter((p) => p.kind === 'math' && p.answer !== undefined).length;
  if (!n) throw new Error('the own Challenger warm-up continues math seeds: the seeds hold none with an answer');
  // A stream of its own: the warm-up's pairs are drawn from rng(seed) as with any other Challenger warm-up.
  const prompts = ownProblemPrompts(seeds, n, s, rng(s.seed + 1));
  const outs = await generate({ prompts, maxNewTokens: s.maxNewTokens.challenger, temperature: s.temperature, topK: s.topK, topP: s.topP, seed: s.seed, stop: ['\n'] });
  return { written: outs.length, read: outs.flatMap((c) => readOwnProblem(c.text) ?? []) };
}

/**
 * The first problem a continuation states, with the answer it gives, or null: a question ending
 * in "?" that the environment reads and can evaluate (a curriculum style, or `…=?`), the shortest
 * that starts the text or a sentence (no fact before it taken in), and the last number of the sentence after it ("The answer
 * is 27.", "(6+10)*2-7 = 15.", or a reference line's "5"), right or wrong: the model's claim.
 */
export function readOwnProblem(text: string): { question: string; answer: string } | null {
  const line = text.split('\n')[0]!.slice(0, 400);
  for (let q = line.indexOf('?'); q >= 0; q = line.indexOf('?', q + 1)) {
    const answer = /^[^\n]*?(?:\.(?=\s|$)|$)/.exec(line.slice(q + 1))![0].match(/\d+(?:\.\d+)?/g)?.at(-1);
    if (!answer) continue;
    const starts = [0, ...[...line.slice(0, q).matchAll(/[.!?]\s+/g)].map((m) => m.index + m[0].length)];
    for (const start of starts.reverse()) {
      const question = line.slice(start, q + 1).trim();
      const read = question.length > 1 ? computedAnswer(question) : null;
      if (read && !('error' in read)) return { question, answer };
    }
  }
  return null;
}

export interface WarmupOptions {
  templates: Templates;
  /** How the Challenger is taught (CHALLENGER_WARMUPS). */
  challenger: ChallengerWarmup;
  /** The model's own problems (readOwnProblem), taken in turn by the math Challenger's pairs: what `own` teaches. */
  ownProblems?: readonly { question: string; answer: string }[];
  /** Reference problems shown to the Challenger. */
  references: number;
  /** Longest worked solution kept in a Solver target (bytes); longer ones give the answer alone. */
  maxSolution: number;
  /** What the Solver's math targets work before the answer (SOLVER_TARGETS). */
  solverTarget: SolverTarget;
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
  /**
   * Per math seed with an answer, this many pairs teaching the Critic to rate an answer
   * (criticAnswer, the Judge of MAE and of the judge reward): the seed's own Solver target rated
   * ANSWER_TARGETS.right, and the same with its final answer changed (alterAnswer) rated
   * ANSWER_TARGETS.wrong. None by default, as the shipped checkpoints were made: their Judge
   * writes no rating (data/models/README.md).
   */
  answerPairs?: number;
  /**
   * Problems taught to the Solver alone, beside the seeds (corpusProblems): the task's format on
   * problems of levels the seeds do not show, none of them a seed the loop trains on.
   */
  solverProblems?: readonly Problem[];
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

/** A math target: the worked steps (when they fit in maxSolution bytes), then the answer. */
function answered(p: Problem & { kind: 'math' }, worked: string, maxSolution: number): string {
  return worked && worked.length <= maxSolution ? `${worked}\n<answer>${p.answer}</answer>` : `<answer>${p.answer}</answer>`;
}

/** A math target with a seed's worked solution, or a curriculum seed's expression and value, before the answer. */
function worked(p: Problem & { kind: 'math' }, maxSolution: number): string {
  return answered(p, p.solution ? steps(p.solution).join(' ') : p.expression ? `${p.expression} = ${p.answer}` : '', maxSolution);
}

/**
 * A curriculum problem of two operations or more worked one operation at a time as the
 * arithmetic corpus works it, the answer tag after (`(3+4)*5: 3+4 = 7, 7*5 = 35.` then
 * `<answer>35</answer>`); null for any other problem, or steps longer than maxSolution.
 */
function inSteps(p: Problem & { kind: 'math' }, maxSolution: number): string | null {
  if (p.solution || !p.expression || !/^[\d+\-*/() ]+$/.test(p.expression)) return null;
  const w = workedSteps(parseArithmetic(p.expression));
  return w && w.text.length <= maxSolution && w.text.endsWith(` = ${p.answer}.`) ? `${w.text}\n<answer>${p.answer}</answer>` : null;
}

/**
 * The share of problems `some-steps` works in steps. A quarter: enough that the Solver samples
 * steps on a hard problem a few times in a group of 8, few enough that its greedy answer stays
 * the one-line form, so that using steps where they pay is left for RL to learn.
 */
const SOME_STEPS_SHARE = 0.25;

/** A string's place in [0, 1) (FNV-1a): the same problem is always written the same way. */
function unitHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0) / 2 ** 32;
}

/**
 * How the warm-up writes the Solver's target for a problem with a reference answer: a code
 * problem's is its solution; a math problem's its answer, after what each choice works first.
 */
export const SOLVER_TARGETS = {
  /** The seed's worked solution when it has one (GSM8K's steps), else the answer alone: the shipped tiny-curriculum's. */
  answer: (p: Problem & { kind: 'math' }, maxSolution: number) => answered(p, p.solution ? steps(p.solution).join(' ') : '', maxSolution),
  /**
   * Also a curriculum seed's computation, its expression and value as an arithmetic corpus
   * writes them (`(2+3)*4 = 20`), before the answer: a model pretrained on such text then
   * computes as it learned to before it answers; with the answer alone, the tiny base model
   * answered 1 or 0 to most problems after a 50-step warm-up (data/models/README.md).
   */
  worked: (p: Problem & { kind: 'math' }, maxSolution: number) => worked(p, maxSolution),
  /**
   * As worked, but the answer tag opens right after a curriculum seed's ` = ` and holds the
   * value (`(2+3)*4 = <answer>20</answer>`): the tag follows the ` = ` that ends an expression of
   * any length, where after `value\n` a model pretrained on longer expressions went on as its
   * corpus does (`(3+2)*5-5 = 20. 10+10-10 = 10.`) once the expression was longer than the seeds'.
   */
  inline: (p: Problem & { kind: 'math' }, maxSolution: number) =>
    !p.solution && p.expression && p.expression.length <= maxSolution ? `${p.expression} = <answer>${p.answer}</answer>` : worked(p, maxSolution),
  /**
   * As worked, but a problem of two operations or more in the corpus's steps (inSteps): a
   * model pretrained on that corpus answers levels 3-5 far more often in steps than in one line
   * (docs/runs/2026-11-28-steps/).
   */
  steps: (p: Problem & { kind: 'math' }, maxSolution: number) => inSteps(p, maxSolution) ?? worked(p, maxSolution),
  /**
   * Steps for a quarter of the problems of two operations or more (SOME_STEPS_SHARE, by the
   * expression), worked for the rest: a Solver that can work in steps but answers in one line by
   * default, the condition in which RL on harder problems can teach it when steps pay.
   */
  'some-steps': (p: Problem & { kind: 'math' }, maxSolution: number) =>
    (unitHash(p.expression ?? p.statement) < SOME_STEPS_SHARE ? inSteps(p, maxSolution) : null) ?? worked(p, maxSolution),
} as const satisfies Record<string, (p: Problem & { kind: 'math' }, maxSolution: number) => string>;

export type SolverTarget = keyof typeof SOLVER_TARGETS;
export const SOLVER_TARGET_NAMES = Object.keys(SOLVER_TARGETS) as SolverTarget[];

function solverTarget(p: Problem, o: WarmupOptions): string {
  if (p.kind === 'code') return `<answer>\n${(p.solution ?? '').trim()}\n</answer>`;
  return SOLVER_TARGETS[o.solverTarget](p, o.maxSolution);
}

const score = (n: number) => `<score>${n}</score>`;

export function warmupPairs(seeds: readonly Problem[], o: WarmupOptions, random: () => number): SftPair[] {
  const t = o.templates;
  const solver: SftPair[] = [];
  const pairs: SftPair[] = [];
  const math = seeds.filter((p) => p.kind === 'math');
  const code = seeds.filter((p) => assertLines(p) && p.solution);
  const teach: ChallengerPair = CHALLENGER_WARMUPS[o.challenger];
  if (o.challenger === 'own' && !o.ownProblems?.length) throw new Error('the own Challenger warm-up needs problems the model wrote (ownProblems)');
  let owned = 0;
  const own = () => {
    const p = o.ownProblems?.[owned++ % o.ownProblems.length];
    return p && { question: p.question, rest: `<answer>${p.answer}</answer>` };
  };
  for (const p of o.solverProblems ?? []) solver.push({ prompt: render(t.solver, { problem: p.statement }), response: solverTarget(p, o) });
  for (const p of seeds) {
    const plan = planOf(p);
    // A question alone has no answer to teach the Solver or the Challenger: it teaches the Critic.
    if (hasReference(p)) solver.push({ prompt: render(t.solver, { problem: p.statement }), response: solverTarget(p, o) });
    if (plan) {
      solver.push({ prompt: render(t.solverWithPlan, { problem: p.statement, plan }), response: solverTarget(p, o) });
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
    if (p.kind === 'math' && hasReference(p)) {
      const right = solverTarget(p, o);
      for (let v = 0; v < (o.answerPairs ?? 0); v++) {
        const wrong = alterAnswer(right, random);
        if (!wrong) break;
        pairs.push({ prompt: render(t.criticAnswer, { problem: p.statement, answer: right }), response: score(ANSWER_TARGETS.right) });
        pairs.push({ prompt: render(t.criticAnswer, { problem: p.statement, answer: wrong }), response: score(ANSWER_TARGETS.wrong) });
      }
    }
    pairs.push({ prompt: render(t.criticProblem, { problem: p.statement }), response: score(PROBLEM_TARGETS.real) });
    const bad = corruptProblem(p.statement, random);
    pairs.push({ prompt: render(t.criticProblem, { problem: bad.text }), response: score(PROBLEM_TARGETS[bad.variant]) });
    const challenger = (pair: SftPair | null) => pair && pairs.push(pair);
    if (p.kind === 'math' && p.answer !== undefined && math.length > o.references) {
      const refs = shuffle(math.filter((q) => q.id !== p.id), random).slice(0, o.references);
      challenger(teach(render(t.challenger, { references: referenceList(refs, t), kind: 'math' }), { question: p.statement, rest: `<answer>${p.answer}</answer>` }, own()));
    }
    // Code: another seed with its solution and its asserts (problems tested by asserts only).
    const asserts = assertLines(p);
    if (asserts && p.solution && code.length > o.references) {
      const refs = shuffle(code.filter((q) => q.id !== p.id), random).slice(0, o.references);
      challenger(teach(render(t.challengerCode, { references: referenceList(refs, t), kind: 'code' }), { question: p.statement, rest: `<solution>${p.solution.trim()}</solution><tests>${asserts.join('\n')}</tests>` }, undefined));
    }
  }
  return shuffle(weightSolver(solver, pairs, o.solverShare, random), random);
}

/**
 * Rehearsal: documents of the arithmetic corpus tiny-arith-base was pretrained on
 * (arithmeticCorpus.ts), `share` of the warm-up's examples beside its `pairs` role pairs. A
 * warm-up on the seeds alone teaches a pretrained base their two operands and costs it what it
 * knew of longer expressions (data/models/README.md); training on its own kind of text at the
 * same time is the usual cure (InstructGPT's PPO-ptx mixes pretraining batches in for the same
 * reason). A stream of its own from `seed`; no document states an expression of `heldOut`
 * (the run's validation split), whole or as a part, so that rehearsal cannot teach its answers.
 */
export function rehearsalDocuments(pairs: number, share: number, seed: number, heldOut: readonly Problem[]): SftDocument[] {
  if (!(share > 0)) return [];
  if (!(share < 1)) throw new Error(`the rehearsal share must be below 1 (got ${share})`);
  const count = Math.round((pairs * share) / (1 - share));
  const out: SftDocument[] = [];
  for (const doc of corpusDocuments(seed, canonicalExpressions(heldOut))) {
    if (out.length >= count) break;
    out.push({ text: doc.text });
  }
  return out;
}

/**
 * The Solver's warm-up beyond the seeds: `count` problems of the arithmetic corpus's own
 * questions (corpusQuestions: levels 1-5 as the corpus weighs them, each in a curriculum style),
 * none stating an expression of `heldOut` (every held-out set), whole or as a part. Taught in
 * the task's format, they let a base answer there what it knows from its corpus on every
 * level: with the seeds' two operands alone the answer tag did not follow a longer expression
 * (data/models/README.md, warm-ups e-g). They are warm-up examples, not seeds: the loop's seeds
 * stay the seeds.
 */
export function corpusProblems(count: number, seed: number, heldOut: readonly Problem[]): Problem[] {
  const out: Problem[] = [];
  if (count <= 0) return out;
  for (const q of corpusQuestions(seed, canonicalExpressions(heldOut))) {
    out.push({ id: `corpus/L${q.level}/${seed}-${out.length + 1}`, source: 'corpus', format: 'curriculum', kind: 'math', statement: q.question, answer: String(q.value), expression: q.expression, level: q.level, raw: {} });
    if (out.length >= count) break;
  }
  return out;
}
