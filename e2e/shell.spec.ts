import { expect, expectSelfCheckPassed, openEngine, pixelsOf, test } from './lab';

test.describe('a browser that has tuned nothing', () => {
  // The self-check's shape is tuned here, not carried from an earlier test.
  test.use({ shareTuning: false });
  test('the lab shell reports the WebGPU adapter and passes the worker matmul self-check', async ({ page }) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await openEngine(page);
    await expect(page.getByRole('heading', { name: 'SAGE Lab' })).toBeVisible();
    const adapter = page.getByTestId('adapter');
    await expect(adapter).not.toBeEmpty();
    // On the CPU-only machines the adapter is SwiftShader; on a real GPU it names the vendor.
    if (!process.env.SAGE_GPU) {
      await expect(adapter).toContainText('swiftshader');
      // SwiftShader runs 4 invocations per subgroup, and the matmuls use that.
      await expect(page.getByTestId('subgroup-size')).toContainText('4 (matmuls share row loads');
      // SwiftShader has no matrix units: the panel says so, and where a user gets them.
      await expect(page.getByTestId('subgroup-matrix')).toContainText('none offered');
    }
    await expect(page.getByTestId('feature-timestamp-query')).toBeVisible();
    await expectSelfCheckPassed(page);
    const err = Number(await page.getByTestId('selfcheck-error').textContent());
    expect(err).toBeLessThanOrEqual(1e-5);
    // The self-check autotuned its shape in the worker; the winner persists (IndexedDB).
    await expect(page.getByTestId('selfcheck-tuning')).toContainText('autotuned now');
    await page.reload();
    await expectSelfCheckPassed(page);
    await expect(page.getByTestId('selfcheck-tuning')).toContainText('autotuned earlier on this GPU');
    await expect(page.getByTestId('preset-tiny')).toContainText('1.02 M');
    await expect(page.getByTestId('preset-tiny')).toContainText('yes');
    await page.screenshot({ path: 'test-results/shell.png', fullPage: true });
    expect(errors).toEqual([]);
  });
});

test('without WebGPU the page says what is needed instead of failing silently', async ({ browser }) => {
  const context = await browser.newContext();
  // Hide WebGPU from the page and from the engine worker, as in a browser without it.
  const hide = (scope: string) => `Object.defineProperty(${scope}.prototype, 'gpu', { get: () => undefined });\n`;
  await context.addInitScript(hide('Navigator'));
  await context.route(/engine\.worker\.ts/, async (route) => {
    const response = await route.fetch();
    await route.fulfill({ response, body: hide('WorkerNavigator') + (await response.text()) });
  });
  const page = await context.newPage();
  await page.goto('/');
  const notice = page.getByTestId('no-webgpu');
  await expect(notice).toBeVisible();
  await expect(notice).toContainText('WebGPU is not available');
  await expect(notice).toContainText('--enable-unsafe-webgpu');
  await context.close();
});

test('the training check trains the tiny preset in the engine worker and plots the loss live', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await openEngine(page);
  await expectSelfCheckPassed(page);
  await page.getByTestId('train-start').click();
  await expect(page.getByTestId('train-status')).toHaveText('running');
  // Live: progress appears while training runs, and the chart draws a line.
  await expect(page.getByTestId('train-progress')).toContainText('step 5');
  // The loss line (its colour) is drawn on the chart's canvas.
  await expect.poll(() => pixelsOf(page, 'train-chart', '#34d399')).toBeGreaterThan(50);
  await expect(page.getByTestId('train-status')).toHaveText('passed');
  await expect(page.getByTestId('train-progress')).toContainText('step 60');
  await page.screenshot({ path: 'test-results/train-check.png', fullPage: true });
  expect(errors).toEqual([]);
});
