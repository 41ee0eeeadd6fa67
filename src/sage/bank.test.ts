import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { MathProblem, Problem } from '../data/problem';
import { rng } from '../util/random';
import { ProblemBank, type BankEvent, type Candidate } from './bank';
import { bankToJsonl, bankToVerlParquet } from './bankExport';

const OPTIONS = { alpha: 0.7, nearDuplicate: 0.85 };

/** The bytes of a Parquet file as the reader takes them. */
const arrayBufferOf = (b: Uint8Array) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

function math(id: string, statement: string, answer: string): MathProblem {
  return { id, source: 'test', format: 'qa', kind: 'math', statement, answer, raw: { question: statement, answer } };
}

const SEEDS: Problem[] = [
  math('s1', 'Tom has 5 apples and buys 3 more. How many apples does he have?', '8'),
  math('s2', 'What is 12 * 4?', '48'),
  math('s3', 'A train travels 60 km in 1 hour. How far does it go in 3 hours?', '180'),
  { id: 'c1', source: 'test', format: 'mbpp', kind: 'code', statement: 'Write a function add(a, b).', tests: { style: 'asserts', entryPoint: 'add', asserts: ['assert add(1, 2) == 3'] }, raw: { text: 'Write a function add(a, b).' } },
];

const candidate = (problem: Problem, over: Partial<Candidate> = {}): Candidate => ({
  problem,
  parents: ['s1', 's2'],
  step: 3,
  quality: 0.8,
  validatorUsable: true,
  passRate: 0.4,
  ...over,
});

