#!/usr/bin/env node
/**
 * npm run bench [-- --suite matmul[,other]] [--quick] [--timeout-min 20] [--no-write]   (--help: bench/cli.ts)
 *
 * Serves bench/index.html with Vite, opens it in headless Chromium on WebGPU, waits for the
 * page's result, prints each suite's tables and writes bench/results/<suite>-<date>.json
 * (plus latest-<suite>.json for a full, passing run). Exits non-zero on any failure.
 * Suites with a Node half (bench/node/<suite>.ts) run it first, in Node on Dawn; the page's
 * suite reports its result beside the browser figures (see scripts/bench-node.mjs).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeSuites, runNodeSuite } from './bench-node.mjs';
import { chromiumArgs, chromiumPath } from './browser.mjs';
import { ensureGpuRuntimes } from './setup.mjs';
import { benchCli } from '../bench/cli.ts';
import { runCli } from '../src/cli/options.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = join(root, 'bench', 'results');

const progress = (line) => process.stderr.write(`${line}\n`);

/** Columns padded to their widest cell; the output is also a valid Markdown table. */
function formatTable({ title, columns, rows, notes }) {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? ':' : '-') + '-'.repeat(w) + (i === 0 ? '-' : ':')).join('|')}|`;
  return [`${title}`, '', line(columns), rule, ...rows.map(line), ...(notes?.length ? ['', ...notes] : [])].join('\n');
}

function localDate(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

async function main(args) {
  const suites = args.suite.length ? args.suite : ['all'];
  const timeoutMs = args['timeout-min'] * 60_000;
  ensureGpuRuntimes();
  // Before Vite starts, whose dependency pre-bundling would share the CPU with the measurement.
  const nodeResults = {};
  for (const name of nodeSuites(root, suites)) {
    progress(`bench: ${name} in Node (Dawn)${args.quick ? ' (quick)' : ''}`);
    nodeResults[name] = await runNodeSuite(root, name, { quick: args.quick, progress, timeoutMs });
  }

  const { createServer } = await import('vite');
  const { chromium } = await import('@playwright/test');

  // An inline config, so the benchmark does not depend on (or disturb) the app's Vite
  // config. No file watching or HMR: edits made while a long run is under way must not
  // reload the page mid-measurement. Its own dependency cache keeps a concurrent
  // `npm run dev` from invalidating ours, or ours theirs.
  const server = await createServer({
    configFile: false,
    root,
    logLevel: 'warn',
    clearScreen: false,
    cacheDir: join(root, 'node_modules', '.vite-bench'),
    server: {
      host: '127.0.0.1',
      port: 0,
      strictPort: false,
      hmr: false,
      watch: null,
      // Cross-origin isolation lifts performance.now() from 100 µs to 5 µs resolution,
      // which matters for the smallest shapes (a few ms per run).
      headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
    },
    optimizeDeps: {
      entries: ['bench/index.html'],
      // Pre-bundled up front: discovering them at run time makes Vite reload the page.
      include: ['@jax-js/jax', '@tensorflow/tfjs-core', '@tensorflow/tfjs-backend-webgpu'],
    },
  });
  let browser;
  try {
    await server.listen();
    const address = server.httpServer?.address();
    if (!address || typeof address === 'string') throw new Error('Vite did not report a TCP address');
    const query = new URLSearchParams({ suite: suites.join(',') });
    if (args.quick) query.set('quick', '1');
    const url = `http://127.0.0.1:${address.port}/bench/index.html?${query}`;

    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
    const chromiumVersion = browser.version();
    const page = await browser.newPage();
    await page.addInitScript((results) => {
      window.__benchNode = results;
    }, nodeResults);
    let crashed = null;
    page.on('console', (msg) => {
      if (msg.type() !== 'debug') progress(`  ${msg.type() === 'log' ? '' : `${msg.type()}: `}${msg.text()}`);
    });
    page.on('pageerror', (e) => progress(`  page error: ${e.stack ?? e.message}`));
    page.on('crash', () => {
      crashed = 'the page crashed';
    });

    progress(`bench: ${url} in Chromium ${chromiumVersion}`);
    const started = Date.now();
    await page.goto(url, { waitUntil: 'load' });
    const handle = await page.waitForFunction(() => window.__benchResult, null, {
      timeout: timeoutMs,
      polling: 1000,
    });
    const result = await handle.jsonValue();
    if (crashed) throw new Error(crashed);
    if (!result.ok) throw new Error(`benchmark page failed:\n${result.error}`);
    const elapsedS = (Date.now() - started) / 1e3;

    const now = new Date();
    const cpus = os.cpus();
    const env = {
      date: now.toISOString(),
      quick: args.quick,
      elapsedS,
      chromium: chromiumVersion,
      userAgent: result.userAgent,
      adapter: result.adapter,
      machine: {
        cpu: cpus[0]?.model ?? 'unknown',
        cores: cpus.length,
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        os: `${os.type()} ${os.release()} ${os.arch()}`,
        node: process.version,
      },
    };

    let failed = false;
    console.log(
      `\nAdapter: ${[result.adapter?.vendor, result.adapter?.architecture, result.adapter?.description].filter(Boolean).join(' / ') || 'unknown'}` +
        ` | Chromium ${chromiumVersion} | ${env.machine.cpu} × ${env.machine.cores} | ${elapsedS.toFixed(0)} s${args.quick ? ' | QUICK' : ''}`,
    );
    for (const s of result.suites) {
      for (const t of s.tables) console.log(`\n${formatTable(t)}`);
      if (s.failures.length) {
        failed = true;
        console.error(`\n${s.suite}: ${s.failures.length} FAILURE(S):`);
        for (const f of s.failures) console.error(`  - ${f}`);
      }
      if (args['no-write']) continue;
      mkdirSync(resultsDir, { recursive: true });
      const record = { suite: s.suite, ...env, failures: s.failures, tables: s.tables, data: s.data };
      const json = `${JSON.stringify(record, null, 2)}\n`;
      // Quick runs are smoke tests: keep them apart from, and never let them replace, real results.
      const dated = join(resultsDir, `${s.suite}-${localDate(now)}${args.quick ? '-quick' : ''}.json`);
      writeFileSync(dated, json);
      const written = [dated];
      if (!args.quick && !s.failures.length) {
        const latest = join(resultsDir, `latest-${s.suite}.json`);
        writeFileSync(latest, json);
        written.push(latest);
      }
      console.log(`\nwrote ${written.map((p) => relative(root, p)).join(', ')}`);
    }
    return failed ? 1 : 0;
  } finally {
    await browser?.close().catch(() => {});
    await server.close().catch(() => {});
  }
}

await runCli(benchCli, async (args) => process.exit(await main(args)));
