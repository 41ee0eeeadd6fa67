import { test as base, expect, type BrowserContext, type Page } from '@playwright/test';

type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>;
/** An origin's part of a storage state: its IndexedDB databases are there at run time, left untyped (opaque) by Playwright. */
type OriginState = StorageState['origins'][number] & { indexedDB?: { name: string }[] };

/** The IndexedDB database where the lab keeps its autotune tables (src/platform/browser.ts). */
const TUNING_DB = 'sage-lab';

/**
 * Playwright's test, with the lab's autotune tables carried from each test to the next in a
 * worker: a shape class is measured once for the browser suite, as a user's browser keeps it,
 * instead of in every fresh context (a loop run's start tunes about 50 classes). Only that
 * database carries: no localStorage, cookies or saved runs, so a first visit stays one. A test
 * about tuning itself starts cold with `test.use({ shareTuning: false })`.
 */
export const test = base.extend<{ shareTuning: boolean }, { tuningState: { state: StorageState | undefined } }>({
  tuningState: [async ({}, use) => use({ state: undefined }), { scope: 'worker' }],
  shareTuning: [true, { option: true }],
  storageState: async ({ tuningState, shareTuning }, use) => use(shareTuning ? tuningState.state : undefined),
  context: async ({ context, tuningState, shareTuning }, use) => {
    await use(context);
    if (!shareTuning) return;
    const { origins } = await context.storageState({ indexedDB: true });
    const tuning = (origins as OriginState[])
      .map((o) => ({ origin: o.origin, localStorage: [], indexedDB: (o.indexedDB ?? []).filter((db) => db.name === TUNING_DB) }))
      .filter((o) => o.indexedDB.length > 0);
    if (tuning.length > 0) tuningState.state = { cookies: [], origins: tuning };
  },
});
export { expect };

/** Opens the lab and its Engine section (device report, checks, SFT, sampling), which starts collapsed below the run. */
export async function openEngine(page: Page): Promise<void> {
  await page.goto('/');
  await page.getByTestId('engine-section').locator('summary').click();
}

/** Pixels of the chart's canvas within a small distance of the colour `#rrggbb`: a drawn series shows as its colour. */
export async function pixelsOf(page: Page, testId: string, color: string): Promise<number> {
  return page.getByTestId(testId).locator('canvas').evaluate((canvas: HTMLCanvasElement, hex) => {
    const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i + 3]! > 200 && want.every((c, k) => Math.abs(data[i + k]! - c) < 24)) n++;
    return n;
  }, color);
}

/** Fills a loop setting, first opening its group's folded settings when it is one of them. */
export async function fillSetting(page: Page, name: string, value: string): Promise<void> {
  const input = page.getByTestId(`setting-${name}`);
  const fold = page.locator('details.more-settings').filter({ has: input });
  if ((await fold.count()) > 0 && !(await fold.evaluate((d: HTMLDetailsElement) => d.open))) await fold.locator('summary').click();
  await input.fill(value);
}

/**
 * Waits for the kernel self-check's verdict and expects it passed; a failure names the variant,
 * its error and the shape, which the status alone does not say.
 */
export async function expectSelfCheckPassed(page: Page): Promise<void> {
  const status = page.getByTestId('selfcheck-status');
  await expect(status).toHaveText(/^(passed|failed|error)$/);
  if ((await status.textContent()) === 'passed') return;
  const facts = (await page.getByTestId('selfcheck').textContent().catch(() => null)) ?? (await page.locator('.error-text').allTextContents()).join(' ');
  expect(await status.textContent(), `self-check: ${facts}`).toBe('passed');
}
