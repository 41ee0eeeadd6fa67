/**
 * The warm-up that teaches a model trained from scratch the roles' formats before the
 * loop: seeds rendered into each role's template as SFT pairs (section 4). Solver: problem
 * → worked answer; Planner: problem → the solution's steps as a plan; Challenger: reference
 * problems → another seed with its answer; Critic: real problems → high scores, corrupted
 * ones → low scores.
 */
import type { Problem } from '../data/problem';
import type { SftPair } from '../train/sft';
import { shuffle } from '../util/random';
import { assertLines, referenceList, render, type Templates } from './templates';

export interface WarmupOptions {
  templates: Templates;
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

/** A worked solution as plain steps: calculator notes and the final-answer line removed. */
function steps(solution: string): string[] {
  return solution
    .replace(/<<[^>]*>>/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('####'));
}

/** The plan for a problem: its expression (curriculum) or its solution's steps, numbered. */
export function planOf(p: Problem): string | null {
  if (p.kind === 'math' && p.expression) return `Compute ${p.expression}.`;
  if (p.kind !== 'math' || !p.solution) return null;
  const s = steps(p.solution);
  return s.length ? s.map((l, i) => `${i + 1}. ${l}`).join(' ') : null;
}

function solverTarget(p: Problem, maxSolution: number): string {
  if (p.kind === 'code') return `<answer>\n${(p.solution ?? '').trim()}\n</answer>`;
  const worked = p.solution ? steps(p.solution).join(' ') : '';
  return worked && worked.length <= maxSolution ? `${worked}\n<answer>${p.answer}</answer>` : `<answer>${p.answer}</answer>`;
}

/** A corrupted statement the Critic should score low: words shuffled, or cut short, or noise. */
function corrupt(statement: string, random: () => number): string {
  const words = statement.split(/\s+/).filter(Boolean);
  const r = random();
  if (r < 0.4 && words.length > 2) return shuffle(words, random).join(' ');
  if (r < 0.7 && words.length > 1) return words.slice(0, Math.max(1, Math.floor(words.length / 3))).join(' ');
  return Array.from({ length: Math.max(3, Math.min(40, statement.length)) }, () => String.fromCharCode(33 + Math.floor(random() * 90))).join('');
}

export function warmupPairs(seeds: readonly Problem[], o: WarmupOptions, random: () => number): SftPair[] {
  const t = o.templates;
  const solver: SftPair[] = [];
  const pairs: SftPair[] = [];
  const math = seeds.filter((p) => p.kind === 'math');
  const code = seeds.filter((p) => assertLines(p) && p.solution);
  for (const p of seeds) {
    const plan = planOf(p);
    solver.push({ prompt: render(t.solver, { problem: p.statement }), response: solverTarget(p, o.maxSolution) });
    if (plan) {
      solver.push({ prompt: render(t.solverWithPlan, { problem: p.statement, plan }), response: solverTarget(p, o.maxSolution) });
      pairs.push({ prompt: render(t.planner, { problem: p.statement }), response: `<plan>${plan}</plan>` });
      pairs.push({ prompt: render(t.criticPlan, { problem: p.statement, plan }), response: '<score>9</score>' });
    }
    pairs.push({ prompt: render(t.criticProblem, { problem: p.statement }), response: '<score>9</score>' });
    pairs.push({ prompt: render(t.criticProblem, { problem: corrupt(p.statement, random) }), response: '<score>2</score>' });
    if (p.kind === 'math' && math.length > o.references) {
      const refs = shuffle(math.filter((q) => q.id !== p.id), random).slice(0, o.references);
      pairs.push({ prompt: render(t.challenger, { references: referenceList(refs, t), kind: 'math' }), response: `<question>${p.statement}</question><answer>${p.answer}</answer>` });
    }
    // Code: another seed with its solution and its asserts (problems tested by asserts only).
    const asserts = assertLines(p);
    if (asserts && p.solution && code.length > o.references) {
      const refs = shuffle(code.filter((q) => q.id !== p.id), random).slice(0, o.references);
      pairs.push({
        prompt: render(t.challengerCode, { references: referenceList(refs, t), kind: 'code' }),
        response: `<question>${p.statement}</question><solution>${p.solution.trim()}</solution><tests>${asserts.join('\n')}</tests>`,
      });
    }
  }
  return shuffle(weightSolver(solver, pairs, o.solverShare, random), random);
}
