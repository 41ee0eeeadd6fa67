// A loop run in the production page, shared by the scripts that measure or picture one.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The production page (vite build into a temporary folder, served by vite preview): its address and how to stop it. */
export async function servePage(port) {
  const dist = mkdtempSync(join(tmpdir(), 'sage-lab-dist-'));
  execFileSync('npx', ['vite', 'build', '--outDir', dist, '--emptyOutDir', '--logLevel', 'warn'], { stdio: 'inherit' });
  const server = spawn('npx', ['vite', 'preview', '--outDir', dist, '--port', String(port), '--strictPort', '--host', '127.0.0.1'], { stdio: 'ignore', detached: true });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) break;
    if (i > 120) throw new Error('vite preview did not start');
    await new Promise((r) => setTimeout(r, 500));
  }
  return { url, stop: () => process.kill(-server.pid) };
}

/**
 * Opens the lab and readies a SAGE run of `steps` steps with small settings: the demo curriculum,
 * the lab's default checkpoint (no model is chosen, so Start loads the default as a first visit does),
 * validation every 2 steps on 10 held-out problems (`validation` overrides those two). The run starts with a
 * click on `start-run`.
 */
export async function readySmallRun(page, url, steps, validation = { evalEvery: 2, validationLimit: 10 }) {
  await page.goto(url);
  await page.getByTestId('seed-report').filter({ hasText: 'curriculum-500.jsonl: 500 problems' }).waitFor({ timeout: 600_000 });
  await page.getByTestId('run-model-default').waitFor({ timeout: 600_000 });
  const small = { steps, warmupSteps: 0, ...validation, proposals: 2, references: 2, difficultySamples: 2, trainProblems: 2, solverSamples: 2 };
  for (const [k, v] of Object.entries(small)) {
    // Settings a group folds away (details.more-settings) are opened first, as a person would.
    const input = page.getByTestId(`setting-${k}`);
    const fold = page.locator('details.more-settings').filter({ has: input });
    if ((await fold.count()) > 0 && !(await fold.evaluate((d) => d.open))) await fold.locator('summary').click();
    await input.fill(String(v));
  }
}

/** A positive whole number from the command line (`--steps` unless named), or one line naming the bad option and exit. */
export function stepsOption(script, text, option = '--steps') {
  const steps = Number(text);
  if (!Number.isInteger(steps) || steps < 1) {
    console.error(`${script}: ${option} must be a positive integer (got ${text})`);
    process.exit(2);
  }
  return steps;
}
