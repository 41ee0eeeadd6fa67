/** A bare page for the browser tests of the Python sandbox: a Worker pool, reachable from the test. */
import { CodeVerifier } from '../src/verify/python/codeVerifier';
import { BrowserSandboxPool } from '../src/verify/python/browserPool';
import { hostilePrograms } from '../src/verify/python/hostileTestUtils';

const pool = new BrowserSandboxPool(1, { timeoutMs: 1500, memoryBytes: 128 * 2 ** 20, outputBytes: 1 << 20 });
const verifier = new CodeVerifier(pool);

Object.assign(window, {
  sandbox: {
    warm: () => pool.warm(),
    state: () => ({ cspEnforced: pool.cspEnforced, started: pool.started }),
    /** Runs the named hostile programs, each followed by a healthy one, and returns both verdicts. */
    async hostile(names: string[], port: number) {
      const out = [];
      for (const h of hostilePrograms({ marker: '/tmp/sage-browser-marker', port }).filter((p) => names.includes(p.name))) {
        const t0 = performance.now();
        const v = await verifier.verifyAsserts(h.program, h.asserts ?? 'assert f(1) == 2');
        const waited = performance.now() - t0;
        const after = await verifier.verifyAsserts('def f(x):\n    return x + 1\n', 'assert f(1) == 2');
        out.push({ name: h.name, expect: h.expect, status: v.status, detail: v.detail, ms: v.ms, waited, after: after.status });
      }
      return out;
    },
  },
});
