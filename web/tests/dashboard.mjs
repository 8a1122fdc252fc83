#!/usr/bin/env node
// End-to-end check of the dashboard against a running daemon (or the mock):
//
//   TIDAL_URL=http://127.0.0.1:8080 TIDAL_TOKEN=tidal_... node web/tests/dashboard.mjs
//
// Env: TIDAL_URL, TIDAL_TOKEN (required); TIDAL_ARTIFACTS (screenshots,
// default web/test-artifacts); CHROMIUM (default /usr/bin/chromium).
// Exits 0 when every check passes, 1 with "FAIL [step]: why" and a
// screenshot otherwise, 2 on bad usage. Submits one 1-GPU, 600 s job.

import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const BASE = (process.env.TIDAL_URL ?? '').replace(/\/+$/, '');
const TOKEN = process.env.TIDAL_TOKEN ?? '';
const ARTIFACTS = resolve(process.env.TIDAL_ARTIFACTS ?? join(here, '..', 'test-artifacts'));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const OVERALL_MS = 180_000;

if (!BASE || !TOKEN) {
  console.error('usage: TIDAL_URL=http://127.0.0.1:8080 TIDAL_TOKEN=tidal_... [TIDAL_ARTIFACTS=dir] node web/tests/dashboard.mjs');
  process.exit(2);
}

const t0 = Date.now();
const facts = {};
const screenshots = [];
let currentStep = 'start';
let page = null;
let browser = null;

class Failure extends Error {}
const fail = (msg) => {
  throw new Failure(msg);
};
const sel = (id) => `[data-testid="${id}"]`;

