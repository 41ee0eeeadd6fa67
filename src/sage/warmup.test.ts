import { describe, expect, it } from 'vitest';
import { answerStatement, generateProblem, generateSet, LEVELS } from '../data/curriculum';
import { recordToProblem, type Problem } from '../data/problem';
import { rng } from '../util/random';
import { criticScore, parseOutput } from './parse';
import { COMPACT_TEMPLATES, DEFAULT_TEMPLATES, OUTPUTS, render } from './templates';
import { ANSWER_TARGETS, consistentVariant, planOf, PLAN_TARGETS, PROBLEM_TARGETS } from './criticData';
import { canonicalExpression, canonicalExpressions, corpusDocuments, parseArithmetic, statesHeldOut, valueOf } from '../data/arithmeticCorpus';
import { freshSeed } from '../gpu/testUtils';
import type { GenerationRequest } from './loopContract';
import { CHALLENGER_WARMUP_NAMES, corpusProblems, ownProblemPrompts, readOwnProblem, rehearsalDocuments, SOLVER_TARGET_NAMES, warmupPairs, writeOwnProblems } from './warmup';

const SEEDS: Problem[] = [
  { id: 'a', source: 't', format: 'curriculum', kind: 'math', statement: '9-2=?', answer: '7', expression: '9-2', level: 1, raw: {} },
  { id: 'b', source: 't', format: 'curriculum', kind: 'math', statement: '3 plus 4?', answer: '7', expression: '3+4', level: 1, raw: {} },
  {
    id: 'c', source: 't', format: 'gsm8k', kind: 'math', statement: 'Ann has 3 pens and buys 2. How many?', answer: '5',
    solution: 'She has 3+2=<<3+2=5>>5 pens.\n#### 5', raw: {},
  },
  { id: 'd', source: 't', format: 'mbpp', kind: 'code', statement: 'Write add(a, b).', solution: 'def add(a, b):\n    return a + b', tests: { style: 'asserts', entryPoint: 'add', asserts: ['assert add(1, 2) == 3'] }, raw: {} },
  { id: 'e', source: 't', format: 'mbpp', kind: 'code', statement: 'Write neg(a).', solution: 'def neg(a):\n    return -a', tests: { style: 'asserts', entryPoint: 'neg', asserts: ['assert neg(1) == -1', 'assert neg(0) == 0'] }, raw: {} },
  { id: 'f', source: 't', format: 'mbpp', kind: 'code', statement: 'Write one().', solution: 'def one():\n    return 1', tests: { style: 'asserts', entryPoint: 'one', asserts: ['assert one() == 1'] }, raw: {} },
];

