// The Pagoda dashboard: reads /debug/events (the whole state, then deltas;
// docs/dashboard.md) with fetch so it can send the API key, keeps the state
// and 10 minutes of samples, and draws the block map, charts and queues.
'use strict';

const STATES = ['free', 'cached', 'used', 'shared', 'reserved'];
const COLORS = { free: '#e5e7eb', cached: '#93c5fd', used: '#f59e0b', shared: '#a855f7', reserved: '#fde68a' };
const HISTORY_S = 600;
const $ = (id) => document.getElementById(id);

const dash = { state: null, samples: [], marks: [], connected: false };
window.pagodaDashboard = dash;  // for tests and curious operators

// ---- connection ----

function authHeaders() {
  const key = sessionStorage.getItem('pagoda-api-key');
  return key ? { Authorization: 'Bearer ' + key } : {};
}

async function connect() {
  let res;
  try {
    res = await fetch('/debug/events', { headers: authHeaders(), cache: 'no-store' });
  } catch (e) {
    return retry('cannot reach the server');
  }
  if (res.status === 401) return showLogin(sessionStorage.getItem('pagoda-api-key') ? 'wrong key' : '');
  if (res.status === 404) { $('off').hidden = false; return; }
  if (!res.ok) return retry('HTTP ' + res.status);
  $('login').hidden = true;
  $('main').hidden = false;
  dash.connected = true;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    let chunk;
    try { chunk = await reader.read(); } catch (e) { break; }
    if (chunk.done) break;
    buf += decoder.decode(chunk.value, { stream: true });
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data && !onEvent(JSON.parse(data))) { reader.cancel(); return connect(); }
    }
  }
  dash.connected = false;
  retry('the stream ended');
}

function retry(why) {
  setHealth('down', why);
  setTimeout(connect, 2000);
}

function showLogin(error) {
  $('main').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = error;
  setHealth('', 'locked');
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem('pagoda-api-key', $('key').value);
  connect();
});

// ---- state ----

// Applies one event; false when a delta does not fit (then reconnect).
function onEvent(msg) {
  if (msg.type === 'state') {
    dash.state = msg;
  } else if (msg.type === 'delta') {
    if (!dash.state || msg.from !== dash.state.version) return false;
    applyDelta(dash.state, msg);
  } else if (msg.type === 'health') {
    if (dash.state) { dash.state.health = msg.health; dash.state.now = msg.now; }
    schedule();
    return true;
  }
  sample(dash.state);
  schedule();
  return true;
}

function applyDelta(s, d) {
  for (const run of d.blocks)
    for (const k of Object.keys(s.blocks))
      for (let i = 0; i < run[k].length; ++i) s.blocks[k][run.first + i] = run[k][i];
  const removed = new Set(d.removed);
  const bySeq = new Map(s.requests.filter((r) => !removed.has(r.seq)).map((r) => [r.seq, r]));
  for (const r of d.upserted) bySeq.set(r.seq, r);
  s.requests = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  s.finishes.splice(0, d.finishes_dropped);
  s.finishes.push(...d.finishes_added);
  for (const k of ['version', 'step', 'time', 'now', 'counters', 'audit', 'health']) s[k] = d[k];
}

function sample(s) {
  const prev = dash.samples[dash.samples.length - 1];
  if (prev && prev.time === s.time) return;
  const c = s.counters;
  dash.samples.push({ time: s.time, c, total: s.blocks.state.length });
  if (prev) {
    const bad = c.errored + c.timed_out + c.step_failures - (prev.c.errored + prev.c.timed_out + prev.c.step_failures);
    if (bad > 0) dash.marks.push(s.time);
  }
  while (dash.samples.length && dash.samples[0].time < s.time - HISTORY_S) dash.samples.shift();
  while (dash.marks.length && dash.marks[0] < s.time - HISTORY_S) dash.marks.shift();
}

// Block counts by state, the way the map shows them.
dash.counts = () => {
  const n = { free: 0, cached: 0, used: 0, shared: 0, reserved: 0 };
  if (dash.state) for (const st of dash.state.blocks.state) n[STATES[st]]++;
  return n;
};

// ---- drawing ----

let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function render() {
  const s = dash.state;
  if (!s) return;
  $('model').textContent = `${s.model} · ${s.blocks.state.length} blocks of ${s.block_size} tokens` +
    (s.paged ? '' : ' · reserve mode') + ` · step ${s.step}` +
    (s.counters.last_step_experts ? ` · ${s.counters.last_step_experts} experts run` : '') +
    (s.counters.state_slots ? ` · ${s.counters.state_slots_used}/${s.counters.state_slots} state slots` : '') +
    (s.counters.state_checkpoints
      ? ` · ${s.counters.state_checkpoints_used}/${s.counters.state_checkpoints} state checkpoints`
      : '');
  setHealth(s.health.status, s.health.reason);
  $('heartbeat').textContent = `heartbeat ${s.health.heartbeat_age_s.toFixed(1)} s` +
    (s.health.step_in_progress ? ` · step running ${s.health.step_running_s.toFixed(1)} s` : '') +
    ` · stalls ${s.health.stalls}`;
  $('audit').textContent = !s.audit.enabled ? '' : s.audit.failure ? 'audit FAILED: ' + s.audit.failure
    : `audit ok (${s.audit.passed})`;
  $('audit').className = s.audit.failure ? 'error' : '';
  drawMap(s);
  drawCharts();
  drawTables(s);
}

