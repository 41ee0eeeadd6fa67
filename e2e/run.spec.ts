import { readFileSync, writeFileSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { unzipSync } from 'fflate';
import { DEFAULT_MODEL } from '../src/sage/shippedModels';
import { expect, fillSetting, pixelsOf, test } from './lab';

/** Drops a file on the page with a real drag-and-drop event sequence. */
async function dropFile(page: Page, name: string, text: string): Promise<void> {
  const dataTransfer = await page.evaluateHandle(
    ({ name, text }) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: 'application/jsonl' }));
      return dt;
    },
    { name, text },
  );
  await page.dispatchEvent('main', 'dragover', { dataTransfer });
  await page.dispatchEvent('main', 'drop', { dataTransfer });
}

/** The header of a safetensors file: its tensors' names, dtypes and shapes. */
function safetensorsHeader(bytes: Uint8Array): Record<string, { dtype: string; shape: number[] }> {
  const length = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length))) as Record<string, { dtype: string; shape: number[] }>;
  delete header.__metadata__;
  return header;
}

const points = async (page: Page, chart: string) => Number(await page.getByTestId(chart).getAttribute('data-points'));

test('a loop run in the lab: seeds dropped, live charts and transcripts, pause, export, resume from the export', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Long main-thread tasks over the whole session, for the responsiveness figure of docs/benchmarks.md.
  await page.addInitScript(() => {
    const w = window as unknown as { longTasks: [number, number][] };
    w.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.longTasks.push([Math.round(e.startTime), Math.round(e.duration)]);
    }).observe({ type: 'longtask', buffered: true });
  });
  await page.goto('/');
  const marks: [string, number][] = [];
  const mark = async (label: string) => marks.push([label, await page.evaluate(() => performance.now())]);

  // The demo curriculum and its held-out split load by default.
  const seeds = page.getByTestId('seed-report');
  await expect(seeds).toContainText('curriculum-500.jsonl: 500 problems (500 curriculum)');
  await expect(page.getByTestId('validation-report')).toContainText('curriculum-1000.jsonl: 1000 problems');

  await mark('before drop');
  // The paper's seed mix dropped on the page: counts per detected format.
  await dropFile(page, 'sage-500.jsonl', readFileSync('data/seeds/sage-500.jsonl', 'utf8'));
  await expect(seeds).toContainText('sage-500.jsonl: 500 problems');
  for (const f of ['156 math', '148 gsm8k', '87 humaneval', '109 mbppplus']) await expect(seeds).toContainText(f);
  // A file with bad lines: each named by number and reason, the good lines loaded.
  await dropFile(page, 'mixed.jsonl', ['{"question": "1+1=?", "answer": "2"}', '{oops', '{"question": "2+2=?", "answer": "4"}', '{"nothing": 1}'].join('\n'));
  await expect(seeds).toContainText('mixed.jsonl: 2 problems');
  await expect(page.getByTestId('seed-report-errors')).toContainText('line 2');
  await expect(page.getByTestId('seed-report-errors')).toContainText('line 4');

  await mark('dropped');
  await page.getByTestId('shipped-curriculum-500.jsonl').click();
  await expect(seeds).toContainText('curriculum-500.jsonl: 500 problems');
  // A held-out split taken from the seeds themselves, then the built-in one back.
  await page.getByTestId('holdout-percent').fill('10');
  await page.getByTestId('holdout-seeds').click();
  await expect(page.getByTestId('validation-report')).toContainText('10% of curriculum-500.jsonl held out (seed 0): 50 problems');
  await expect(seeds).toContainText('curriculum-500.jsonl: 450 problems');
  await page.getByTestId('shipped-curriculum-500.jsonl').click();
  await expect(page.getByTestId('validation-report')).toContainText('curriculum-1000.jsonl: 1000 problems');
  await expect(seeds).toContainText('curriculum-500.jsonl: 500 problems');

  // A bad value is refused inline and blocks the start; small settings for a short run.
  await fillSetting(page, 'topP', '2');
  await expect(page.getByTestId('settings-panel')).toContainText('topP must be a number in (0, 1]');
  await expect(page.getByTestId('start-run')).toBeDisabled();
  await fillSetting(page, 'topP', '1');
  const small = { steps: 3, evalEvery: 1, validationLimit: 5, proposals: 2, references: 2, difficultySamples: 1, trainProblems: 2, solverSamples: 1 };
  for (const [k, v] of Object.entries(small)) await fillSetting(page, k, String(v));
  // No model held: Start loads the shipped checkpoint, which needs no warm-up.
  await expect(page.getByTestId('run-model-default')).toContainText(DEFAULT_MODEL);
  await expect(page.getByTestId('setting-warmupSteps')).toHaveValue('0');
  await expect(page.getByTestId('start-run')).toBeEnabled();
  await mark('start');
  await page.getByTestId('start-run').click();
  await expect(page.getByTestId('run-model-summary')).toContainText(DEFAULT_MODEL);

  // Both charts gain points as steps end; the transcripts fill.
  await expect.poll(() => points(page, 'chart-bank'), { timeout: 15 * 60_000 }).toBeGreaterThanOrEqual(2);
  await expect.poll(() => points(page, 'chart-validation')).toBeGreaterThanOrEqual(2);
  // Drawn, not only counted: the seeds' area edge and the overall accuracy line show in their colours.
  expect(await pixelsOf(page, 'chart-bank', '#475569')).toBeGreaterThan(50);
  expect(await pixelsOf(page, 'chart-validation', '#e6edf3')).toBeGreaterThan(50);
  await expect(page.getByTestId('transcripts').getByTestId('transcript-solver').first()).toBeVisible();
  await expect(page.getByTestId('settings-panel')).toContainText('read-only while the run lasts');
  await expect(page.getByTestId('setting-steps')).toBeDisabled();
  // During a run its charts follow its controls; the set-up, fixed for the run, is below them.
  const top = async (id: string) => (await page.getByTestId(id).boundingBox())!.y;
  for (const id of ['seeds-panel', 'model-choice', 'settings-panel']) expect(await top(id), id).toBeGreaterThan(await top('run-charts'));
  expect(await top('run-charts')).toBeGreaterThan(await top('run-status'));
  await page.screenshot({ path: 'test-results/run-live.png', fullPage: true });

  await mark('live');
  // Pause, then export the run as a zip: records, problems and a loadable checkpoint.
  const status = page.getByTestId('run-status');
  if ((await status.textContent()) !== 'done') {
    await page.getByTestId('pause-run').click();
    await expect(status).toHaveText(/paused|done/);
  }
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId(await page.getByTestId('export-run-zip').count() ? 'export-run-zip' : 'export-run-folder').click()]);
  await mark('downloaded');
  const zipBytes = readFileSync(await download.path());
  writeFileSync('test-results/run-export.zip', zipBytes);
  const files = unzipSync(new Uint8Array(zipBytes));
  for (const f of ['config.json', 'metrics.jsonl', 'transcripts.jsonl', 'bank-events.jsonl', 'state.json', 'seeds.json', 'validation.json', 'last/config.json']) expect(Object.keys(files)).toContain(f);
  const header = safetensorsHeader(files['last/model.safetensors']!);
  expect(header['model.embed_tokens.weight']?.shape).toEqual([expect.any(Number), expect.any(Number)]);
  expect(Object.keys(header).length).toBeGreaterThan(5);
  // The run's record: the shipped checkpoint, no warm-up.
  expect(JSON.parse(new TextDecoder().decode(files['config.json']))).toMatchObject({ model: DEFAULT_MODEL, templates: 'compact', settings: { warmupSteps: 0 } });
  const exportedSteps = (JSON.parse(new TextDecoder().decode(files['state.json'])) as { step: number }).step;
  expect(exportedSteps).toBeGreaterThanOrEqual(2);

  await mark('exported');
  if ((await status.textContent()) === 'paused') await page.getByTestId('resume-run').click();
  await expect(status).toHaveText('done', { timeout: 15 * 60_000 });
  await expect(page.getByTestId('run-step')).toHaveText('3 / 3');
  await expect(page.getByTestId('bank-table')).toContainText('500 seeds');

  await mark('done');
  // Resuming the export continues its step count, with its charts rebuilt from its records.
  await page.getByTestId('setting-steps').fill('1');
  // By path: a buffer would be decoded from base64 on the page's main thread, a cost of the test, not of the lab.
  await page.getByTestId('resume-zip').setInputFiles('test-results/run-export.zip');
  // The export's history first (its steps on the charts), then one more step.
  await expect(page.getByTestId('run-step')).toHaveText(`${exportedSteps} / ${exportedSteps + 1}`);
  // The step counter reaching the end shows the resumed step ran (its status may pass through
  // 'running' between two polls: a step of this size takes a few seconds).
  await expect(page.getByTestId('run-step')).toHaveText(`${exportedSteps + 1} / ${exportedSteps + 1}`, { timeout: 15 * 60_000 });
  await expect(status).toHaveText('done');
  // The chart's point count follows the page's next render: poll until the last point is there.
  await expect.poll(() => points(page, 'chart-bank')).toBe(exportedSteps + 1);

  await mark('resumed');
  await page.getByTestId('run-charts').scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/run-done.png', fullPage: true });
  // Each panel on its own, to be looked at.
  for (const panel of ['run-controls', 'run-charts', 'seeds-panel', 'model-choice', 'settings-panel', 'transcripts', 'bank-table', 'runs-panel']) {
    await page.getByTestId(panel).screenshot({ path: `test-results/panel-${panel}.png` });
  }
  const longTasks = await page.evaluate(() => (window as unknown as { longTasks: [number, number][] }).longTasks);
  writeFileSync('test-results/run-long-tasks.json', JSON.stringify({ count: longTasks.length, max: Math.max(0, ...longTasks.map((t) => t[1])), all: longTasks, marks }));

  // The run autosaved itself in the browser: after a reload the page offers it, and resuming
  // continues its step count.
  await expect(page.getByTestId('autosave-status')).toContainText(`autosaved after step ${exportedSteps + 1}`);
  await page.reload();
  await expect(page.getByTestId('autosave-offer')).toContainText(`after step ${exportedSteps + 1}`);
  // Both runs so far are kept in the browser (newest first): the first overlaid on the charts,
  // the resumed one deleted.
  const kept = page.getByTestId('run-row');
  await expect(kept).toHaveCount(2);
  await expect(kept.first()).toContainText('(resumed)');
  await expect(kept.last()).toContainText('all steps');
  await kept.last().getByTestId('run-overlay').click();
  await expect(kept.last().getByTestId('run-overlay')).toBeChecked();
  await expect(page.getByTestId('chart-validation')).toContainText('sage · curriculum-500.jsonl');
  await expect(page.getByTestId('chart-bank')).toContainText('bank: sage · curriculum-500.jsonl');
  await page.getByTestId('run-charts').screenshot({ path: 'test-results/run-overlay.png' });
  await kept.first().getByTestId('run-delete').click();
  await kept.first().getByTestId('run-delete-confirm').click();
  await expect(kept).toHaveCount(1);
  await expect(kept.first()).toContainText('all steps');
  await page.getByTestId('setting-steps').fill('1');
  await page.getByTestId('resume-autosave').click();
  await expect(page.getByTestId('run-step')).toHaveText(`${exportedSteps + 1} / ${exportedSteps + 2}`);
  await expect(status).toHaveText('done', { timeout: 15 * 60_000 });
  await expect(page.getByTestId('run-step')).toHaveText(`${exportedSteps + 2} / ${exportedSteps + 2}`);

  // A lost GPU device (the GPU process crashed) ends the run with the reason; the page offers
  // the autosave, and resuming it on a new device goes on from there.
  await page.reload();
  await expect(page.getByTestId('autosave-offer')).toContainText(`after step ${exportedSteps + 2}`);
  await page.getByTestId('setting-steps').fill('3');
  await page.getByTestId('resume-autosave').click();
  await expect(status).toHaveText(/running|warmup/);
  const cdp = await page.context().browser()!.newBrowserCDPSession();
  await cdp.send('Browser.crashGpuProcess');
  await expect(status).toHaveText('error');
  await expect(page.getByTestId('run-error')).toContainText('the GPU device was lost');
  await expect(page.getByTestId('autosave-offer')).toContainText(`after step ${exportedSteps + 2}`);
  await page.getByTestId('setting-steps').fill('1');
  await page.getByTestId('resume-autosave').click();
  await expect(page.getByTestId('run-step')).toHaveText(`${exportedSteps + 2} / ${exportedSteps + 3}`);
  await expect(status).toHaveText('done', { timeout: 15 * 60_000 });
  await expect(page.getByTestId('run-step')).toHaveText(`${exportedSteps + 3} / ${exportedSteps + 3}`);
  expect(errors).toEqual([]);
});
