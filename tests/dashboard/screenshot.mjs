// Takes one screenshot of a running server's dashboard (for the README):
//   node screenshot.mjs BASE_URL OUT.png [WAIT_SECONDS]
// The page is left open WAIT_SECONDS (default 20) so its charts fill.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const [base, out, wait = '20'] = process.argv.slice(2);
if (!base || !out) {
  console.error('usage: node screenshot.mjs BASE_URL OUT.png [WAIT_SECONDS]');
  process.exit(2);
}
const profile = mkdtempSync(path.join(tmpdir(), 'pagoda-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
try {
  const page = browser.pages()[0] ?? (await browser.newPage());
  await page.goto(`${base}/dashboard`);
  await page.waitForTimeout(Number(wait) * 1000);
  await page.screenshot({ path: out, fullPage: true });
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