describe('warm-up pairs', () => {
  it('teach every role its format: each target parses cleanly with that role’s parser', () => {
    const pairs = warmupPairs(SEEDS, { templates: DEFAULT_TEMPLATES, challenger: 'seeds' as const, solverTarget: 'answer' as const, references: 2, maxSolution: 200, solverShare: 0, planVariants: 0 }, rng(1));
    const kinds = { solver: 0, planner: 0, challenger: 0, challengerCode: 0, critic: 0 };
    for (const { prompt, response } of pairs) {
      const role = prompt.includes('<plan>') ? 'planner' : prompt.includes('<solution>') ? 'challengerCode' : prompt.includes('<question>') ? 'challenger' : prompt.includes('<score>') ? 'critic' : 'solver';
      kinds[role]++;
      const spec = OUTPUTS[role === 'critic' ? 'criticProblem' : role];
      const parsed = parseOutput(response, spec);
      expect(parsed.format, `${prompt} → ${response}`).toBe(1);
      if (role === 'critic') expect([criticScore(parsed.fields.score)]).toContainEqual(expect.any(Number));
    }
    expect(kinds.solver).toBe(6 + 3); // every seed, and again with the plan where there is one
    expect(kinds.planner).toBe(3);
    expect(kinds.challenger).toBe(3);
    // Code seeds teach the code Challenger: a seed with its solution and asserts.
    expect(kinds.challengerCode).toBe(3);
    expect(pairs.some((p) => p.response === '<question>Write neg(a).</question><solution>def neg(a):\n    return -a</solution><tests>assert neg(1) == -1\nassert neg(0) == 0</tests>')).toBe(true);
    // Each seed real and corrupted; each plan matching and wrong.
    expect(kinds.critic).toBe(6 * 2 + 3 * 2);
  });

  it('repeats the Solver’s pairs to the share asked for, and keeps every other pair', () => {
    const o = { templates: DEFAULT_TEMPLATES, challenger: 'seeds' as const, solverTarget: 'answer' as const, references: 2, maxSolution: 200, solverShare: 0, planVariants: 0 };
    const isSolver = (p: { response: string }) => p.response.includes('<answer>') && !p.response.startsWith('<question>');
    const natural = warmupPairs(SEEDS, o, rng(3));
    const others = natural.filter((p) => !isSolver(p));
    for (const share of [0.5, 0.75, 0.9]) {
      const weighted = warmupPairs(SEEDS, { ...o, solverShare: share, planVariants: 0 }, rng(3));
      const solver = weighted.filter(isSolver);
      expect(weighted.filter((p) => !isSolver(p))).toHaveLength(others.length);
      expect(solver.length).toBe(Math.round((share / (1 - share)) * others.length));
      // Every Solver pair appears, none more than one copy more often than another.
      const counts = new Map<string, number>();
      for (const p of solver) counts.set(p.prompt + p.response, (counts.get(p.prompt + p.response) ?? 0) + 1);
      expect(counts.size).toBe(natural.length - others.length);
      expect(Math.max(...counts.values()) - Math.min(...counts.values())).toBeLessThanOrEqual(1);
    }
    // Below the natural share nothing is dropped.
    expect(warmupPairs(SEEDS, { ...o, solverShare: 0.1, planVariants: 0 }, rng(3))).toHaveLength(natural.length);
  });

  it('teaches the Challenger as asked: another seed, the model\'s own problems in turn, or nothing, every other pair the same', () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const o = { templates: COMPACT_TEMPLATES, solverTarget: 'answer' as const, references: 2, maxSolution: 200, solverShare: 0, planVariants: 0 };
    const sorted = (pairs: readonly object[]) => pairs.map((p) => JSON.stringify(p)).sort();
    const ownProblems = [{ question: '(2+3)*4=?', answer: '20' }, { question: 'Bo has 3 eggs.', answer: '3' }];
    const [seeds, own, none] = (['seeds', 'own', 'none'] as const).map((challenger) => warmupPairs(SEEDS, { ...o, challenger, ownProblems }, rng(seed)));
    const isChallenger = (p: { prompt: string }) => p.prompt.includes('\nHarder ');
    const taught = seeds!.filter(isChallenger);
    expect(taught).toHaveLength(6);
    expect(none!.filter(isChallenger)).toEqual([]);
    expect(sorted(none!)).toEqual(sorted(seeds!.filter((p) => !isChallenger(p))));
    // Own: the math Challenger's targets are the model's problems, taken in turn; code has none; the prompts are the seeds' ones.
    const mine = own!.filter(isChallenger);
    expect(mine).toHaveLength(3);
    expect(mine.map((p) => p.prompt).sort()).toEqual(taught.filter((p) => p.prompt.endsWith('Harder math:\n')).map((p) => p.prompt).sort());
    expect(mine.map((p) => p.response).sort()).toEqual(['<question>(2+3)*4=?</question><answer>20</answer>', '<question>(2+3)*4=?</question><answer>20</answer>', '<question>Bo has 3 eggs.</question><answer>3</answer>']);
    expect(sorted(own!.filter((p) => !isChallenger(p)))).toEqual(sorted(none!));
    expect(() => warmupPairs(SEEDS, { ...o, challenger: 'own' }, rng(seed))).toThrow(/needs problems the model wrote/);
    expect(CHALLENGER_WARMUP_NAMES).toEqual(['seeds', 'own', 'none']);
  });

  it('writes the Solver\'s targets as asked: the answer alone, a curriculum seed\'s expression and value first, or its expression with the tag at its =; worked solutions each way', () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const o = { templates: COMPACT_TEMPLATES, challenger: 'none' as const, references: 2, maxSolution: 200, solverShare: 0, planVariants: 0 };
    const [answer, worked, inline] = (['answer', 'worked', 'inline'] as const).map((solverTarget) => warmupPairs(SEEDS, { ...o, solverTarget }, rng(seed)));
    const solverOf = (pairs: typeof answer, p: Problem) => pairs!.filter((x) => x.prompt.startsWith(`Solve: ${p.statement}\n`)).map((x) => x.response);
    for (const p of SEEDS.filter((q) => q.kind === 'math')) {
      if (p.kind !== 'math') continue;
      const a = solverOf(answer, p);
      const w = solverOf(worked, p);
      const i = solverOf(inline, p);
      expect(a.length).toBeGreaterThan(0);
      expect(w).toHaveLength(a.length);
      expect(i).toHaveLength(a.length);
      if (p.solution) {
        expect(w).toEqual(a);
        expect(i).toEqual(a);
      } else if (p.expression) {
        expect(new Set(a)).toEqual(new Set([`<answer>${p.answer}</answer>`]));
        expect(new Set(w)).toEqual(new Set([`${p.expression} = ${p.answer}\n<answer>${p.answer}</answer>`]));
        expect(new Set(i)).toEqual(new Set([`${p.expression} = <answer>${p.answer}</answer>`]));
      }
    }
    // Every other pair the same.
    const notSolver = (pairs: typeof answer) => pairs!.filter((x) => !x.prompt.startsWith('Solve: ')).map((x) => JSON.stringify(x)).sort();
    expect(notSolver(worked)).toEqual(notSolver(answer));
    expect(notSolver(inline)).toEqual(notSolver(answer));
    expect(SOLVER_TARGET_NAMES).toEqual(['answer', 'worked', 'inline', 'steps', 'some-steps']);
  });

  it('works a problem of two operations or more in the corpus\'s steps, every step right; some-steps does so for about a quarter, the same problem always alike', () => {
    const seed = freshSeed();
    const ps = corpusProblems(600, seed, []) as (Problem & { kind: 'math' })[];
    const o = { templates: COMPACT_TEMPLATES, challenger: 'none' as const, references: 2, maxSolution: 160, solverShare: 0, planVariants: 0, solverProblems: ps };
    // Each target's response by the problem's prompt (the pairs come shuffled).
    const byPrompt = (pairs: { prompt: string; response: string }[]) => new Map(pairs.map((x) => [x.prompt, x.response]));
    const [worked, steps, some] = (['worked', 'steps', 'some-steps'] as const).map((solverTarget) => {
      const responses = byPrompt(warmupPairs([], { ...o, solverTarget }, rng(seed)));
      return ps.map((p) => ({ response: responses.get(render(COMPACT_TEMPLATES.solver, { problem: p.statement }))! }));
    });
    const apply = (a: number, op: string, b: number) => (op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : a / b);
    let multi = 0;
    let someInSteps = 0;
    ps.forEach((p, i) => {
      expect(worked![i]!.response).toBe(`${p.expression} = ${p.answer}\n<answer>${p.answer}</answer>`);
      const ops = p.expression!.match(/[-+*/]/g)!.length;
      const s = steps![i]!.response;
      // One operation, or a step out of the corpus's 0..999 (`12-19+8`): the one-line form.
      if (ops < 2 || valueOf(parseArithmetic(p.expression!)) === null) {
        expect(s, p.expression).toBe(worked![i]!.response);
        expect(some![i]!.response).toBe(worked![i]!.response);
        return;
      }
      multi++;
      // `EXPR: a op b = v, ... = answer.` then the tag; every step's arithmetic right.
      const m = /^(.+): (.+)\.\n<answer>(-?\d+)<\/answer>$/.exec(s);
      expect(m, s).not.toBeNull();
      expect(canonicalExpression(m![1]!)).toBe(canonicalExpression(p.expression!));
      const done = m![2]!.split(', ').map((step) => /^(\d+)([-+*/])(\d+) = (\d+)$/.exec(step)!);
      expect(done).toHaveLength(ops);
      for (const d of done) expect(apply(Number(d[1]), d[2]!, Number(d[3])), d[0]).toBe(Number(d[4]));
      expect(done.at(-1)![4]).toBe(p.answer);
      expect(m![3]).toBe(p.answer);
      expect([s, worked![i]!.response]).toContain(some![i]!.response);
      if (some![i]!.response === s) someInSteps++;
    });
    expect(multi).toBeGreaterThan(300);
    expect(someInSteps / multi).toBeGreaterThan(0.15);
    expect(someInSteps / multi).toBeLessThan(0.35);
    // The choice is the problem's: the same problems under another draw are written alike.
    const again = byPrompt(warmupPairs([], { ...o, solverTarget: 'some-steps' }, rng(seed + 1)));
    expect(ps.map((p) => again.get(render(COMPACT_TEMPLATES.solver, { problem: p.statement })))).toEqual(some!.map((x) => x.response));
  });

  it('prompts the model to continue reference seeds, and reads back the first problem it states with its claim', () => {
    const random = rng(Math.floor(Math.random() * 2 ** 31));
    const prompts = ownProblemPrompts(SEEDS, 20, { templates: COMPACT_TEMPLATES, references: 2 }, random);
    const lines = SEEDS.filter((p) => p.kind === 'math').map((p) => `${p.statement} ${p.answer}`);
    for (const p of prompts) {
      expect(p.endsWith('\n')).toBe(true);
      const refs = p.slice(0, -1).split('\n');
      expect(refs).toHaveLength(2);
      for (const r of refs) expect(lines).toContain(r);
    }
    // The first problem stated, the longest question the environment reads, and the claim after it, right or wrong.
    expect(readOwnProblem('2-0 = 2. Ivy has 3 toys and gets 15 more. How many? 3+15 = 19. 5+5=? The answer is 10.')).toEqual({ question: 'Ivy has 3 toys and gets 15 more. How many?', answer: '19' });
    expect(readOwnProblem('6 = 48. (6+10)*2-7=? (6+10)*2-7 = 15. 2+2=? 4')).toEqual({ question: '(6+10)*2-7=?', answer: '15' });
    expect(readOwnProblem('Sum: 2+3=? 5\nHal adds 1 to 2: 2+1=? 3')).toEqual({ question: 'Sum: 2+3=?', answer: '5' });
    // Skipped: a question the environment does not read, one without an answer, a line after the first.
    expect(readOwnProblem('How are you? Fine, 3 of us. 4-1=? The answer is 3.')).toEqual({ question: '4-1=?', answer: '3' });
    expect(readOwnProblem('4-1=? The answer is three. How old is Bo? 7. 5+2 = 7.')).toBeNull();
    expect(readOwnProblem('The answer is 0.\n4-1=? 3')).toBeNull();
    // A reference line of any level reads back as the problem and answer it renders.
    for (let i = 0; i < 50; i++) {
      const p = generateProblem(LEVELS[i % LEVELS.length]!, random);
      expect(readOwnProblem(`${p.question} ${p.answer}`)).toEqual({ question: p.question, answer: p.answer });
    }
  });

  it('plans are the expression or the solution’s steps without calculator notes', () => {
    expect(planOf(SEEDS[0]!)).toBe('Compute 9-2.');
    expect(planOf(SEEDS[2]!)).toBe('1. She has 3+2=5 pens.');
    expect(planOf(SEEDS[3]!)).toBeNull();
  });

  it('grades the Critic: real problems and matching plans high, each corruption at its own lower target', () => {
    const o = { templates: DEFAULT_TEMPLATES, challenger: 'seeds' as const, solverTarget: 'answer' as const, references: 2, maxSolution: 200, solverShare: 0, planVariants: 0 };
    const a = warmupPairs(SEEDS, o, rng(7));
    expect(warmupPairs(SEEDS, o, rng(7))).toEqual(a);
    const scoreOf = (p: { response: string }) => Number(/<score>(\d+)<\/score>/.exec(p.response)![1]);
    const problems = a.filter((p) => p.prompt.includes('Rate its quality'));
    const real = problems.filter((p) => SEEDS.some((s) => p.prompt === `Problem: ${s.statement}\nRate its quality from 1 to 10 as <score>N</score>.\n`));
    expect(real).toHaveLength(SEEDS.length);
    expect(real.every((p) => scoreOf(p) === PROBLEM_TARGETS.real)).toBe(true);
    const corrupted = problems.filter((p) => !real.includes(p));
    expect(corrupted).toHaveLength(SEEDS.length);
    expect(corrupted.every((p) => scoreOf(p) < 8)).toBe(true);
    const plans = a.filter((p) => p.prompt.includes('Rate the plan'));
    for (const s of SEEDS.filter((q) => planOf(q))) {
      const mine = plans.filter((p) => p.prompt.startsWith(`Problem: ${s.statement}\n`));
      expect(mine.map(scoreOf).sort()).toEqual([expect.any(Number), PLAN_TARGETS.matching]);
      const wrong = mine.find((p) => scoreOf(p) !== PLAN_TARGETS.matching)!;
      expect(wrong.prompt).not.toContain(`Plan: ${planOf(s)}\n`);
      expect(scoreOf(wrong)).toBeLessThan(4);
    }
    // With plan variants: per seed with a shared number, that many new problems, each with its matching plan (9) and the plan altered (3).
    const b = warmupPairs(SEEDS, { ...o, planVariants: 2 }, rng(7));
    const seedPrompts = new Set(plans.map((p) => p.prompt.split('\n')[0]));
    const variants = b.filter((p) => p.prompt.includes('Rate the plan') && !seedPrompts.has(p.prompt.split('\n')[0]));
    const withShared = SEEDS.filter((q) => planOf(q) && consistentVariant(q.statement, planOf(q)!, rng(1)));
    expect(withShared.length).toBeGreaterThan(0);
    expect(variants.length).toBeGreaterThan(0);
    expect(variants.length).toBeLessThanOrEqual(2 * 2 * withShared.length);
    expect(variants.filter((p) => scoreOf(p) === PLAN_TARGETS.matching)).toHaveLength(variants.length / 2);
    expect(variants.filter((p) => scoreOf(p) === PLAN_TARGETS.altered)).toHaveLength(variants.length / 2);
    // Every other pair is kept as it was.
    expect(b.length - variants.length).toBe(a.length);
  });

  it('teaches the Judge to rate answers when asked: per math seed, its own answer high and the same with the final answer changed low', () => {
    const seed = freshSeed();
    const o = { templates: DEFAULT_TEMPLATES, challenger: 'seeds' as const, solverTarget: 'answer' as const, references: 2, maxSolution: 200, solverShare: 0, planVariants: 0 };
    const isAnswer = (p: { prompt: string }) => p.prompt.includes('Rate the answer');
    const without = warmupPairs(SEEDS, o, rng(seed));
    expect(without.filter(isAnswer), 'none unless asked (the shipped checkpoints)').toHaveLength(0);
    const pairs = warmupPairs(SEEDS, { ...o, answerPairs: 2 }, rng(seed));
    const rated = pairs.filter(isAnswer);
    const math = SEEDS.filter((q) => q.kind === 'math');
    expect(rated).toHaveLength(2 * 2 * math.length);
    for (const q of math) {
      const mine = rated.filter((p) => p.prompt.startsWith(`Problem: ${q.statement}\n`));
      expect(mine).toHaveLength(4);
      for (const p of mine) {
        expect(p.prompt).toBe(render(DEFAULT_TEMPLATES.criticAnswer, { problem: q.statement, answer: /\nAnswer: ([\s\S]*)\nRate the answer/.exec(p.prompt)![1]! }));
        const answer = /<answer>([\s\S]*?)<\/answer>/.exec(p.prompt)![1]!.trim();
        const score = criticScore(parseOutput(p.response, OUTPUTS.criticAnswer).fields.score);
        // The seed's answer rated right; any other number in the answer tag rated wrong (as the loop reads a rating, 1-10 onto 0-1).
        const target = answer === q.answer ? ANSWER_TARGETS.right : ANSWER_TARGETS.wrong;
        expect(score, `${q.statement}: ${answer}`).toBeCloseTo((target - 1) / 9, 12);
      }
      expect(mine.filter((p) => p.response === `<score>${ANSWER_TARGETS.wrong}</score>`)).toHaveLength(2);
    }
    // No other pair is added or dropped. The answers' changes draw from the same random stream,
    // so the draws after them differ: the plan pairs, some of which a draw may leave out
    // (consistentVariant finds no shared number), are compared as a kind, every other kind by count.
    const isPlan = (p: { prompt: string }) => p.prompt.includes('Rate the plan');
    const counts = (xs: { prompt: string }[]) => [xs.filter((p) => !isPlan(p)).length, xs.some(isPlan)];
    expect(counts(pairs.filter((p) => !isAnswer(p)))).toEqual(counts(without));
  });
});

