import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The team's reference folder beside the repository; a user's clone has nothing there. */
const OUTSIDE = ['..', 'shared'].join('/');

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);
}

function statements(dir: string): Map<string, string> {
  const seen = new Map<string, string>();
  for (const file of readdirSync(dir)) {
    for (const line of readFileSync(`${dir}/${file}`, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      // MBPP+ inputs hold Python's non-standard JSON numbers (Infinity, NaN).
      const r = JSON.parse(line.replace(/-?\bInfinity\b|\bNaN\b/g, 'null')) as Record<string, unknown>;
      const text = String(r.question ?? r.problem ?? r.prompt ?? '');
      seen.set(text.replace(/\s+/g, ' ').trim().toLowerCase(), `${dir}/${file}`);
    }
  }
  return seen;
}

describe('the repository stands alone', () => {
  it('no tracked file refers to a folder outside the repository', () => {
    const offenders = trackedFiles().filter((f) => {
      try {
        return readFileSync(f, 'utf8').includes(OUTSIDE);
      } catch {
        return false; // deleted in the work tree
      }
    });
    expect(offenders).toEqual([]);
  });

  it('the shipped seeds and validation sets share no problem', () => {
    const seeds = statements('data/seeds');
    const validation = statements('data/validation');
    expect(seeds.size).toBe(1500); // sage-500 is four other files shuffled together; the curriculum adds 500, the ceiling's all-levels file 500 more of levels 3-5
    expect(validation.size).toBeGreaterThan(2000);
    const shared = [...seeds.keys()].filter((s) => validation.has(s));
    expect(shared).toEqual([]);
  });
});

/** The modules a source file imports by a relative path, as paths from the repository root (no extension). */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1] ?? m[2]!);
  return specs.filter((s) => s.startsWith('.')).map((s) => posix.normalize(posix.join(posix.dirname(file), s)).replace(/\.(ts|tsx|mjs|js)$/, ''));
}

/** Tracked TypeScript sources under these folders. */
function sources(...dirs: string[]): string[] {
  return trackedFiles().filter((f) => /\.tsx?$/.test(f) && dirs.some((d) => f.startsWith(`${d}/`)));
}

describe('the source keeps its rooms apart', () => {
  /** A test-only module: a test file, a helper named for tests (`testUtils.ts`, `hostileTestUtils.ts`), or the test runner's setup (`testSetup.ts`). */
  const testOnly = (path: string) => /\.test(\.tsx?)?$/.test(path) || /(testUtils|^testSetup)(\.tsx?)?$/i.test(posix.basename(path));

  it('the product and its tools import no test helper', () => {
    const offenders = sources('src', 'bench', 'scripts')
      .filter((f) => !testOnly(f))
      .flatMap((f) => relativeImports(f).filter(testOnly).map((m) => `${f} imports ${m}`));
    expect(offenders).toEqual([]);
  });

  it('the loop and the layers below it import nothing of the research reports (src/research)', () => {
    const offenders = sources('src/sage', 'src/train', 'src/model', 'src/gpu', 'src/data', 'src/verify', 'src/util', 'src/platform')
      .flatMap((f) => relativeImports(f).filter((m) => m.startsWith('src/research/')).map((m) => `${f} imports ${m}`));
    expect(offenders).toEqual([]);
  });

  /** The rooms from the top down; rooms on one rung stand side by side and import nothing of each other. */
  const LAYERS = [['ui', 'cli'], ['worker', 'research'], ['sage'], ['train'], ['model'], ['gpu'], ['platform'], ['data'], ['verify'], ['util']];
  const rung = (room: string) => LAYERS.findIndex((r) => r.includes(room));
  const roomOf = (path: string) => path.split('/')[1]!;
  const productSources = () => sources('src').filter((f) => !testOnly(f) && f.split('/').length > 2);
  const productImports = (f: string) => relativeImports(f).filter((m) => m.startsWith('src/') && !testOnly(m));

  it('every room is on a rung of the layers', () => {
    const rooms = new Set(productSources().map(roomOf));
    expect([...rooms].filter((r) => rung(r) < 0)).toEqual([]);
  });

  it('every import points down the layers, none up and none across a rung', () => {
    const offenders = productSources().flatMap((f) =>
      productImports(f)
        .filter((m) => roomOf(m) !== roomOf(f) && rung(roomOf(m)) <= rung(roomOf(f)))
        .map((m) => `${f} imports ${m}`),
    );
    expect(offenders).toEqual([]);
  });

  it("no two modules import each other, directly or round a circle, but for the page's store and its slices", () => {
    // Tarjan's strongly connected components over the product's imports.
    const paths = productSources();
    const files = new Set(paths.map((f) => f.replace(/\.tsx?$/, '')));
    const edges = new Map(paths.map((f) => [f.replace(/\.tsx?$/, ''), productImports(f).filter((m) => files.has(m))]));
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const circles: string[][] = [];
    const visit = (v: string) => {
      index.set(v, index.size);
      low.set(v, index.get(v)!);
      stack.push(v);
      for (const w of edges.get(v)!) {
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const circle = stack.splice(stack.indexOf(v));
        if (circle.length > 1) circles.push(circle.sort());
      }
    };
    for (const f of files) if (!index.has(f)) visit(f);
    const storeSlice = (m: string) => /^src\/ui\/(store|\w+Slices?)$/.test(m);
    expect(circles.filter((c) => !c.every(storeSlice))).toEqual([]);
  });
});
