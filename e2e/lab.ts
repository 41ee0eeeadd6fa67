import type { Page } from '@playwright/test';

/** Opens the lab and its Engine section (device report, checks, SFT, sampling), which starts collapsed below the run. */
export async function openEngine(page: Page): Promise<void> {
  await page.goto('/');
  await page.getByTestId('engine-section').locator('summary').click();
}
