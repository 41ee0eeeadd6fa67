// Main-thread long tasks while the lab runs the loop, attributed to the code they ran.
//   node scripts/long-tasks.mjs [--steps N] [--url URL] [--out FILE]
// Without --url it builds the production page (vite build) into a temporary folder and serves it
// with vite preview. The run: the shipped warmed-up checkpoint, the demo curriculum, small
// settings, validation every 2 steps. No model is chosen first, so the profiled window opens at
// Start and holds the checkpoint's load and kernel tuning too, as on a first visit. Chromium's
// CPU profile (1 ms samples) is matched to the PerformanceObserver's long tasks, so each task is
// reported with the scripts it spent its time in.
// The charts at the end of the run are saved beside the figures (FILE with -charts.png).
// Then, with the GPU idle, the page is reloaded and the finished run's overlay toggled 6 times
// (each time the validation and bank charts redraw): the long tasks of those redraws alone.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { chromiumArgs, chromiumPath } from './browser.mjs';
import { readySmallRun, servePage, stepsOption } from './lab-run.mjs';

const { values: o } = parseArgs({ options: { steps: { type: 'string', default: '6' }, url: { type: 'string' }, out: { type: 'string', default: 'test-results/long-tasks.json' } } });
const steps = stepsOption('long-tasks', o.steps);
const server = o.url ? null : await servePage(5190);
const url = o.url ?? server.url;

const browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.addInitScript(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.longTasks.push([e.startTime, e.duration]);
    }).observe({ type: 'longtask', buffered: true });
  });
  await readySmallRun(page, url, steps);

  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 1000 });
  await cdp.send('Profiler.start');
  const t0 = await page.evaluate(() => performance.now());
  await page.getByTestId('start-run').click();
  await page.getByTestId('run-status').filter({ hasText: /^done$/ }).waitFor({ timeout: 3_600_000 });
  const { profile } = await cdp.send('Profiler.stop');
  await page.getByTestId('run-charts').screenshot({ path: o.out.replace(/\.json$/, '-charts.png') });
  const tasks = (await page.evaluate(() => window.longTasks)).filter(([s]) => s >= t0).map(([start, duration]) => ({ start, duration, scripts: {} }));

  // Each sample goes to the task it falls in, under the nearest frame up its stack that has a script.
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const ms = t0 + t / 1000;
    const task = tasks.find((x) => ms >= x.start && ms <= x.start + x.duration);
    if (!task) continue;
    let n = nodes.get(profile.samples[i]);
    const own = n.callFrame.functionName || '(native)';
    while (n && !n.callFrame.url) n = nodes.get(parent.get(n.id));
    const key = n ? n.callFrame.url.split('/').pop().replace(/-[\w-]{8}\.js$/, '.js') : own;
    task.scripts[key] = (task.scripts[key] ?? 0) + profile.timeDeltas[i] / 1000;
  }
  const max = Math.max(0, ...tasks.map((x) => x.duration));
  for (const x of tasks) {
    const top = Object.entries(x.scripts).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, v]) => `${k} ${v.toFixed(0)} ms`);
    console.log(`${(x.start / 1000).toFixed(1).padStart(7)} s  ${x.duration.toFixed(0).padStart(4)} ms  ${top.join(', ')}`);
  }
  console.log(`${tasks.length} long tasks during ${steps} loop steps; the longest ${max.toFixed(0)} ms`);

  // The same charts redrawn with nothing running on the GPU.
  await page.reload();
  const overlay = page.getByTestId('run-overlay').first();
  await overlay.waitFor({ timeout: 600_000 });
  await page.waitForTimeout(3000);
  const t1 = await page.evaluate(() => performance.now());
  for (let i = 0; i < 6; i++) {
    await overlay.click();
    await page.waitForTimeout(1500);
  }
  const idle = (await page.evaluate(() => window.longTasks)).filter(([s]) => s >= t1).map(([, d]) => Math.round(d));
  console.log(`${idle.length} long tasks over 6 overlay toggles with the GPU idle${idle.length ? ` (${idle.join(', ')} ms)` : ''}`);
  writeFileSync(o.out, JSON.stringify({ date: new Date().toISOString(), url, steps, count: tasks.length, max, tasks, idleToggles: 6, idleLongTasks: idle }, null, 1));
  console.log(`written to ${o.out}`);
} finally {
  await browser.close();
  server?.stop();
}
