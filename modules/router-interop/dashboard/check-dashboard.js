#!/usr/bin/env node
// Opens kvrouter's dashboard in Debian's headless Chromium (playwright-core, no browser download) and checks what
// the page shows against expectations read from standard input, one JSON object per line, without reloading the
// page between them: the page must update by itself. For each line it waits (bounded) until the page matches,
// answers "ok <step>" on standard output and saves a screenshot if the line names a path; on a mismatch it prints
// what it expected and what the page shows, and exits 1. It exits 0 at the end of its input.
//
//   node check-dashboard.js <management URL>  < expectations.jsonl
//
// An expectation: {"step": "initial", "select": MODEL (optional: picks it in the model selector),
//   "models": [MODEL, ...] (the sections shown, in order), "model": MODEL (the section the rest is about),
//   "queueDepth": N, "liveBookings": N, "ranks": [{"worker", "rank", "inFlight", "liveBookings",
//   "prefill": [value, capacity], "decode": [value, capacity], "overloaded", "available"}, ...],
//   "decisions": TEXT, "pools": TEXT (a panel's note, e.g. "not available on this node", or "N rows"),
//   "decisionRows": [{"kind", "requestId", "worker", "rank"}, ...], "poolRows": [{"region", "stale"}, ...],
//   "stub": {"explain": BODY, "pools": BODY} (optional: from this step on, the page's requests to /models/explain
//   and /models/pools get these answers, and its /models/state answers lose any "pools" field, so the panels are
//   checked on the routes' documented formats whether or not this node serves them),
//   "abort": PATH (optional: from this step on, the page's requests to PATH fail as if the server were down; "restore":
//   true lifts it), "errorBanner": TEXT the error banner must contain (without it, the banner must be hidden),
//   "screenshot": PATH (optional)}
// Environment: KVROUTER_CHROMIUM (default /usr/bin/chromium), KVROUTER_DASHBOARD_STEP_TIMEOUT_MS (default 20000),
// KVROUTER_DASHBOARD_HARD_TIMEOUT_MS (default 300000: the process exits 3 after it, whatever happens).
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { chromium } = require('playwright-core');

const url = process.argv[2];
const executablePath = process.env.KVROUTER_CHROMIUM || '/usr/bin/chromium';
const stepTimeoutMs = Number(process.env.KVROUTER_DASHBOARD_STEP_TIMEOUT_MS || 20000);
const hardTimeoutMs = Number(process.env.KVROUTER_DASHBOARD_HARD_TIMEOUT_MS || 300000);
// This machine has no network but loopback: without the background-networking flags Chromium keeps trying to
// reach its services. launch() gives the browser a fresh temporary profile of its own.
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const fail = (message) => {
  console.error(`check-dashboard: ${message}`);
  process.exit(1);
};

if (!url) {
  fail('usage: node check-dashboard.js <management URL> < expectations.jsonl');
}
setTimeout(() => {
  console.error(`check-dashboard: gave up after ${hardTimeoutMs} ms`);
  process.exit(3);
}, hardTimeoutMs).unref();

/** What the page shows, read from its data-testid attributes, in the shape of an expectation. */
function observe(model) {
  const q = (root, id) => root.querySelector(`[data-testid="${id}"]`);
  const text = (node) => (node ? node.textContent.trim() : null);
  const bar = (node) => (node ? [Number(node.dataset.value), Number(node.dataset.capacity)] : null);
  const banner = q(document, 'error-banner');
  const sections = [...document.querySelectorAll('[data-testid="model-section"]')];
  const section = sections.find((s) => s.dataset.model === model);
  const seen = {
    models: sections.map((s) => s.dataset.model),
    errorBanner: banner && !banner.hidden ? banner.textContent : null,
    refreshes: Number(q(document, 'last-refresh').dataset.refreshCount),
  };
  if (!section) {
    return seen;
  }
  const panelNote = (id) => {
    const panel = q(section, id);
    const rows = panel ? panel.querySelectorAll('tbody tr').length : 0;
    return rows ? `${rows} rows` : text(panel && panel.querySelector('.unavailable-note'));
  };
  return Object.assign(seen, {
    model: section.dataset.model,
    queueDepth: Number(text(q(section, 'queue-depth'))),
    liveBookings: Number(text(q(section, 'live-bookings'))),
    ranks: [...section.querySelectorAll('[data-testid="rank"]')].map((rank) => ({
      worker: rank.dataset.worker,
      rank: Number(rank.dataset.rank),
      inFlight: Number(text(q(rank, 'rank-in-flight'))),
      liveBookings: Number(text(q(rank, 'rank-live-bookings'))),
      prefill: bar(q(rank, 'rank-prefill')),
      decode: bar(q(rank, 'rank-decode')),
      // the marks a person sees, not only the attributes
      overloaded: q(rank, 'rank-overloaded') !== null && rank.dataset.overloaded === 'true',
      available: q(rank, 'rank-unavailable') === null && rank.dataset.available === 'true',
    })),
    decisions: panelNote('decisions'),
    pools: panelNote('pools'),
    decisionRows: [...section.querySelectorAll('[data-testid="decision-row"]')].map((row) => ({
      kind: row.dataset.kind, requestId: row.dataset.requestId, worker: row.dataset.worker,
      rank: Number(row.dataset.rank),
    })),
    poolRows: [...section.querySelectorAll('[data-testid="pool-row"]')].map((row) => ({
      region: row.dataset.region,
      stale: q(row, 'pool-stale') !== null && row.dataset.stale === 'true',
    })),
  });
}

