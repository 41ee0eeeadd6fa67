import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeWhole } from './nodeHalf';

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
