import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testPlatform } from '../gpu/testUtils';
import { createEngine } from './engine';

const seeds = readFileSync('data/seeds/curriculum-500.jsonl', 'utf8');
const held = readFileSync('data/validation/curriculum-1000.jsonl', 'utf8').trim().split('\n');

describe('engine: the held-out split by content, before a run', () => {
  it('tells how many validation problems share a seed’s content, with examples, and drops them', async () => {
    const e = createEngine(testPlatform('suite'));
    expect(await e.problemOverlap()).toBeNull();
    // The report names the levels the seeds carry (the lab pools the held-out levels beyond them).
    expect((await e.loadProblems('seeds', 'curriculum-500.jsonl', new Blob([seeds]))).levels).toEqual(['1', '2']);
    // Three seeds renamed and two held-out problems: a statement's names are not its content.
    const records = seeds.trim().split('\n').map((l) => JSON.parse(l) as { id: string; question: string; expression: string });
    const named = records.filter((r) => / (adds|takes|has) /.test(r.question)).slice(0, 3);
    const renamed = named.map((r, i) => JSON.stringify({ id: `mine-${i}`, question: r.question.replace(/^[A-Z][a-z]+/, 'Zed'), answer: '0' }));
    await e.loadProblems('validation', 'mine.jsonl', new Blob([[...renamed, ...held.slice(0, 2)].join('\n')]));
    const overlap = (await e.problemOverlap())!;
    expect(overlap).toMatchObject({ count: 3, validation: 5 });
    expect(overlap.examples).toHaveLength(3);
    // Each names the first seed with its content (the same expression, in any style).
    const first = records.find((r) => r.expression === named[0]!.expression)!;
    expect(overlap.examples[0]).toBe(`mine-0 "${named[0]!.question.replace(/^[A-Z][a-z]+/, 'Zed')}" ↔ seed ${first.id}`);
    const dropped = await e.dropOverlap();
    expect(dropped).toMatchObject({ which: 'validation', problems: 2, name: 'mine.jsonl, 3 overlapping the seeds dropped' });
    // The two held-out problems left, of level 1 (the split's first lines).
    expect(dropped.levels).toEqual([...new Set(held.slice(0, 2).map((l) => String((JSON.parse(l) as { level: number }).level)))]);
    expect(dropped.preview.map((p) => p.id)).toEqual(held.slice(0, 2).map((l) => (JSON.parse(l) as { id: string }).id));
    expect(await e.problemOverlap()).toEqual({ count: 0, validation: 2, examples: [] });
    // The seeds as their own validation: nothing would be held out, and nothing is dropped.
    await e.loadProblems('validation', 'same.jsonl', new Blob([seeds]));
    await expect(e.dropOverlap()).rejects.toThrow('every validation problem shares its content with a seed: nothing would be held out');
    expect(await e.problemOverlap()).toMatchObject({ count: 500, validation: 500 });
  });
});