/** The expected fields the page does not show as expected (empty when it matches). */
function mismatches(expected, seen) {
  const wrong = [];
  if (expected.errorBanner === undefined && seen.errorBanner) {
    wrong.push(`error banner shown: ${seen.errorBanner}`);
  }
  if (expected.errorBanner !== undefined && !(seen.errorBanner || '').includes(expected.errorBanner)) {
    wrong.push(`error banner: expected one saying "${expected.errorBanner}", page shows ${seen.errorBanner}`);
  }
  for (const key of ['models', 'model', 'queueDepth', 'liveBookings', 'ranks', 'decisions', 'pools', 'decisionRows',
    'poolRows']) {
    if (key in expected && JSON.stringify(expected[key]) !== JSON.stringify(seen[key])) {
      wrong.push(`${key}: expected ${JSON.stringify(expected[key])}, page shows ${JSON.stringify(seen[key])}`);
    }
  }
  return wrong;
}

const refreshCount = () => Number(document.querySelector('[data-testid="last-refresh"]').dataset.refreshCount);

async function stub(page, answers) {
  await page.route((u) => u.pathname === '/models/explain', (route) => route.fulfill({ json: answers.explain }));
  await page.route((u) => u.pathname === '/models/pools', (route) => route.fulfill({ json: answers.pools }));
  await page.route((u) => u.pathname === '/models/state', async (route) => {
    const response = await route.fetch();
    const state = await response.json();
    delete state.pools;
    await route.fulfill({ response, json: state });
  });
}

const aborted = new Map();

async function check(page, expected) {
  if (expected.stub) {
    await stub(page, expected.stub);
  }
  if (expected.abort) {
    const matcher = (u) => u.pathname === expected.abort;
    aborted.set(expected.abort, matcher);
    await page.route(matcher, (route) => route.abort('connectionrefused'));
  }
  if (expected.restore) {
    for (const matcher of aborted.values()) {
      await page.unroute(matcher);
    }
    aborted.clear();
  }
  const refreshesBefore = await page.evaluate(refreshCount);
  if (expected.select !== undefined) {
    await page.selectOption('[data-testid="model-select"]', expected.select, { timeout: stepTimeoutMs });
  }
  const deadline = Date.now() + stepTimeoutMs;
  let seen;
  let wrong;
  for (;;) {
    seen = await page.evaluate(observe, expected.model);
    wrong = mismatches(expected, seen);
    // only a refresh that started after the step did reads what the step is about (the one under way may not);
    // a failing one does not count as a refresh, and only it can show the banner expected
    if (expected.errorBanner === undefined && seen.refreshes < refreshesBefore + 2) {
      wrong.push(`no refresh started after the step began (refreshes ${refreshesBefore} then ${seen.refreshes})`);
    }
    if (wrong.length === 0 || Date.now() > deadline) {
      break;
    }
    await page.waitForTimeout(200);
  }
  if (wrong.length) {
    fail(`step "${expected.step}" does not match after ${stepTimeoutMs} ms:\n  ${wrong.join('\n  ')}`);
  }
  if (expected.screenshot) {
    fs.mkdirSync(path.dirname(expected.screenshot), { recursive: true });
    await page.screenshot({ path: expected.screenshot, fullPage: true });
  }
}

async function main() {
  const browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS, timeout: 60000 });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()));
    await page.goto(`${url}/dashboard`, { timeout: stepTimeoutMs, waitUntil: 'load' });
    // a reload would drop this mark: every step must be met by the page updating itself
    await page.evaluate(() => { window.kvrouterCheckMark = 'not reloaded'; });
    const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    for await (const line of lines) {
      if (!line.trim()) {
        continue;
      }
      const expected = JSON.parse(line);
      await check(page, expected);
      if (await page.evaluate(() => window.kvrouterCheckMark) !== 'not reloaded') {
        fail(`step "${expected.step}": the page was reloaded`);
      }
      // script errors; the browser's own lines for failed requests (404s of routes this node lacks, aborted
      // requests) are not the page's: the page shows those in its panels and banner
      const unexpected = pageErrors.filter((e) => !e.startsWith('Failed to load resource'));
      if (unexpected.length) {
        fail(`step "${expected.step}": the page logged errors: ${unexpected.join('; ')}`);
      }
      console.log(`ok ${expected.step}`);
    }
  } finally {
    await browser.close();
  }
}

main().then(() => process.exit(0), (e) => fail(e && e.stack ? e.stack : String(e)));