describe('problem bank', () => {
  it('starts from the seeds, reporting duplicate seeds once', () => {
    const { bank, duplicates } = ProblemBank.fromSeeds([...SEEDS, math('s4', '  what IS 12 * 4? ', '48')], OPTIONS);
    expect(bank.size).toBe(4);
    expect(bank.seedCount).toBe(4);
    expect(duplicates).toEqual(['s4']);
  });

  it('admits a good new problem with its provenance and counts every rejection by reason', () => {
    const { bank } = ProblemBank.fromSeeds(SEEDS, OPTIONS);
    const events: BankEvent[] = [];
    bank.subscribe((e) => events.push(e));
    expect(bank.consider(candidate(math('g1', 'Tom has 7 apples and buys 9 more. How many apples does he have?', '16')))).toBeNull();
    expect(bank.get('g1')!.provenance).toEqual({ origin: 'generated', parents: ['s1', 's2'], step: 3, quality: 0.8, passRates: [[3, 0.4]] });
    expect(bank.consider(candidate(math('g2', 'What is 13 * 4?', '52'), { quality: 0.69 }))).toBe('quality');
    expect(bank.consider(candidate(math('g3', 'What is 14 * 4?', '56'), { validatorUsable: false }))).toBe('validator');
    expect(bank.consider(candidate(math('g4', 'what is 12 * 4?', '48')))).toBe('duplicate');
    // The same words and numbers, reworded slightly: a near-duplicate.
    expect(bank.consider(candidate(math('g5', 'A train travels 60 km in 1 hour. How far does it go in 3 hours ?!', '180')))).toBe('near-duplicate');
    bank.reject('unparsable', 3);
    expect(bank.rejected).toEqual({ unparsable: 1, quality: 1, validator: 1, duplicate: 1, 'near-duplicate': 1 });
    expect(bank.admittedCount).toBe(1);
    bank.recordPassRate('g1', 4, 0.6);
    expect(bank.get('g1')!.provenance.passRates).toEqual([[3, 0.4], [4, 0.6]]);
    expect(events.map((e) => e.type)).toEqual(['admit', 'reject', 'reject', 'reject', 'reject', 'reject', 'pass-rate']);
    // Replaying the log rebuilds the same bank: persistence is append-only.
    const again = ProblemBank.replay(SEEDS, JSON.parse(JSON.stringify(events)) as BankEvent[], OPTIONS);
    expect(again.all()).toEqual(bank.all());
    expect(again.rejected).toEqual(bank.rejected);
  });

  it('alpha 0 disables the quality filter', () => {
    const { bank } = ProblemBank.fromSeeds(SEEDS, { ...OPTIONS, alpha: 0 });
    expect(bank.consider(candidate(math('g', 'What is 99 - 4?', '95'), { quality: 0 }))).toBeNull();
  });

  it('samples distinct problems, uniformly or favouring the newest, reproducibly', () => {
    const { bank } = ProblemBank.fromSeeds(SEEDS, OPTIONS);
    for (let i = 0; i < 40; i++) bank.consider(candidate(math(`g${i}`, `What is ${i} plus ${i * 7 + 1} times ${i + 2}?`, '0')));
    const a = bank.sample(10, rng(1));
    expect(new Set(a.map((e) => e.problem.id)).size).toBe(10);
    expect(bank.sample(10, rng(1))).toEqual(a);
    expect(bank.sample(100, rng(2))).toHaveLength(44);
    const newest = bank.sample(10, rng(3), { kind: 'newest-mix', newestShare: 1, newest: 10 });
    expect(newest.every((e) => e.provenance.step === 3 && Number(e.problem.id.slice(1)) >= 30)).toBe(true);
    // Before any problem is admitted the mix draws from the seeds alone, uniformly.
    const fresh = ProblemBank.fromSeeds(SEEDS, OPTIONS).bank;
    expect(fresh.sample(2, rng(5), { kind: 'newest-mix', newestShare: 1, newest: 10 })).toHaveLength(2);
    // With fewer generated problems than `newest`, the newest window holds only them.
    const few = ProblemBank.fromSeeds(SEEDS, OPTIONS).bank;
    few.consider(candidate(math('g1', 'What is 7 + 8?', '15')));
    const mixed = few.sample(2, rng(6), { kind: 'newest-mix', newestShare: 0.5, newest: 10 });
    expect(mixed.filter((e) => e.problem.id === 'g1')).toHaveLength(1);
    const seedsOnly = bank.sample(3, rng(4), undefined, (e) => e.provenance.origin === 'seed');
    expect(seedsOnly.every((e) => e.provenance.origin === 'seed')).toBe(true);
  });

  it('exports JSONL that keeps each record and its provenance', () => {
    const { bank } = ProblemBank.fromSeeds(SEEDS, OPTIONS);
    bank.consider(candidate(math('g1', 'What is 7 + 8?', '15')));
    const lines = bankToJsonl(bank).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(5);
    expect(lines[4]).toMatchObject({ question: 'What is 7 + 8?', answer: '15', sage: { id: 'g1', origin: 'generated', quality: 0.8, parents: ['s1', 's2'] } });
  });

  it('exports a verl RL dataset whose nested columns are Parquet lists and structs', async () => {
    const { bank } = ProblemBank.fromSeeds(SEEDS, OPTIONS);
    bank.consider(candidate(math('g1', 'What is 7 + 8?', '15')));
    const bytes = bankToVerlParquet(bank);
    const file = arrayBufferOf(bytes);
    const meta = parquetMetadata(file);
    const schema = Object.fromEntries(meta.schema.map((s) => [s.name, s]));
    expect(schema.prompt).toMatchObject({ converted_type: 'LIST', num_children: 1 });
    expect(schema.list).toMatchObject({ repetition_type: 'REPEATED' });
    expect(schema.element).toMatchObject({ num_children: 2 });
    expect(schema.reward_model).toMatchObject({ num_children: 2 });
    expect(schema.reward_model!.type).toBeUndefined();
    expect(schema.content).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    const rows = (await parquetReadObjects({ file })) as Record<string, unknown>[];
    expect(rows).toHaveLength(5);
    expect(rows[0]).toMatchObject({
      data_source: 'sage-lab/test',
      ability: 'math',
      reward_model: { style: 'rule', ground_truth: '8' },
      extra_info: { split: 'train', index: 0n, id: 's1', origin: 'seed', step: 0n, quality: null },
    });
    expect(rows[0]!.prompt).toEqual([{ role: 'user', content: expect.stringContaining('Tom has 5 apples') }]);
    expect(rows[3]).toMatchObject({ ability: 'code', reward_model: { ground_truth: JSON.stringify(SEEDS[3]!.kind === 'code' && SEEDS[3]!.tests) } });
    expect(rows[4]).toMatchObject({ extra_info: { origin: 'generated', step: 3n, quality: 0.8 } });
    // A question alone has no ground truth for a rule: verl scores it with a reward model.
    const { bank: questions } = ProblemBank.fromSeeds([{ id: 'q1', source: 'test', format: 'question', kind: 'math', statement: 'Why is the sky blue?', raw: {} }], OPTIONS);
    const q = arrayBufferOf(bankToVerlParquet(questions));
    expect(((await parquetReadObjects({ file: q })) as Record<string, unknown>[])[0]).toMatchObject({ reward_model: { style: 'model', ground_truth: '' } });
  });
});
