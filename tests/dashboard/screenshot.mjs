// Takes one screenshot of a running server's dashboard (for docs/operations.md, "Watching it run"):
//   node screenshot.mjs BASE_URL OUT.png [WAIT_SECONDS]
// The page is left open WAIT_SECONDS (default 20) so its charts fill.
import { withPage } from './browser.mjs';

const [base, out, wait = '20'] = process.argv.slice(2);
if (!base || !out) {
  console.error('usage: node screenshot.mjs BASE_URL OUT.png [WAIT_SECONDS]');
  process.exit(2);
}
await withPage(async (page) => {
  await page.goto(`${base}/dashboard`);
  await page.waitForTimeout(Number(wait) * 1000);
  await page.screenshot({ path: out, fullPage: true });
});
