import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readProblemFile } from '../../data/nodeFile';
import type { CodeProblem } from '../../data/problem';
import { CodeVerifier } from './codeVerifier';
import { NodeSandboxPool } from './nodePool';
import { hostilePrograms } from './hostileTestUtils';

const TIMEOUT_MS = 1500;

/** A listener on 127.0.0.1 that counts the connections reaching it. */
async function listener(): Promise<{ server: Server; port: number; connections: () => number }> {
  let n = 0;
  const server = createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : 0, connections: () => n };
}

/** Under the fallback isolation, the programs that reach for the network or the host. */
const HOST_ESCAPES = ['import js, js.fetch', 'js process', 'pyodide.ffi', 'socket', 'os.system', 'ctypes'];

describe.each([
  ['network namespace', undefined, null],
  ['socket APIs removed', '0', HOST_ESCAPES],
])('Python sandbox in Node (%s)', (isolation, netnsEnv, only) => {
  let pool: NodeSandboxPool;
  let verifier: CodeVerifier;
  let net: Awaited<ReturnType<typeof listener>>;
  const dir = mkdtempSync(join(tmpdir(), 'sage-sandbox-'));
  const marker = join(dir, 'marker');

  beforeAll(async () => {
    const saved = process.env.SAGE_SANDBOX_NETNS;
    if (netnsEnv === undefined) delete process.env.SAGE_SANDBOX_NETNS;
    else process.env.SAGE_SANDBOX_NETNS = netnsEnv;
    pool = new NodeSandboxPool({ size: 2, timeoutMs: TIMEOUT_MS, memoryBytes: 128 * 2 ** 20, outputBytes: 1 << 20 });
    if (saved === undefined) delete process.env.SAGE_SANDBOX_NETNS;
    else process.env.SAGE_SANDBOX_NETNS = saved;
    verifier = new CodeVerifier(pool);
    net = await listener();
    await pool.warm();
  });
  afterAll(() => {
    pool?.close();
    net?.server.close();
  });

  it('says how the network is shut off', () => {
    if (isolation === 'network namespace' && pool.isolation !== isolation) return; // this OS gives no namespace: the other run covers it
    expect(pool.isolation).toBe(isolation);
  });

  it('every hostile program gets a verdict within timeout + 1 s, never passes, changes nothing outside, and leaves the pool healthy', async () => {
    const healthy = 'def f(x):\n    return x + 1\n';
    const seen: string[] = [];
    for (const h of hostilePrograms({ marker, port: net.port }).filter((p) => !only || only.includes(p.name))) {
      const t0 = performance.now();
      const v = await verifier.verifyAsserts(h.program, h.asserts ?? 'assert f(1) == 2');
      const waited = performance.now() - t0;
      seen.push(`${h.name}: ${v.status} ${v.detail ?? ''}`.slice(0, 160));
      expect(v.status, h.name).not.toBe('pass');
      if (h.expect) expect(v.status, `${h.name}: ${v.detail}`).toBe(h.expect);
      // The queue may wait for a replacement process to warm up; the job itself is bounded.
      expect(v.ms, h.name).toBeLessThan(TIMEOUT_MS + 1000);
      expect(waited, h.name).toBeLessThan(TIMEOUT_MS + 1000 + 15_000);
      expect(existsSync(marker), h.name).toBe(false);
      expect(net.connections(), h.name).toBe(0);
      const after = await verifier.verifyAsserts(healthy, 'assert f(1) == 2');
      expect(after.status, `after ${h.name}`).toBe('pass');
    }
    console.log(seen.join('\n'));
  }, 600_000);
});

describe('code verdicts', () => {
  let pool: NodeSandboxPool;
  let verifier: CodeVerifier;
  beforeAll(async () => {
    pool = new NodeSandboxPool({ size: 1, timeoutMs: 5000 });
    verifier = new CodeVerifier(pool);
    await pool.warm();
  });
  afterAll(() => pool?.close());

  it('canonical solutions pass their own tests; wrong ones fail with the failing check and a pass fraction', async () => {
    const he = (await readProblemFile('data/seeds/humaneval-87.jsonl')).problems[0] as CodeProblem;
    expect(await verifier.verify(he, he.solution!)).toMatchObject({ status: 'pass', fraction: 1 });
    const wrong = await verifier.verify(he, '    return False\n');
    expect(wrong.status).toBe('fail');
    expect(wrong.fraction).toBeGreaterThan(0);
    expect(wrong.fraction).toBeLessThan(1);
    expect(wrong.detail).toMatch(/^assert/);

    const plus = (await readProblemFile('data/seeds/mbppplus-109.jsonl')).problems.find((p) => p.id === 'Mbpp/9') as CodeProblem;
    expect(await verifier.verify(plus, plus.solution!)).toMatchObject({ status: 'pass', passed: 3, total: 3 });
    const off = await verifier.verify(plus, 'def find_Rotations(s):\n    return 1\n');
    expect(off).toMatchObject({ status: 'fail', passed: 1, total: 3 });
    expect(off.detail).toMatch(/input \["ab"\]: got 1, expected 2/);
  });

  it('MBPP assert lists and model-written asserts count each assert; errors name the exception', async () => {
    const mbpp: CodeProblem = {
      id: 'm1', source: 't', format: 'mbpp', kind: 'code', statement: 'add', raw: {},
      tests: { style: 'asserts', entryPoint: 'add', asserts: ['assert add(1, 2) == 3', 'assert add(2, 2) == 5'] },
    };
    expect(await verifier.verify(mbpp, 'def add(a, b):\n    return a + b\n')).toMatchObject({ status: 'fail', passed: 1, total: 2, detail: 'assert add(2, 2) == 5' });
    expect(await verifier.verify(mbpp, 'def add(a, b):\n    return 3 / (a - 1)\n')).toMatchObject({ status: 'error', passed: 0, total: 2, detail: 'ZeroDivisionError: division by zero' });
    expect(await verifier.verify(mbpp, 'def add(a, b) return a\n')).toMatchObject({ status: 'error', detail: expect.stringMatching(/^SyntaxError/) });
    const model = await verifier.verifyAsserts('def sq(x):\n    return x * x\n', 'assert sq(3) == 9\nfor i in range(3):\n    assert sq(i) == i * i\nassert sq(-2) == 4');
    expect(model).toMatchObject({ status: 'pass', passed: 3, total: 3, fraction: 1 });
    expect(await verifier.verifyAsserts('def sq(x):\n    raise ValueError("no")\n', 'assert sq(3) == 9')).toMatchObject({ status: 'error', detail: 'ValueError: no' });
  });
});