function setHealth(status, reason) {
  const h = $('health');
  h.textContent = status ? status + (reason ? ': ' + reason : '') : reason;
  h.className = 'badge ' + status;
}

function fitCanvas(c) {
  const r = c.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  if (c.width !== Math.round(r.width * dpr)) c.width = Math.round(r.width * dpr);
  return { w: c.width, dpr };
}

const legend = STATES.map((st) => `<span><i style="background:${COLORS[st]}"></i>${st}</span>`).join('');
$('legend').innerHTML = legend + '<span>(cached: darker is evicted later)</span>';

let layout = null;  // the map's geometry, for hovering
function drawMap(s) {
  const c = $('map');
  const { w } = fitCanvas(c);
  const n = s.blocks.state.length;
  const cell = Math.max(2, Math.min(16, Math.floor(Math.sqrt((w * 300) / Math.max(1, n)))));
  const cols = Math.max(1, Math.floor(w / cell));
  const h = Math.ceil(n / cols) * cell;
  if (c.height !== h) { c.height = h; c.style.height = h / (window.devicePixelRatio || 1) + 'px'; }
  const ctx = c.getContext('2d');
  ctx.clearRect(0, 0, w, h);
  const b = s.blocks;
  const maxRank = Math.max(1, s.counters.kv_cached);
  const gap = cell > 4 ? 1 : 0;
  for (let i = 0; i < n; ++i) {
    const st = STATES[b.state[i]];
    if (st === 'cached') ctx.fillStyle = `hsl(213, 90%, ${80 - 35 * (b.lru[i] / maxRank)}%)`;
    else ctx.fillStyle = COLORS[st];
    ctx.fillRect((i % cols) * cell, Math.floor(i / cols) * cell, cell - gap, cell - gap);
  }
  layout = { cell, cols, n };
  const k = dash.counts();
  $('block-counts').textContent = STATES.map((st) => `${st} ${k[st]}`).join(' · ');
}

$('map').addEventListener('mousemove', (e) => {
  const s = dash.state, tip = $('tip');
  if (!s || !layout) return;
  const r = e.target.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
  const x = Math.floor(((e.clientX - r.left) * dpr) / layout.cell), y = Math.floor(((e.clientY - r.top) * dpr) / layout.cell);
  const i = y * layout.cols + x;
  if (x >= layout.cols || i >= layout.n) { tip.hidden = true; return; }
  const b = s.blocks;
  tip.textContent = `block ${i}: ${STATES[b.state[i]]}\nrefcount ${b.ref[i]}` +
    (b.owners[i].length ? `\nrequests ${b.owners[i].join(', ')}` : '') +
    (b.hash[i] ? `\nhash ${b.hash[i].toString(16).padStart(8, '0')}…` : '') +
    (b.lru[i] >= 0 ? `\nLRU rank ${b.lru[i]} (0: evicted next)` : '') +
    `\ntokens ${b.tokens[i]}/${s.block_size}`;
  tip.style.left = e.clientX - r.left + 12 + 'px';
  tip.style.top = e.clientY - r.top + 12 + 'px';
  tip.hidden = false;
});
$('map').addEventListener('mouseleave', () => { $('tip').hidden = true; });

// Percentile q of the latencies observed between two samples (bucket upper bounds).
function percentile(bounds, newer, older, q) {
  const d = newer.map((v, i) => v - (older ? older[i] : 0));
  const total = d.reduce((a, b) => a + b, 0);
  if (total <= 0) return null;
  let acc = 0;
  for (let i = 0; i < d.length; ++i) if ((acc += d[i]) >= q * total) return 1000 * (bounds[i] ?? bounds[bounds.length - 1] * 2);
  return null;
}