/** The API straight from Node, with the token: what the page should show. */
async function api(path, init = {}) {
  let res;
  try {
    res = await fetch(BASE + path, { ...init, headers: { Authorization: `Bearer ${TOKEN}`, ...(init.headers ?? {}) } });
  } catch (e) {
    fail(`${init.method ?? 'GET'} ${path} from Node: ${e.cause?.message ?? e.message}`);
  }
  const text = await res.text();
  if (!res.ok) fail(`${init.method ?? 'GET'} ${path} from Node answered ${res.status}: ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text);
  } catch {
    fail(`${path} from Node: not JSON: ${text.slice(0, 200)}`);
  }
}

async function step(name, fn) {
  currentStep = name;
  const s = Date.now();
  const out = await fn();
  console.log(`  ok  ${name} (${((Date.now() - s) / 1000).toFixed(1)} s)`);
  return out;
}

async function shot(name, p = page) {
  const file = join(ARTIFACTS, `${name}.png`);
  await p.screenshot({ path: file, fullPage: true });
  screenshots.push(file);
}

/** Text of an element, or fails saying which section error is showing. */
async function textOf(testid, errorTestids = []) {
  for (const e of errorTestids) {
    const banner = page.locator(sel(e));
    if (await banner.isVisible()) fail(`the page shows an error: ${(await banner.textContent())?.trim()}`);
  }
  return ((await page.locator(sel(testid)).first().textContent()) ?? '').trim();
}

const digits = (s) => Number(String(s).replace(/[^\d.]/g, ''));

async function openTab(id) {
  await page.click(sel(`tab-${id}`));
  await page.locator(sel(`section-${id}`)).waitFor({ state: 'visible' });
}

/** Waits until fn() is truthy (polling), or fails with message(). */
async function until(fn, timeoutMs, message) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  fail(typeof message === 'function' ? await message() : message);
}

async function main() {
  await mkdir(ARTIFACTS, { recursive: true });
  await rm(join(ARTIFACTS, 'failure.png'), { force: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));

  await step('the daemon answers GET /v1/cluster to TIDAL_TOKEN (from Node)', async () => {
    await api('/v1/cluster');
  });

  await step('open the dashboard with #token= and keep the token out of the URL', async () => {
    await page.goto(`${BASE}/#token=${encodeURIComponent(TOKEN)}`);
    const shown = await Promise.race([
      page.locator(sel('section-cluster')).waitFor({ state: 'visible' }).then(() => 'cluster'),
      page.locator(sel('token-form')).waitFor({ state: 'visible' }).then(() => 'token-form'),
    ]).catch(() => null);
    if (shown === 'token-form') fail(`the page shows the token form: ${(await page.locator(sel('token-form')).textContent())?.trim()}`);
    if (shown !== 'cluster') fail(`the dashboard did not render at ${BASE}/ (is web/dist built and served?)`);
    await until(async () => /\d/.test(await textOf('cluster-gpus', ['cluster-error'])), 10_000, 'the cluster GPU count never appeared');
    if (page.url().includes('token=')) fail(`the token is still in the URL: ${page.url()}`);
    const stored = await page.evaluate(() => sessionStorage.getItem('tidal.token'));
    if (stored !== TOKEN) fail('the token was not kept in sessionStorage');
    if (await page.locator(sel('token-form')).isVisible()) fail('the token form is showing although the token is good');
  });

  await step('cluster numbers are the live /v1/cluster answer', async () => {
    let snap;
    let shown;
    for (let attempt = 0; attempt < 4 && !shown; attempt++) {
      const res = await page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/cluster' && r.request().method() === 'GET', { timeout: 8_000 });
      if (!res.ok()) fail(`the page's GET /v1/cluster answered ${res.status()}`);
      snap = await res.json();
      await page.waitForFunction((now) => document.querySelector('[data-testid="section-cluster"]')?.dataset.now === String(now), snap.now, { timeout: 3_000 }).catch(() => null);
      shown = await page.evaluate((now) => {
        const root = document.querySelector('[data-testid="section-cluster"]');
        if (root?.dataset.now !== String(now)) return null;
        const t = (id) => document.querySelector(`[data-testid="cluster-${id}"]`)?.textContent?.trim() ?? '';
        return { gpus: t('gpus'), allocation: t('allocation'), pending: t('pending'), running: t('running'), now: t('now') };
      }, snap.now);
    }
    if (!shown) fail('the cluster numbers never matched a /v1/cluster answer the page received');
    if (!(snap.gpus > 0)) fail(`/v1/cluster says gpus = ${snap.gpus}`);
    if (digits(shown.gpus) !== snap.gpus) fail(`GPUs shown "${shown.gpus}", /v1/cluster says ${snap.gpus}`);
    if (!/^\d{1,3}(\.\d+)?%$/.test(shown.allocation)) fail(`allocation is not shown as a percentage: "${shown.allocation}"`);
    if (Math.abs(parseFloat(shown.allocation) - snap.allocation_ratio * 100) > 0.051) fail(`allocation shown ${shown.allocation}, /v1/cluster says ${snap.allocation_ratio}`);
    if (digits(shown.pending) !== snap.pending_jobs) fail(`pending shown "${shown.pending}", /v1/cluster says ${snap.pending_jobs}`);
    if (digits(shown.running) !== snap.running_jobs) fail(`running shown "${shown.running}", /v1/cluster says ${snap.running_jobs}`);
    if (!/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.test(shown.now)) fail(`the daemon clock is not shown as a date: "${shown.now}"`);
    const direct = await api('/v1/cluster');
    if (direct.gpus !== digits(shown.gpus)) fail(`GPUs shown ${shown.gpus}, a direct GET /v1/cluster says ${direct.gpus}`);
    Object.assign(facts, { gpus: direct.gpus, allocation: shown.allocation });
  });

  await step('the page refreshes by itself (allocation chart gains points)', async () => {
    const points = async () => Number(await page.locator(sel('cluster-chart')).getAttribute('data-points'));
    const before = await points();
    await until(async () => (await points()) > before, 7_000, `the allocation chart stayed at ${before} points for 7 s: no refresh`);
  });

  await step('the topology map has a tile per domain', async () => {
    const topo = await api('/v1/cluster/topology');
    if (!topo.domains?.length) fail('GET /v1/cluster/topology has no domains');
    const tiles = page.locator(`${sel('topology-map')} ${sel('topo-tile')}`);
    await until(async () => (await tiles.count()) === topo.domains.length, 6_000, async () => `the map shows ${await tiles.count()} tiles for ${topo.domains.length} domains${await errorText('topology-error')}`);
    const title = await tiles.first().getAttribute('title');
    if (!title || !/[\d,.]+ \/ [\d,]+ GPUs/.test(title)) fail(`a tile's hover text lacks its numbers: ${title}`);
    facts.tiles = topo.domains.length;
    await shot('cluster');
  });

  let submittedId;
  await step('submit a job through the form and see it in the queue within 15 s', async () => {
    await openTab('queue');
    const tenants = (await api('/v1/tenants')).tenants;
    if (!tenants?.length) fail('GET /v1/tenants lists no tenant to submit for');
    await until(async () => (await textOf('pending-note', ['pending-error', 'running-error'])) && (await textOf('running-note')), 6_000, 'the queue tables never loaded');
    await page.fill(sel('submit-tenant'), tenants[0].name);
    await page.fill(sel('submit-gpus'), '1');
    await page.fill(sel('submit-estimated_runtime_s'), '600');
    await page.fill(sel('submit-name'), `dashboard-test-${Date.now()}`);
    await page.click(sel('submit-button'));
    const result = page.locator(sel('submit-result'));
    const error = page.locator(sel('submit-error'));
    await until(async () => /Submitted job \d+/.test((await result.textContent()) ?? '') || (await error.isVisible()), 10_000, 'no answer to the submission within 10 s');
    if (await error.isVisible()) fail(`the submission was refused: ${await error.textContent()}`);
    submittedId = Number(/Submitted job (\d+)/.exec(await result.textContent())[1]);
    const started = Date.now();
    const row = `${sel('pending-table')} ${sel(`job-row-${submittedId}`)}, ${sel('running-table')} ${sel(`job-row-${submittedId}`)}`;
    try {
      await page.locator(row).first().waitFor({ state: 'attached', timeout: 15_000 });
    } catch {
      const job = await api(`/v1/jobs/${submittedId}`).catch((e) => ({ state: `unknown (${e.message})` }));
      fail(`job ${submittedId} did not appear in the pending or running table within 15 s (the API says it is ${job.state}${job.reason ? `: ${job.reason}` : ''})`);
    }
    const where = (await page.locator(`${sel('pending-table')} ${sel(`job-row-${submittedId}`)}`).count()) ? 'pending' : 'running';
    facts.submitted = `job ${submittedId} in ${where} after ${((Date.now() - started) / 1000).toFixed(1)} s`;
  });

  await step('an API error on submit is shown in the form', async () => {
    await page.fill(sel('submit-tenant'), 'no-such-tenant-dashboard-test');
    await page.click(sel('submit-button'));
    const error = page.locator(sel('submit-error'));
    await error.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => fail('submitting for an unknown tenant showed no error'));
    const text = ((await error.textContent()) ?? '').trim();
    if (!/[a-z_]+: .+/.test(text)) fail(`the form error lacks the API's code and message: "${text}"`);
    facts.submitError = text;
  });

  await step('open the explanation of a pending job', async () => {
    const rows = page.locator(`${sel('pending-table')} tbody tr[data-testid^="job-row-"]`);
    let cleanup = null;
    const any = await until(async () => (await rows.count()) > 0, 6_000, 'x').catch(() => false);
    if (!any) {
      // an idle queue: park a whole-cluster job so there is something to explain, then cancel it
      const big = await api('/v1/jobs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ tenant: (await api('/v1/tenants')).tenants[0].name, gpus: facts.gpus, estimated_runtime_s: 600, name: 'dashboard-test-explain' }) });
      cleanup = big.id;
      await page.locator(`${sel('pending-table')} ${sel(`job-row-${big.id}`)}`).waitFor({ state: 'attached', timeout: 15_000 }).catch(() => fail('the queue had no pending job to explain, and a parked whole-cluster job never showed as pending'));
    }
    try {
      const mine = page.locator(`${sel('pending-table')} ${sel(`job-row-${cleanup ?? submittedId}`)}`);
      const target = (await mine.count()) ? mine : rows.first();
      const id = Number((await target.getAttribute('data-testid')).replace('job-row-', ''));
      await target.click();
      const panel = page.locator(sel('explain-panel'));
      await until(async () => ['loaded', 'error'].includes(await panel.getAttribute('data-state')) && (await panel.getAttribute('data-job')) === String(id), 10_000, `the explanation of job ${id} never loaded`);
      if ((await panel.getAttribute('data-state')) === 'error') fail(`explain failed: ${await errorText('explain-error')}`);
      const head = await textOf('explain-job');
      if (!head.includes(String(id))) fail(`the explain panel shows "${head}" for job ${id}`);
      const causes = await page.locator(sel('explain-cause')).count();
      const p50 = await textOf('explain-p50');
      const p90 = await textOf('explain-p90');
      const direct = await api(`/v1/jobs/${id}/explain`);
      if (direct.start_estimate?.p50 && !/\d{4}-\d\d-\d\d/.test(p50)) fail(`the P50 start is not shown: "${p50}"`);
      if (direct.start_estimate?.p90 && !/\d{4}-\d\d-\d\d/.test(p90)) fail(`the P90 start is not shown: "${p90}"`);
      if (direct.causes?.length && causes === 0) fail(`the API gives ${direct.causes.length} causes for job ${id}, the panel none`);
      facts.explain = `job ${id} (${causes} causes)`;
      await shot('queue');
    } finally {
      if (cleanup) await api(`/v1/jobs/${cleanup}/cancel`, { method: 'POST' }).catch(() => null);
    }
  });

  await step('tenants table and chart match /v1/tenants', async () => {
    await openTab('tenants');
    const tenants = (await api('/v1/tenants')).tenants;
    const rows = page.locator(`${sel('tenants-table')} tbody tr[data-testid^="tenant-row-"]`);
    await until(async () => (await rows.count()) === tenants.length, 6_000, async () => `the tenants table has ${await rows.count()} rows for ${tenants.length} tenants${await errorText('tenants-error')}`);
    const first = page.locator(sel(`tenant-row-${tenants[0].name}`));
    const cells = await first.locator('td').allTextContents();
    if (cells[0] !== tenants[0].name || cells[1] !== tenants[0].tier) fail(`tenant row shows ${cells.join(' | ')}`);
    if (digits(cells[2]) !== tenants[0].floor_gpus) fail(`tenant ${tenants[0].name}: floor shown ${cells[2]}, API ${tenants[0].floor_gpus}`);
    if (Number(await page.locator(sel('tenants-chart')).getAttribute('data-points')) !== tenants.length) fail('the tenants chart does not have one group per tenant');
    facts.tenants = tenants.length;
    await shot('tenants');
  });

  await step('prices table and the history chart of the selected price', async () => {
    await openTab('prices');
    const prices = (await api('/v1/prices')).prices;
    const rows = page.locator(`${sel('prices-table')} tbody tr[data-testid^="price-row-"]`);
    await until(async () => (await rows.count()) === prices.length, 6_000, async () => `the prices table has ${await rows.count()} rows for ${prices.length} prices${await errorText('prices-error')}`);
    if (prices.length > 0) {
      const p = prices[prices.length - 1];
      await page.click(sel(`price-row-${p.gpu_model}/${p.tier}`));
      const history = (await api(`/v1/prices/history?gpu_model=${encodeURIComponent(p.gpu_model)}&tier=${encodeURIComponent(p.tier)}`)).points;
      await until(
        async () => (await textOf('price-history-title', ['price-history-error'])).startsWith(`${p.gpu_model} · ${p.tier}`) && Number(await page.locator(sel('price-chart')).getAttribute('data-points')) >= history.length,
        6_000,
        `the history chart of ${p.gpu_model}/${p.tier} never showed its ${history.length} points`,
      );
    }
    facts.prices = prices.length;
    await shot('prices');
  });

  await step('reports list, and one report shown with the token', async () => {
    await openTab('reports');
    const reports = (await api('/v1/reports')).reports;
    const items = page.locator(`${sel('report-list')} li[data-url]`);
    await until(async () => (await items.count()) === reports.length && (await page.locator(`${sel('report-list')} li`).count()) > 0, 6_000, async () => `the report list has ${await items.count()} entries for ${reports.length} reports${await errorText('reports-error')}`);
    if (reports.length > 0) {
      await items.first().click();
      const frame = page.locator(sel('report-frame'));
      await until(async () => ['loaded', 'error'].includes(await frame.getAttribute('data-state')), 10_000, 'the report never loaded');
      if ((await frame.getAttribute('data-state')) === 'error') fail(`the report failed: ${await errorText('report-view-error')}`);
      const text = await until(async () => ((await page.frameLocator(sel('report-frame')).locator('body').textContent({ timeout: 2_000 }).catch(() => '')) ?? '').trim(), 8_000, 'the report frame stayed empty');
      facts.report = `${reports[0].name} (${text.length} chars)`;
    }
    facts.reports = reports.length;
    await shot('reports');
  });

  await step('a failing fetch shows an error in its section and clears after', async () => {
    const route = /\/v1\/tenants(\?|$)/;
    await page.route(route, (r) => r.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'injected by the dashboard test' } }) }));
    await openTab('tenants');
    const banner = page.locator(sel('tenants-error'));
    await banner.waitFor({ state: 'visible', timeout: 6_000 });
    const text = (await banner.textContent()) ?? '';
    if (!text.includes('injected by the dashboard test')) fail(`the error line does not carry the daemon's message: "${text}"`);
    await shot('error-display');
    await page.unroute(route);
    await banner.waitFor({ state: 'hidden', timeout: 6_000 });
  });

  await step('a bad token shows the token form, and the form accepts a good one', async () => {
    const ctx2 = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const p2 = await ctx2.newPage();
    p2.setDefaultTimeout(10_000);
    try {
      await p2.goto(`${BASE}/#token=tidal_bad_dashboard_test`);
      await p2.locator(sel('token-form')).waitFor({ state: 'visible' });
      const msg = ((await p2.locator(sel('token-message')).textContent()) ?? '').trim();
      if (!/401/.test(msg)) fail(`the token form does not say the token was refused: "${msg}"`);
      await shot('token-form', p2);
      await p2.fill(sel('token-input'), TOKEN);
      await p2.click(sel('token-submit'));
      await p2.locator(sel('token-form')).waitFor({ state: 'detached' });
      await until(async () => /\d/.test((await p2.locator(sel('cluster-gpus')).textContent()) ?? ''), 8_000, 'after pasting the good token the cluster numbers never appeared');
    } finally {
      await ctx2.close();
    }
  });

  currentStep = 'page errors';
  if (pageErrors.length) fail(`uncaught errors in the page: ${pageErrors.slice(0, 3).join(' | ')}`);
}

