// Debian's chromium through playwright-core (no browser download), headless,
// in a throwaway profile: what check.mjs and screenshot.mjs share.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// Runs fn(page) in a fresh browser, then closes it and removes its profile.
export async function withPage(fn) {
  const profile = mkdtempSync(path.join(tmpdir(), 'pagoda-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
  try {
    return await fn(browser.pages()[0] ?? (await browser.newPage()));
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
