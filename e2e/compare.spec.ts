import { DEFAULT_MODEL } from '../src/sage/shippedModels';
import { expect, fillSetting, test } from './lab';

test('a comparison in the lab: methods × seeds from one start, one after another, reported with paired intervals and bands', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/');
  await expect(page.getByTestId('seed-report')).toContainText('curriculum-500.jsonl: 500 problems');
  await expect(page.getByTestId('validation-report')).toContainText('curriculum-1000.jsonl: 1000 problems');
  const small = { steps: 1, evalEvery: 1, validationLimit: 4, proposals: 2, references: 2, difficultySamples: 1, trainProblems: 2, solverSamples: 2 };
  for (const [k, v] of Object.entries(small)) await fillSetting(page, k, String(v));

  // Two methods × two seeds; the others unticked.
  for (const m of ['sage-no-quality-filter', 'mae']) {
    await page.getByTestId(`compare-method-${m}`).click();
    await expect(page.getByTestId(`compare-method-${m}`)).not.toBeChecked();
  }
  await page.getByTestId('compare-seeds').fill('2');
  await page.getByTestId('compare-start').click();
  await expect(page.getByTestId('compare-progress')).toContainText('of 4');
  await expect(page.getByTestId('start-run')).toBeDisabled();

  // The comparison ends with its four runs kept, reported by method over two seeds each.
  await expect(page.getByTestId('compare-start')).toBeVisible({ timeout: 30 * 60_000 });
  await expect(page.getByTestId('compare-error')).toHaveCount(0);
  await expect(page.getByTestId('run-row')).toHaveCount(4);
  for (const m of ['sage', 'rlvr']) await expect(page.getByTestId(`comparison-${m}`)).toContainText(new RegExp(`^${m}2\\s*1\\s*\\d+\\.\\d ± \\d+\\.\\d`));
  // The gain and the difference from RLVR with their paired intervals, from the runs' per-problem results.
  await expect(page.getByTestId('comparison-sage')).toContainText(/[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\].*[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\]/);
  // A band per method in each panel: own mode, the Solver alone, the bank.
  await expect(page.getByTestId('comparison-chart').locator('polygon')).toHaveCount(6);
  await expect(page.getByTestId('comparison-chart')).toContainText('the Solver alone');
  await expect(page.getByTestId('comparison-chart')).toContainText('sage (2 seeds)');
  // Every run started from the shipped checkpoint with its own seed.
  const configs = await page.evaluate(async () => {
    const open = indexedDB.open('sage-lab-runs');
    const db = await new Promise<IDBDatabase>((ok, fail) => ((open.onsuccess = () => ok(open.result)), (open.onerror = () => fail(open.error))));
    const all = db.transaction('runs').objectStore('runs').getAll();
    const rows = await new Promise<{ config: { method: string; model: string; comparison?: string; settings: { seed?: number; patience?: number } }; outcomes?: { step: number; solver: string }[] }[]>((ok) => (all.onsuccess = () => ok(all.result)));
    return rows.map((r) => ({ ...r.config, kept: r.outcomes?.map((o) => `${o.step}:${o.solver.length}`) }));
  });
  expect(configs.map((c) => `${c.method}:${c.settings.seed}`).sort()).toEqual(['rlvr:0', 'rlvr:1', 'sage:0', 'sage:1']);
  expect(new Set(configs.map((c) => c.comparison)).size).toBe(1);
  // Each run keeps its first and last validation's results on the 4 problems.
  for (const c of configs) expect(c).toMatchObject({ model: DEFAULT_MODEL, settings: { patience: 2 }, kept: ['0:4', '1:4'] });

  // The same comparison again has nothing left to run; one more seed runs two more.
  await page.getByTestId('compare-seeds').fill('3');
  await page.getByTestId('compare-start').click();
  await expect(page.getByTestId('compare-progress')).toContainText('run 1 of 2: sage, seed 2');
  await page.getByTestId('compare-stop').click();
  await expect(page.getByTestId('compare-start')).toBeVisible();
  await page.getByTestId('runs-panel').screenshot({ path: 'test-results/panel-compare.png' });
  expect(errors).toEqual([]);
});