async function errorText(testid) {
  const b = page?.locator(sel(testid));
  if (b && (await b.isVisible().catch(() => false))) return ` — the page says: ${((await b.textContent()) ?? '').trim()}`;
  return '';
}

const guard = setTimeout(() => {
  console.error(`FAIL [${currentStep}]: the test ran over ${OVERALL_MS / 1000} s`);
  process.exit(1);
}, OVERALL_MS);

let code = 0;
try {
  console.log(`dashboard test against ${BASE} (screenshots in ${ARTIFACTS})`);
  await main();
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(
    `PASS tidal dashboard: ${facts.gpus} GPUs, ${facts.allocation} allocated, ${facts.tiles} map tiles, ${facts.submitted}, ` +
      `refused submit shown, explain ${facts.explain}, ${facts.tenants} tenants, ${facts.prices} prices, ${facts.reports} reports, bad token → form; ` +
      `${screenshots.length} screenshots; ${secs} s`,
  );
} catch (e) {
  code = 1;
  // a Playwright error: its first line says what, the step says where
  const why = e instanceof Failure ? e.message : process.env.DEBUG ? e?.stack ?? String(e) : String(e?.message ?? e).split('\n')[0];
  if (page && page.url() !== 'about:blank') {
    const file = join(ARTIFACTS, 'failure.png');
    await page.screenshot({ path: file, fullPage: true }).then(() => console.error(`screenshot of the failure: ${file}`), () => null);
  }
  console.error(`FAIL [${currentStep}]: ${why}`);
} finally {
  clearTimeout(guard);
  await browser?.close().catch(() => null);
}
process.exit(code);