/** 60 curriculum problems a level from `seed`, read as a held-out set is. */
function heldOutSet(seed: number) {
  return generateSet({ 1: 60, 2: 60, 3: 60, 4: 60, 5: 60 }, seed).map((record, i) => {
    const d = recordToProblem(record as unknown as Record<string, unknown>, 'validation', `v${i}`);
    if (!('problem' in d)) throw new Error(d.error);
    return d.problem;
  });
}

describe('rehearsal in the warm-up', () => {
  it('adds corpus documents at the share asked, none stating a held-out expression, whole or as a part', () => {
    const seed = freshSeed();
    const heldOut = heldOutSet(seed);
    const excluded = canonicalExpressions(heldOut);
    expect(rehearsalDocuments(120, 0, seed, heldOut)).toEqual([]);
    const docs = rehearsalDocuments(120, 0.6, seed, heldOut);
    // 60% of the examples: 180 documents beside 120 pairs.
    expect(docs).toHaveLength(180);
    // The corpus's own stream from this seed, with its expressions, none held out.
    const stream = corpusDocuments(seed, excluded);
    for (const d of docs) {
      const source = stream.next().value!;
      expect(d.text).toBe(source.text);
      expect(statesHeldOut(source.expressions, excluded), `seed ${seed}: ${d.text}`).toBe(false);
    }
    expect(() => rehearsalDocuments(10, 1, seed, heldOut)).toThrow(/below 1/);
  });
});

