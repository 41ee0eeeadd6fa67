import { defineConfig } from '@playwright/test';
// @ts-expect-error plain ESM helper shared with the Node scripts
import { chromiumArgs, chromiumPath } from './scripts/browser.mjs';

const port = Number(process.env.E2E_PORT ?? 5179);

export default defineConfig({
  testDir: 'e2e',
  // Timeouts only catch hangs: on a busy 2-core machine without a GPU (SwiftShader) a
  // training step can take many times its idle duration, and no test may fail for that.
  timeout: 40 * 60_000,
  expect: { timeout: 10 * 60_000 },
  fullyParallel: false,
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: 'chromium',
    headless: true,
    launchOptions: { executablePath: chromiumPath as string, args: chromiumArgs as string[] },
  },
  webServer: {
    command: `npx vite --host 127.0.0.1 --port ${port} --strictPort`,
    url: `http://127.0.0.1:${port}`,
    reuseExistingServer: false,
    timeout: 5 * 60_000,
  },
});
