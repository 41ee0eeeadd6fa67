// Pictures of the lab during a live loop run, for the README and docs/lab.md.
//   node scripts/screenshot-run.mjs [--steps N] [--at K] [--eval-every E] [--validation-limit V] [--url URL] [--out FOLDER]
// The run is long-tasks.mjs's (the shipped warmed-up checkpoint, the demo curriculum, small
// settings), validated every E steps on V held-out problems (default 2 and 100: enough problems
// that accuracy is not 0 of a handful); once K steps have ended, while the run goes on, the page's first screen (controls
// and charts) is saved as FOLDER/lab-live-run.png and the transcripts as FOLDER/lab-transcripts.png.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { chromiumArgs, chromiumPath } from './browser.mjs';
import { readySmallRun, servePage, stepsOption } from './lab-run.mjs';

const { values: o } = parseArgs({ options: { steps: { type: 'string', default: '8' }, at: { type: 'string', default: '5' }, 'eval-every': { type: 'string', default: '2' }, 'validation-limit': { type: 'string', default: '100' }, url: { type: 'string' }, out: { type: 'string', default: 'docs' } } });
const steps = stepsOption('screenshot-run', o.steps);
const at = stepsOption('screenshot-run', o.at, '--at');
const validation = { evalEvery: stepsOption('screenshot-run', o['eval-every'], '--eval-every'), validationLimit: stepsOption('screenshot-run', o['validation-limit'], '--validation-limit') };
if (at >= steps) {
  console.error(`screenshot-run: --at must be below --steps (got ${at} of ${steps}), so the run is still live`);
  process.exit(2);
}
const server = o.url ? null : await servePage(5192);
const url = o.url ?? server.url;
mkdirSync(o.out, { recursive: true });

const browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await readySmallRun(page, url, steps, validation);
  await page.getByTestId('start-run').click();
  await page.getByTestId('chart-bank').and(page.locator(`[data-points="${at}"]`)).waitFor({ timeout: 3_600_000 });
  await page.screenshot({ path: join(o.out, 'lab-live-run.png') });
  await page.getByTestId('transcripts').screenshot({ path: join(o.out, 'lab-transcripts.png') });
  console.log(`saved at step ${at} of ${steps}: ${join(o.out, 'lab-live-run.png')}, ${join(o.out, 'lab-transcripts.png')}`);
} finally {
  await browser.close();
  server?.stop();
}
