import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodePlatform } from './node';

describe('the Node platform’s persistent cache', () => {
  it('keeps what each of several processes sharing the file saved, and is never left half written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-platform-'));
    const cacheFile = join(dir, 'cache.json');
    // Two platforms on one file, as two runs side by side: each loaded it before the other saved.
    const a = nodePlatform({ cacheFile });
    const b = nodePlatform({ cacheFile });
    expect(await a.loadCache()).toEqual({});
    expect(await b.loadCache()).toEqual({});
    await a.saveCache('tuning:adapter-a', '{"NN|m4":"reg"}');
    await b.saveCache('tuning:adapter-b', '{"NT|m5":"gemv"}');
    await a.saveCache('tuning:adapter-a', '{"NN|m4":"reg","NN|m5":"reg-wide"}');
    expect(await nodePlatform({ cacheFile }).loadCache()).toEqual({
      'tuning:adapter-a': '{"NN|m4":"reg","NN|m5":"reg-wide"}',
      'tuning:adapter-b': '{"NT|m5":"gemv"}',
    });
    expect(readdirSync(dir)).toEqual(['cache.json']);
    // A file that is not JSON costs its contents, nothing more: it reads as empty and is replaced.
    writeFileSync(cacheFile, '{"tuning:adapter-a": "{\\"NN|m4\\"');
    expect(await a.loadCache()).toEqual({});
    await a.saveCache('k', 'v');
    expect(JSON.parse(readFileSync(cacheFile, 'utf8'))).toEqual({ k: 'v' });
  });
});
