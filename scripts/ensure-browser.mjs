// Makes sure a Chromium for the browser tests exists: CHROMIUM_PATH or /usr/bin/chromium.
// As root on Debian it installs Debian's chromium with apt-get; otherwise it explains how.
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { browserAvailable, chromiumPath } from './browser.mjs';

export function ensureBrowser() {
  if (browserAvailable()) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const isDebian = existsSync('/etc/debian_version');
  if (isRoot && isDebian && !process.env.CHROMIUM_PATH) {
    console.log('Chromium not found: installing Debian chromium with apt-get ...');
    execSync('apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium libvulkan1', {
      stdio: 'inherit',
    });
    if (browserAvailable()) return;
  }
  console.error(
    `No Chromium at ${chromiumPath}. Browser tests need Chromium with WebGPU:\n` +
      '  Debian/Ubuntu: sudo apt-get install chromium   (then re-run)\n' +
      '  or point CHROMIUM_PATH at a Chrome/Chromium 113+ binary.',
  );
  process.exit(1);
}

if (import.meta.url === `file://${process.argv[1]}`) ensureBrowser();