describe("the corpus's problems for the Solver", () => {
  it('draws questions of every level in curriculum styles, each read back to its expression and value, none stating a held-out expression', () => {
    const seed = freshSeed();
    const heldOut = heldOutSet(seed);
    const excluded = canonicalExpressions(heldOut);
    const ps = corpusProblems(600, seed, heldOut);
    expect(ps).toHaveLength(600);
    expect(corpusProblems(0, seed, heldOut)).toEqual([]);
    expect(new Set(ps.map((p) => p.level))).toEqual(new Set(LEVELS));
    for (const p of ps) {
      if (p.kind !== 'math') throw new Error('a math problem');
      // The statement is a curriculum style that reads back to the expression, whose value is the answer.
      const read = answerStatement(p.statement);
      if ('error' in read) throw new Error(`${p.statement}: ${read.error}`);
      expect(canonicalExpression(read.expression)).toBe(canonicalExpression(p.expression!));
      // (Its level is the style's: a bare sum reads as level 1 whatever level drew it.)
      expect(read.answer).toBe(p.answer);
      expect(statesHeldOut([p.expression!], excluded), `seed ${seed}: ${p.statement}`).toBe(false);
    }
    // Taught to the Solver alone, in the task's format, beside the seeds' pairs.
    const o = { templates: COMPACT_TEMPLATES, challenger: 'none' as const, solverTarget: 'worked' as const, references: 2, maxSolution: 160, solverShare: 0, planVariants: 0 };
    const without = warmupPairs(SEEDS, o, rng(seed));
    const withCorpus = warmupPairs(SEEDS, { ...o, solverProblems: ps }, rng(seed));
    expect(withCorpus.length - without.length).toBe(ps.length);
    for (const p of ps.slice(0, 50)) {
      const pair = withCorpus.find((x) => x.prompt === render(COMPACT_TEMPLATES.solver, { problem: p.statement }))!;
      expect(pair.response).toBe(`${(p as Problem & { kind: 'math' }).expression} = ${(p as Problem & { kind: 'math' }).answer}\n<answer>${(p as Problem & { kind: 'math' }).answer}</answer>`);
    }
  });
});

