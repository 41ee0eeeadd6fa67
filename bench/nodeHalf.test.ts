import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stamped, writeWhole } from './nodeHalf';

describe('writeWhole', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('replaces a longer file whole, leaving nothing beside it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'whole-'));
    dirs.push(dir);
    const file = join(dir, 'gpu.json');
    writeFileSync(file, JSON.stringify({ models: Array.from({ length: 100 }, (_, i) => i) }));
    for (const n of [3, 1, 7]) {
      const text = JSON.stringify({ partial: true, models: Array.from({ length: n }, (_, i) => i) });
      writeWhole(file, text);
      expect(readFileSync(file, 'utf8')).toBe(text);
    }
    expect(readdirSync(dir)).toEqual(['gpu.json']);
    expect(existsSync(`${file}.part`)).toBe(false);
  });
});

describe('stamped', () => {
  it("puts the code's commit first in an object result, and leaves anything else as it is", () => {
    const source = { commit: 'a'.repeat(40), dirty: false };
    expect(JSON.stringify(stamped({ models: [1], partial: true }, source))).toBe(JSON.stringify({ source, models: [1], partial: true }));
    expect(stamped({ models: [] }, null)).toEqual({ source: null, models: [] });
    expect(stamped([1, 2], source)).toEqual([1, 2]);
    expect(stamped(null, source)).toBeNull();
  });
});