// Per sample: rates against the sample about `span` seconds before.
function series() {
  const out = { tokens: [[], []], kv: [[]], queues: [[], []], preempt: [[]], step: [[], []], latency: [[], [], [], []] };
  const S = dash.samples, bounds = dash.state.histogram_bounds;
  let j = 0;
  for (let i = 1; i < S.length; ++i) {
    const a = S[i - 1], b = S[i], dt = Math.max(1e-3, b.time - a.time), t = b.time;
    out.tokens[0].push([t, (b.c.prompt_tokens - a.c.prompt_tokens) / dt]);
    out.tokens[1].push([t, (b.c.generation_tokens - a.c.generation_tokens) / dt]);
    out.kv[0].push([t, (100 * b.c.kv_used) / b.total]);
    out.queues[0].push([t, b.c.running]);
    out.queues[1].push([t, b.c.waiting]);
    out.preempt[0].push([t, (b.c.preemptions - a.c.preemptions) / dt]);
    out.step[0].push([t, 1000 * b.c.last_step_seconds]);
    out.step[1].push([t, 1000 * b.c.step_predicted_s]);
    while (S[j].time < t - 5) ++j;  // latency percentiles over the last 5 s
    const o = j < i ? S[j] : a;
    out.latency[0].push([t, percentile(bounds, b.c.ttft, o.c.ttft, 0.5)]);
    out.latency[1].push([t, percentile(bounds, b.c.ttft, o.c.ttft, 0.99)]);
    out.latency[2].push([t, percentile(bounds, b.c.itl, o.c.itl, 0.5)]);
    out.latency[3].push([t, percentile(bounds, b.c.itl, o.c.itl, 0.99)]);
  }
  return out;
}

const LINE_COLORS = ['#2563eb', '#f59e0b', '#16a34a', '#dc2626'];
function drawCharts() {
  if (dash.samples.length < 2) return;
  const all = series(), now = dash.state.time;
  for (const c of document.querySelectorAll('canvas[data-chart]')) {
    const { w, dpr } = fitCanvas(c);
    const h = Math.round(110 * dpr);
    if (c.height !== h) c.height = h;
    const ctx = c.getContext('2d');
    ctx.clearRect(0, 0, w, h);
    const lines = all[c.dataset.chart];
    let max = 0;
    for (const l of lines) for (const [, v] of l) if (v != null && v > max) max = v;
    max = max > 0 ? max * 1.1 : 1;
    // The axis spans what there is, up to 10 minutes.
    const span = Math.max(10, Math.min(HISTORY_S, now - dash.samples[0].time));
    const X = (t) => w - ((now - t) / span) * w, Y = (v) => h - (v / max) * (h - 14 * dpr);
    ctx.fillStyle = '#dc2626';
    for (const t of dash.marks) ctx.fillRect(X(t), 0, Math.max(1, dpr), h);
    lines.forEach((l, k) => {
      ctx.strokeStyle = LINE_COLORS[k];
      ctx.lineWidth = dpr;
      ctx.beginPath();
      let up = false;
      for (const [t, v] of l) {
        if (v == null) { up = false; continue; }
        if (up) ctx.lineTo(X(t), Y(v)); else ctx.moveTo(X(t), Y(v));
        up = true;
      }
      ctx.stroke();
    });
    ctx.fillStyle = '#555';
    ctx.font = `${10 * dpr}px sans-serif`;
    const last = lines.map((l) => l.length ? l[l.length - 1][1] : null).map((v) => v == null ? '-' : v.toFixed(1));
    ctx.fillText(`max ${max.toFixed(1)}   now ${last.join(' / ')}`, 2, 10 * dpr);
  }
}

function table(el, head, rows) {
  const esc = (v) => String(v).replace(/[&<>]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[ch]);
  el.innerHTML = '<tr>' + head.map((h) => `<th>${h}</th>`).join('') + '</tr>' +
    rows.map((r) => '<tr>' + r.map((v) => `<td>${esc(v)}</td>`).join('') + '</tr>').join('');
}

function drawTables(s) {
  const age = (t) => (s.now - t).toFixed(1);
  const head = ['request', 'prio', 'state', 'prompt', 'computed', 'cached', 'generated', 'blocks', 'preempted', 'age s', 'deadline s'];
  const row = (r) => [r.choice ? `${r.request}#${r.choice}` : r.request, r.priority, r.state, r.prompt_tokens,
    r.computed_tokens, r.cached_tokens, r.generated_tokens, r.blocks, r.preemptions, age(r.arrival), (r.deadline - s.now).toFixed(0)];
  const running = s.requests.filter((r) => r.state === 'prefill' || r.state === 'decode').sort((a, b) => a.queue_pos - b.queue_pos);
  const waiting = s.requests.filter((r) => r.state === 'waiting' || r.state === 'preempted').sort((a, b) => a.queue_pos - b.queue_pos);
  table($('running'), head, running.map(row));
  table($('waiting'), head, waiting.map(row));
  $('running-count').textContent = running.length;
  $('waiting-count').textContent = waiting.length;
  const fin = s.finishes.slice().reverse();
  table($('finished'), ['request', 'reason', 'prompt', 'generated', 'ago s'],
    fin.slice(0, 50).map((f) => [f.choice ? `${f.request}#${f.choice}` : f.request, f.reason, f.prompt_tokens, f.generated_tokens, age(f.time)]));
  const by = {};
  for (const f of fin) by[f.reason] = (by[f.reason] || 0) + 1;
  $('finished-count').textContent = Object.entries(by).map(([k, v]) => `${k} ${v}`).join(' · ');
}

window.addEventListener('resize', schedule);
connect();