describe('writeOwnProblems', () => {
  it('asks one continuation a math seed, as the run draws its prompts, and keeps the problems the environment reads', async () => {
    const seed = freshSeed();
    // The seeds as a run holds them: curriculum problems of two levels and the code and GSM8K ones above (only math seeds with an answer are continued).
    const seeds = [...heldOutSet(seed).filter((p) => p.level! <= 2).slice(0, 40), ...SEEDS];
    const s = { templates: COMPACT_TEMPLATES, references: 3, seed, temperature: 1, topK: 0, topP: 1, maxNewTokens: { challenger: 96 } };
    const asked: GenerationRequest[] = [];
    // Every other continuation states a problem with its answer; the rest state none.
    const texts = (n: number) => Array.from({ length: n }, (_, i) => ({ text: i % 2 ? 'no problem here' : `(${i}+2)*3=? ${(i + 2) * 3}.` }));
    const { written, read } = await writeOwnProblems(async (r) => (asked.push(r), texts(r.prompts.length)), seeds, s);
    const math = seeds.filter((p) => p.kind === 'math' && p.answer !== undefined).length;
    expect(asked).toHaveLength(1);
    expect(asked[0]!.prompts).toEqual(ownProblemPrompts(seeds, math, s, rng(seed + 1)));
    expect(asked[0]).toMatchObject({ maxNewTokens: 96, seed, stop: ['\n'] });
    expect(written).toBe(math);
    expect(read).toEqual(texts(math).flatMap((t) => readOwnProblem(t.text) ?? []));
    expect(read).toHaveLength(Math.ceil(math / 2));
    await expect(writeOwnProblems(async () => [], [], s)).rejects.toThrow('the seeds hold none with an answer');
  });
});
