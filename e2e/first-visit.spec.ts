import type { Page } from '@playwright/test';
import { DEFAULT_MODEL } from '../src/sage/shippedModels';
import { expect, fillSetting, test } from './lab';

/** Where an element starts on the page, from the top. */
const top = async (page: Page, testId: string) => (await page.getByTestId(testId).boundingBox())!.y;

test('a first visit: the page says what the lab does and what Start will do, set-up before the charts, settings in words; dismissed for good', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('/');

  // No runs kept in a fresh browser: the panel, with the defaults Start will use.
  const panel = page.getByTestId('first-visit');
  await expect(panel).toBeVisible();
  await expect(page.getByTestId('first-visit-model')).toContainText(`${DEFAULT_MODEL}, shipped with the lab`);
  await expect(page.getByTestId('first-visit-problems')).toContainText('500 seed problems from curriculum-500.jsonl');
  await expect(page.getByTestId('first-visit-problems')).toContainText('200 held-out problems of curriculum-1000.jsonl');
  await expect(page.getByTestId('first-visit-method')).toContainText('SAGE: Challenger, Planner, Solver and Critic, all trained, for 20 steps');
  const time = page.getByTestId('first-visit-time');
  await expect(time).toContainText('so there is no estimate for it');
  if (!process.env.SAGE_GPU) await expect(time).toContainText('google swiftshader');
  await expect(page.getByTestId('seed-report')).toContainText('curriculum-500.jsonl: 500 problems');
  // As a first visitor sees it, for the docs (docs/lab-first-visit.md).
  await page.screenshot({ path: 'test-results/lab-first-visit-1280.png' });
  await page.getByTestId('settings-panel').screenshot({ path: 'test-results/lab-settings-1280.png' });
  // It follows what is set: the method and the run's length as chosen.
  await page.getByTestId('method').selectOption('rlvr');
  await fillSetting(page, 'steps', '7');
  await expect(page.getByTestId('first-visit-method')).toContainText('RLVR baseline');
  await expect(page.getByTestId('first-visit-method')).toContainText('for 7 steps');
  await expect(time).toContainText('rlvr took');
  await page.getByTestId('method').selectOption('sage');
  await fillSetting(page, 'steps', '20');

  // The set-up (problems, model, method and settings) comes before the charts, which are empty until a run.
  const charts = await top(page, 'run-charts');
  for (const id of ['seeds-panel', 'model-choice', 'settings-panel']) expect(await top(page, id), id).toBeLessThan(charts);
  // Each chart says in words what rising or falling means.
  const readings = page.locator('.chart-card .chart-reading');
  await expect(readings).toHaveCount(7);
  for (const text of await readings.allTextContents()) expect(text).toMatch(/^(Rising|Falling)/);

  // Settings: labels in words with the identifier beside them, grouped, the rarer ones folded until asked for.
  const sampling = page.getByTestId('settings-group-sampling');
  await expect(sampling).toContainText('Temperature');
  await expect(sampling.locator('code', { hasText: 'temperature' })).toBeVisible();
  await expect(page.getByTestId('setting-temperature')).toBeVisible();
  await expect(page.getByTestId('setting-topP')).toBeHidden();
  await fillSetting(page, 'topP', '0.9');
  await expect(page.getByTestId('setting-topP')).toBeVisible();
  await expect(sampling).toContainText('(default 1)');
  await expect(sampling.locator('.more-settings > summary')).toContainText('1 changed');
  await fillSetting(page, 'topP', '1');
  await expect(sampling.locator('.more-settings > summary')).not.toContainText('changed');
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.evaluate(() => {
    (document.activeElement as HTMLElement | null)?.blur();
    window.scrollTo(0, 0);
  });
  await page.screenshot({ path: 'test-results/lab-first-visit-1920.png' });
  await page.getByTestId('settings-panel').screenshot({ path: 'test-results/lab-settings-1920.png' });

  // Dismissed, it goes, and stays gone once the kept runs (none) have been read after a reload.
  await page.getByTestId('first-visit-dismiss').click();
  await expect(panel).toHaveCount(0);
  await page.reload();
  await expect(page.getByTestId('runs-none')).toHaveText('No runs yet.');
  await expect(page.getByTestId('seed-report')).toContainText('curriculum-500.jsonl: 500 problems');
  await expect(panel).toHaveCount(0);
  expect(errors).toEqual([]);
});
