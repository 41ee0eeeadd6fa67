/**
 * Benchmark page. `?suite=a,b` picks suites (default: all), `?quick=1` runs the smoke-test
 * sizes. The outcome lands in `window.__benchResult`, which scripts/bench.mjs polls for;
 * progress goes to the console, which it forwards.
 */
import { adapterSummary, errorMessage, type BenchPageResult, type SuiteResult } from './suite';
import { SUITES } from './suites';

declare global {
  interface Window {
    __benchResult?: BenchPageResult;
    /** Results of the suites' Node halves, by suite name, set by scripts/bench.mjs before load. */
    __benchNode?: Record<string, unknown>;
  }
}

const status = document.getElementById('status');

function log(message: string): void {
  console.log(`[bench] ${message}`);
  if (status) status.textContent += `${message}\n`;
}

async function main(): Promise<BenchPageResult> {
  const params = new URLSearchParams(location.search);
  const quick = params.get('quick') === '1';
  const requested = (params.get('suite') ?? 'all').split(',').filter(Boolean);
  const names = requested.includes('all') ? Object.keys(SUITES) : requested;
  const unknown = names.filter((n) => !(n in SUITES));
  if (unknown.length) {
    throw new Error(`unknown suite(s) ${unknown.join(', ')}; available: ${Object.keys(SUITES).join(', ')}`);
  }
  const adapter = await navigator.gpu?.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('WebGPU is unavailable in this browser (no navigator.gpu adapter)');
  const suites: SuiteResult[] = [];
  for (const name of names) {
    log(`suite ${name}${quick ? ' (quick)' : ''}: start`);
    const t0 = performance.now();
    const suite = await SUITES[name]!();
    suites.push(await suite({ quick, log, node: window.__benchNode?.[name] }));
    log(`suite ${name}: done in ${((performance.now() - t0) / 1e3).toFixed(1)} s`);
  }
  if (!crossOriginIsolated) log('not cross-origin isolated: timer resolution is coarse (100 µs)');
  return { ok: true, userAgent: navigator.userAgent, adapter: adapterSummary(adapter.info), suites };
}

main().then(
  (result) => {
    window.__benchResult = result;
  },
  (e: unknown) => {
    const error = errorMessage(e);
    console.error(`[bench] ${error}`);
    window.__benchResult = { ok: false, error };
  },
);
