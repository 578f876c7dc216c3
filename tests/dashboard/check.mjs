// Drives Debian's chromium (playwright-core, no browser download) through the
// dashboard of a running `pagoda serve` (tests/server/dashboard_browser_test.cpp):
//
//   node check.mjs live   BASE_URL PAGODA_BINARY OUT_DIR
//     the page loads with no console error; under a `pagoda loadgen` run the
//     block map shows blocks in use and queue rows appear; a request killed
//     mid-stream leaves the queue within a second; after the drain every block
//     is free or cached and the counts match /metrics. Screenshots in OUT_DIR.
//   node check.mjs locked BASE_URL API_KEY OUT_DIR
//     without the key the page shows the login and no data; with it, data.
//
// Exits non-zero, naming the failed check, on the first failure.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { withPage } from './browser.mjs';

const [mode, base, arg, outDir] = process.argv.slice(2);
if (!['live', 'locked'].includes(mode) || !base || !arg || !outDir) {
  console.error('usage: node check.mjs live|locked BASE_URL PAGODA_BINARY|API_KEY OUT_DIR');
  process.exit(2);
}

function check(cond, what, got) {
  if (!cond) throw new Error(`FAILED: ${what}${got === undefined ? '' : '; got ' + JSON.stringify(got)}`);
}

const errors = [];
await withPage(async (page) => {
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  if (mode === 'live') await live(page); else await locked(page);
  console.log(`dashboard ${mode} checks passed`);
});

async function live(page) {
  await page.goto(base + '/');
  await page.waitForFunction(() => window.pagodaDashboard.state !== null, null, { timeout: 5000 });
  const total = await page.evaluate(() => window.pagodaDashboard.state.blocks.state.length);
  check(total > 0, 'the block map has blocks', total);

  const port = new URL(base).port;
  const loadgen = spawn(arg, ['loadgen', '--port', port, '-c', '12', '--duration', '2', '--max-tokens', '40',
                              '--ignore-eos'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let loadgenOut = '';
  loadgen.stdout.on('data', (d) => { loadgenOut += d; });
  loadgen.stderr.on('data', (d) => { loadgenOut += d; });
  const loadgenDone = new Promise((resolve) => loadgen.on('exit', resolve));
  await page.waitForFunction(() => {
    // Blocks in use and rows, and a second and a half of samples for the charts' screenshot.
    const n = window.pagodaDashboard.counts();
    return n.used + n.shared > 0 && document.querySelectorAll('#running tr').length > 1 &&
      window.pagodaDashboard.samples.length >= 6;
  }, null, { timeout: 8000 }).catch(() => check(false, 'blocks in use and running rows under load'));
  await page.screenshot({ path: path.join(outDir, 'dashboard_under_load.png'), fullPage: true });
  const code = await loadgenDone;
  check(code === 0, 'loadgen succeeds', loadgenOut.slice(-400));

  await killedRequestLeavesTheQueue(page);

  // Drained: every block free or cached, and the page agrees with /metrics.
  await page.waitForFunction(() => {
    const s = window.pagodaDashboard.state;
    return s.requests.length === 0 && s.counters.running === 0 && s.counters.kv_used === 0;
  }, null, { timeout: 5000 }).catch(() => check(false, 'the queues drain on the page'));
  const counts = await page.evaluate(() => window.pagodaDashboard.counts());
  check(counts.used === 0 && counts.shared === 0 && counts.reserved === 0, 'after the drain every block is free or cached', counts);
  const metrics = await get(base + '/metrics');
  const gauge = (name) => Number(metrics.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1]);
  check(gauge('pagoda_kv_blocks_total') === total, 'blocks match pagoda_kv_blocks_total', [gauge('pagoda_kv_blocks_total'), total]);
  check(gauge('pagoda_kv_blocks_used') === 0, 'no block used per /metrics', gauge('pagoda_kv_blocks_used'));
  check(gauge('pagoda_kv_blocks_cached') === counts.cached, 'cached blocks match pagoda_kv_blocks_cached',
        [gauge('pagoda_kv_blocks_cached'), counts.cached]);
  const rows = await page.evaluate(() => document.querySelectorAll('#finished tr').length - 1);
  check(rows > 0, 'recent finishes listed', rows);
  // Hovering a cell names the block.
  const map = await page.locator('#map').boundingBox();
  await page.mouse.move(map.x + 3, map.y + 3);
  const tip = await page.textContent('#tip');
  check(await page.isVisible('#tip') && tip.startsWith('block 0: ') && tip.includes('refcount 0'), 'hover shows the block', tip);
  await page.screenshot({ path: path.join(outDir, 'dashboard_drained.png'), fullPage: true });
  check(errors.length === 0, 'no console errors', errors);
}

// One long stream, alone: it shows in the running table; its client hangs
// up; the row is gone within a second.
async function killedRequestLeavesTheQueue(page) {
  const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true, stream: true });
  const u = new URL(base + '/v1/completions');
  const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
                             headers: { 'Content-Type': 'application/json' } });
  req.on('error', () => {});
  req.end(body);
  await page.waitForFunction(() => document.querySelectorAll('#running tr').length === 2, null, { timeout: 5000 })
    .catch(() => check(false, 'the long request shows in the running table'));
  const t0 = Date.now();
  req.destroy();
  await page.waitForFunction(() => document.querySelectorAll('#running tr').length <= 1, null, { timeout: 3000 })
    .catch(() => {});
  const ms = Date.now() - t0;
  check(ms < 1000, 'a request killed mid-stream leaves the queue within a second', ms);
}

async function locked(page) {
  await page.goto(base + '/');
  await page.waitForSelector('#login:not([hidden])', { timeout: 5000 });
  check(await page.isHidden('#main'), 'no data without the key');
  const state = await page.evaluate(() => window.pagodaDashboard.state);
  check(state === null, 'no state without the key', state);
  const status = (await fetch(base + '/debug/state')).status;
  check(status === 401, '/debug/state needs the key', status);
  await page.screenshot({ path: path.join(outDir, 'dashboard_locked.png') });
  await page.fill('#key', arg);
  await page.click('#login button');
  await page.waitForFunction(() => window.pagodaDashboard.state !== null, null, { timeout: 5000 })
    .catch(() => check(false, 'with the key the data comes'));
  check(await page.isVisible('#main'), 'the page shows data with the key');
  // The browser's own 401 for the keyless stream is its only console error.
  const others = errors.filter((e) => !e.includes('401'));
  check(others.length === 0, 'no console errors', others);
}

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let d = '';
      res.on('data', (c) => { d += c; });
      res.on('end', () => resolve(d));
    }).on('error', reject);
  });
}
