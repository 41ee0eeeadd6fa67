import { describe, expect, it } from 'vitest';
import { generateProblem, type Level } from '../data/curriculum';
import type { Problem } from '../data/problem';
import { rng } from '../util/random';
import type { BankEvent } from '../sage/bank';
import { UNREADABLE } from '../sage/levels';
import type { MetricsRecord } from '../sage/run';
import { math } from '../sage/testUtils';
import { meanSe, summarize, type ComparedRun } from './compare';
import { compareTable } from './compareTable';
import { runPractice } from './practice';

// Levels 3 and up: each shape is its level's own, so a statement reads as the level it was drawn at.
const curriculum = (id: string, level: Level, random: () => number): Problem => {
  const p = generateProblem(level, random);
  return { ...math(id, p.question, p.answer), level };
};
const admit = (problem: Problem, step: number): BankEvent => ({
  type: 'admit',
  entry: { problem, provenance: { origin: 'generated', parents: [], step, quality: 1, passRates: [] } },
});
const RATES = [0, 0.25, 0.5, 0.75, 1];

interface Draw { origin: 'seed' | 'generated'; level: string; step: number; rate: number }

/** A run of `steps` steps: seeds of levels 3-4, generated problems of level 5 and unreadable ones admitted as it goes, four draws a step; its events and what each draw was. */
function randomRun(seed: number, steps: number): { seeds: Problem[]; events: BankEvent[]; draws: Draw[] } {
  const random = rng(seed);
  const seeds = Array.from({ length: 10 }, (_, j) => curriculum(`s${j}`, (3 + (j % 2)) as Level, random));
  const events: BankEvent[] = [];
  const draws: Draw[] = [];
  const pool: { id: string; origin: Draw['origin']; level: string }[] = seeds.map((p) => ({ id: p.id, origin: 'seed', level: String(p.level) }));
  for (let step = 0; step < steps; step++) {
    if (random() < 0.5) {
      const unreadable = random() < 0.4;
      const id = `g${seed}-${step}`;
      const problem = unreadable ? math(id, 'Whatever is it?', '3') : curriculum(id, 5, random);
      events.push(admit(problem, step));
      pool.push({ id, origin: 'generated', level: unreadable ? UNREADABLE : '5' });
    }
    for (let k = 0; k < 4; k++) {
      const at = pool[Math.floor(random() * pool.length)]!;
      const rate = RATES[Math.floor(random() * RATES.length)]!;
      events.push({ type: 'pass-rate', id: at.id, step, rate });
      draws.push({ origin: at.origin, level: at.level, step, rate });
    }
  }
  return { seeds, events, draws };
}

const steps = (n: number): MetricsRecord[] =>
  Array.from({ length: n }, (_, s) => ({ kind: 'step', step: s, bank: { size: 10, seeds: 10, admitted: 0, admittedThisStep: 0, rejected: {} } }) as unknown as MetricsRecord);

describe('what the Solver practised', () => {
  it('counts a run\'s draws by origin and level, within its first steps', () => {
    const { seeds, events, draws } = randomRun(1, 30);
    const cells = runPractice(events, seeds, 20);
    const kept = draws.filter((d) => d.step < 20);
    expect(cells.map((c) => `${c.origin} ${c.level}`)).toEqual(['seed 3', 'seed 4', 'generated 5', `generated ${UNREADABLE}`]);
    for (const c of cells) expect(c.rates).toEqual(kept.filter((d) => d.origin === c.origin && d.level === c.level).map((d) => d.rate));
    expect(cells.reduce((n, c) => n + c.rates.length, 0)).toBe(kept.length);
    // A draw of a problem the records do not hold: refused, naming it.
    expect(() => runPractice([...events, { type: 'pass-rate', id: 'ghost', step: 3, rate: 1 }], seeds, 20)).toThrow(/"ghost" at step 3/);
  });

  it('pools a method\'s runs: draws a run over seeds, pass rates and no-contrast shares over all draws', () => {
    const runs = [0, 1, 2].map((seed) => randomRun(10 + seed, 12));
    const compared: ComparedRun[] = runs.map((r, seed) => ({ method: 'sage', seed, records: steps(12), bankEvents: r.events, seeds: r.seeds }));
    const [s] = summarize([...compared, { method: 'rlvr', seed: 0, records: steps(12) }]);
    const rows = s!.practice!;
    expect(rows.map((p) => `${p.origin} ${p.level}`)).toEqual(['seed 3', 'seed 4', 'generated 5', `generated ${UNREADABLE}`]);
    for (const p of rows) {
      const per = runs.map((r) => r.draws.filter((d) => d.origin === p.origin && d.level === p.level));
      const all = per.flat().map((d) => d.rate);
      expect(p.draws).toEqual(meanSe(per.map((d) => d.length)));
      expect(p.passRate).toBeCloseTo(all.reduce((a, b) => a + b, 0) / all.length, 12);
      expect(p.noneRight).toBeCloseTo(all.filter((x) => x === 0).length / all.length, 12);
      expect(p.allRight).toBeCloseTo(all.filter((x) => x === 1).length / all.length, 12);
    }
    const table = compareTable(summarize(compared));
    const first = rows[0]!;
    expect(table).toContain('What the Solver practised:');
    expect(table).toContain(`| sage | seeds | level 3 | ${first.draws.mean.toFixed(1)} ± ${first.draws.se!.toFixed(1)} | ${(100 * first.passRate).toFixed(1)} | ${(100 * first.noneRight).toFixed(1)} | ${(100 * first.allRight).toFixed(1)} |`);
    expect(table).toContain(`| sage | generated | ${UNREADABLE} |`);
    // (These records have no validations: only the practice table is read here.)
    expect(table.slice(table.indexOf('What the Solver practised:')).split('\n\n')[1]).not.toContain('NaN');
    // A method whose runs have no bank events or seeds read: no rows.
    expect(summarize([{ method: 'rlvr', seed: 0, records: steps(12) }])[0]!.practice).toBeNull();
  });
});
