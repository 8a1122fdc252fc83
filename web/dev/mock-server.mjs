#!/usr/bin/env node
// A stand-in for `tidal serve` while the daemon is being written: the /v1
// endpoints the dashboard uses (docs/server-api.md), backed by a small
// simulated cluster (1,016 H100 GPUs in 127 hosts under 16 leaf switches, 15
// tenants) whose clock runs `speed` times faster than the wall clock, plus
// web/dist at "/" and canned reports under /reports/. Plain Node, no deps.
//
//   node web/dev/mock-server.mjs [--port 18080] [--host 127.0.0.1]
//        [--token tidal_dev_token] [--speed 60] [--dist web/dist]
//        [--fail /v1/prices ...]   (answer 503 for paths starting so)
//        [--log]                    (one line per request)

import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const opts = { port: 18080, host: '127.0.0.1', token: 'tidal_dev_token', speed: 60, dist: resolve(here, '../dist'), fail: [], log: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => {
    const v = process.argv[++i];
    if (v === undefined) die(`${a} needs a value`);
    return v;
  };
  if (a === '--port') opts.port = Number(next());
  else if (a === '--host') opts.host = next();
  else if (a === '--token') opts.token = next();
  else if (a === '--speed') opts.speed = Number(next());
  else if (a === '--dist') opts.dist = resolve(next());
  else if (a === '--fail') opts.fail.push(next());
  else if (a === '--log') opts.log = true;
  else die(`unknown argument ${a}`);
}
function die(msg) {
  console.error(`mock-server: ${msg}\nusage: node mock-server.mjs [--port N] [--host H] [--token T] [--speed S] [--dist DIR] [--fail PATH]... [--log]`);
  process.exit(2);
}

// ---------------------------------------------------------------- model --

let seed = 20261201;
function rand() {
  // mulberry32: deterministic start, so screenshots look alike run to run
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (weighted) => {
  const total = weighted.reduce((s, [, w]) => s + w, 0);
  let r = rand() * total;
  for (const [v, w] of weighted) if ((r -= w) < 0) return v;
  return weighted[weighted.length - 1][0];
};

const GPUS_PER_HOST = 8;
const WALL_START = Date.now();
const SIM_START = 1764614400; // 2025-12-01 18:40 UTC on the daemon's clock
const simNow = () => SIM_START + Math.floor(((Date.now() - WALL_START) / 1000) * opts.speed);

// switch tree: core > 4 spines > 16 leaves > 127 hosts (the last leaf has 7)
const domains = [];
const hosts = [];
const addDomain = (name, level, parent) => {
  const d = { id: domains.length, name, level, parent };
  domains.push(d);
  return d;
};
const core = addDomain('core', 'core', null);
for (let s = 1; s <= 4; s++) {
  const spine = addDomain(`su${s}`, 'spine', core.id);
  for (let l = 1; l <= 4; l++) {
    const li = (s - 1) * 4 + l;
    const leaf = addDomain(`leaf${li}`, 'leaf', spine.id);
    const n = li === 16 ? 7 : 8;
    for (let k = 1; k <= n; k++) {
      const name = `dgx-${String(li).padStart(2, '0')}-${String(k).padStart(2, '0')}`;
      const host = addDomain(name, 'host', leaf.id);
      hosts.push({ name, domain: host, leaf, spine, free: GPUS_PER_HOST, used: new Array(GPUS_PER_HOST).fill(0) });
    }
  }
}
const TOTAL_GPUS = hosts.length * GPUS_PER_HOST;

const TENANT_NAMES = ['11cb48', '2f9a07', '3c41d2', '48e0b5', '5a7713', '6b02fe', '7d9c4a', '81f3e6', '9e25b0', 'a4c871', 'b7d39f', 'c05e2d', 'd3a6c4', 'e81f59', 'f26b8e'];
const TIERS = ['premium', 'standard', 'standard', 'spot'];
const tenants = TENANT_NAMES.map((name, i) => ({
  name,
  parent: i < 5 ? 'research' : i < 11 ? 'product' : 'platform',
  tier: TIERS[i % TIERS.length],
  floor_gpus: [96, 64, 80, 48, 32, 128, 64, 40, 24, 56, 72, 32, 16, 48, 40][i],
  balance_micro: BigInt(50000 + Math.floor(rand() * 150000)) * 1000000n,
  weight: 1 + (i % 5),
}));
const tenantByName = new Map(tenants.map((t) => [t.name, t]));

const BASE_PRICE = { premium: 3200000n, standard: 2000000n, spot: 900000n }; // micro-credits per GPU-hour
const prices = Object.entries(BASE_PRICE).map(([tier, micro]) => ({ gpu_model: 'H100', tier, micro, history: [] }));
for (const p of prices) {
  // two days of hourly announcements before the start, a gentle random walk
  let m = p.micro;
  for (let k = 48; k >= 1; k--) {
    m = walk(m, p.micro);
    p.history.push({ at: SIM_START - k * 3600, micro: m });
  }
  p.micro = m;
}
let lastPriceAt = SIM_START;
function walk(m, base) {
  const step = BigInt(Math.round((rand() - 0.5) * 0.04 * Number(base)));
  let next = m + step;
  if (next < (base * 6n) / 10n) next = (base * 6n) / 10n;
  if (next > (base * 16n) / 10n) next = (base * 16n) / 10n;
  return (next / 1000n) * 1000n;
}
const micro = (v) => {
  const neg = v < 0n;
  const a = neg ? -v : v;
  return `${neg ? '-' : ''}${a / 1000000n}.${String(a % 1000000n).padStart(6, '0')}`;
};

const jobs = new Map(); // id -> job (all states; finished ones trimmed)
let nextId = 1001;
let cycles = 0;
const idempotency = new Map();

const NAMES = ['llama-70b-sft', 'mixtral-eval', 'vit-h14-pretrain', 'whisper-ft', 'sdxl-lora', 'bert-sweep', 'rlhf-ppo', 'dpo-7b', 'embed-bench', 'moe-ablation', 'tokenizer-train', 'qwen-32b-ft', 'rerank-distill', 'ocr-finetune'];

function newJob({ tenant, gpus, estimated_runtime_s, runtime_s, name, source = 'trace', state = 'pending', priority = 0, gpu_model = ['H100'] }) {
  const t = tenantByName.get(tenant);
  const job = {
    id: nextId++,
    name,
    tenant,
    source,
    state,
    gpus,
    gpu_milli: 1000,
    gpu_model,
    tier: t.tier,
    priority,
    estimated_runtime_s,
    runtime_s: runtime_s ?? estimated_runtime_s,
    submitted_at: simNow(),
    started_at: null,
    ended_at: null,
    placement: [],
    preemptions: 0,
    cancel_requested: false,
    reason: '',
  };
  jobs.set(job.id, job);
  return job;
}

function traceJob(backdate = 0) {
  const tenant = pick(tenants.map((t) => [t.name, t.weight]));
  const gpus = pick([[1, 30], [2, 14], [4, 14], [8, 22], [16, 9], [32, 4], [64, 1.5]]);
  const est = pick([[600, 10], [1800, 20], [3600, 25], [7200, 20], [14400, 12], [28800, 5]]);
  const runtime = Math.max(60, Math.round(est * (0.4 + rand() * 0.7)));
  const job = newJob({ tenant, gpus, estimated_runtime_s: est, runtime_s: runtime, name: `${NAMES[Math.floor(rand() * NAMES.length)]}-${Math.floor(rand() * 900 + 100)}` });
  job.submitted_at -= backdate;
  return job;
}

/** Places a job on hosts; false when it does not fit now. */
function place(job) {
  const need = job.gpus;
  let chosen;
  if (need < GPUS_PER_HOST) {
    // best fit: the fullest host that still takes it (keeps whole hosts whole)
    const fit = hosts.filter((h) => h.free >= need).sort((a, b) => a.free - b.free)[0];
    if (!fit) return false;
    chosen = [[fit, need]];
  } else {
    const whole = Math.ceil(need / GPUS_PER_HOST);
    const empty = hosts.filter((h) => h.free === GPUS_PER_HOST);
    if (empty.length < whole) return false;
    // prefer one leaf that holds them all
    const byLeaf = new Map();
    for (const h of empty) byLeaf.set(h.leaf.id, [...(byLeaf.get(h.leaf.id) ?? []), h]);
    const leaf = [...byLeaf.values()].filter((l) => l.length >= whole).sort((a, b) => a.length - b.length)[0];
    const set = (leaf ?? empty).slice(0, whole);
    chosen = set.map((h, i) => [h, i === whole - 1 && need % GPUS_PER_HOST ? need % GPUS_PER_HOST : GPUS_PER_HOST]);
  }
  job.placement = chosen.map(([h, n]) => {
    const ids = [];
    for (let g = 0; g < GPUS_PER_HOST && ids.length < n; g++) {
      if (h.used[g] === 0) {
        h.used[g] = job.id;
        ids.push(g);
      }
    }
    h.free -= n;
    return { node: h.name, gpus: ids };
  });
  return true;
}

function release(job) {
  for (const p of job.placement) {
    const h = hosts.find((x) => x.name === p.node);
    for (const g of p.gpus) h.used[g] = 0;
    h.free += p.gpus.length;
  }
}

function byState(state) {
  const out = [];
  for (const j of jobs.values()) if (j.state === state) out.push(j);
  return out;
}

let lastCycleAt = simNow();
function cycle() {
  const now = simNow();
  const dt = now - lastCycleAt;
  lastCycleAt = now;
  cycles++;
  // finish and cancel
  for (const j of byState('running')) {
    if (j.cancel_requested || now >= j.started_at + j.runtime_s) {
      release(j);
      j.state = j.cancel_requested ? 'cancelled' : 'succeeded';
      j.ended_at = now;
    }
  }
  for (const j of [...byState('pending'), ...byState('accepted')]) {
    if (j.cancel_requested) {
      j.state = 'cancelled';
      j.ended_at = now;
    } else if (j.state === 'accepted') j.state = 'pending';
  }
  // arrivals from the "trace": a load that swings over 4 wall minutes so
  // allocation moves (about 2.6 jobs a wall second keep it 75-95% busy)
  const wall = (Date.now() - WALL_START) / 1000;
  const rate = 2.6 * (1 + 0.5 * Math.sin((2 * Math.PI * wall) / 240));
  const arrivals = poisson(rate);
  for (let k = 0; k < arrivals && byState('pending').length < 90; k++) traceJob();
  // FIFO by priority with backfill, but a tenant far above its floor waits
  const queue = byState('pending').sort((a, b) => b.priority - a.priority || a.id - b.id);
  const use = usage();
  for (const j of queue) {
    const t = tenantByName.get(j.tenant);
    if (use.get(j.tenant) + j.gpus > t.floor_gpus * 2.5 && j.source === 'trace') continue;
    if (place(j)) {
      j.state = 'running';
      j.started_at = now;
      use.set(j.tenant, use.get(j.tenant) + j.gpus);
    }
  }
  // billing: each tenant pays its GPUs at its tier's price
  for (const t of tenants) {
    const price = prices.find((p) => p.tier === t.tier).micro;
    t.balance_micro -= (BigInt(use.get(t.name)) * price * BigInt(dt)) / 3600n;
  }
  // the market announces a price every 30 daemon minutes
  if (now - lastPriceAt >= 1800) {
    lastPriceAt = now;
    const alloc = allocated() / TOTAL_GPUS;
    for (const p of prices) {
      const base = BASE_PRICE[p.tier];
      p.micro = walk(p.micro + BigInt(Math.round((alloc - 0.85) * 0.03 * Number(base))), base);
      p.history.push({ at: now, micro: p.micro });
    }
  }
  // keep memory bounded: drop the oldest finished jobs
  if (jobs.size > 20000) {
    for (const [id, j] of jobs) {
      if (jobs.size <= 15000) break;
      if (j.ended_at !== null) jobs.delete(id);
    }
  }
}

function poisson(mean) {
  const limit = Math.exp(-mean);
  let k = 0;
  for (let p = rand(); p > limit; p *= rand()) k++;
  return k;
}

function usage() {
  const use = new Map(tenants.map((t) => [t.name, 0]));
  for (const j of byState('running')) use.set(j.tenant, use.get(j.tenant) + j.gpus);
  return use;
}
const allocated = () => hosts.reduce((s, h) => s + (GPUS_PER_HOST - h.free), 0);
const fragmented = (hs) => hs.reduce((s, h) => s + (h.free > 0 && h.free < GPUS_PER_HOST ? h.free : 0), 0);

// warm start: a busy cluster with a history of submissions
for (let k = 0; k < 400 && byState('pending').length < 40; k++) {
  const j = traceJob(Math.floor(rand() * 7200));
  if (allocated() + j.gpus <= TOTAL_GPUS * 0.82 && place(j)) {
    j.state = 'running';
    j.started_at = j.submitted_at + Math.floor(rand() * 300);
    j.runtime_s = Math.max(j.runtime_s, simNow() - j.started_at + 300 + Math.floor(rand() * 3000));
  }
}
setInterval(cycle, 1000).unref();

// ------------------------------------------------------------ endpoints --

class HttpError extends Error {
  constructor(status, code, message, field) {
    super(message);
    Object.assign(this, { status, code, field });
  }
}
const bad = (message, field) => new HttpError(400, 'invalid_argument', message, field);

function clusterJson() {
  const gpusAllocated = allocated();
  return {
    now: simNow(),
    speed: opts.speed,
    nodes: hosts.length,
    gpus: TOTAL_GPUS,
    gpus_allocated: gpusAllocated,
    allocation_ratio: Math.round((gpusAllocated / TOTAL_GPUS) * 1e4) / 1e4,
    fragmentation_ratio: Math.round((fragmented(hosts) / TOTAL_GPUS) * 1e4) / 1e4,
    pending_jobs: byState('pending').length + byState('accepted').length,
    running_jobs: byState('running').length,
    cycles,
  };
}

function topologyJson() {
  const under = (d) => hosts.filter((h) => h.domain === d || h.leaf === d || h.spine === d || d.level === 'core');
  return {
    levels: ['core', 'spine', 'leaf', 'host'],
    domains: domains.map((d) => {
      const hs = under(d);
      return {
        id: d.id,
        name: d.name,
        level: d.level,
        parent: d.parent,
        gpus: hs.length * GPUS_PER_HOST,
        gpus_allocated: hs.reduce((s, h) => s + (GPUS_PER_HOST - h.free), 0),
        gpus_fragmented: fragmented(hs),
      };
    }),
  };
}

function tenantJson(t, use) {
  const inUse = use.get(t.name);
  const borrowed = Math.max(0, inUse - t.floor_gpus);
  const totalBorrowed = tenants.reduce((s, x) => s + Math.max(0, use.get(x.name) - x.floor_gpus), 0);
  const idleFloor = tenants.reduce((s, x) => s + Math.max(0, x.floor_gpus - use.get(x.name)), 0);
  const spare = Math.max(0, t.floor_gpus - inUse);
  const lent = idleFloor > 0 ? Math.round((spare / idleFloor) * Math.min(totalBorrowed, idleFloor)) : 0;
  let pending = 0;
  let running = 0;
  for (const j of jobs.values()) {
    if (j.tenant !== t.name) continue;
    if (j.state === 'pending' || j.state === 'accepted') pending++;
    if (j.state === 'running') running++;
  }
  return {
    name: t.name, parent: t.parent, tier: t.tier, floor_gpus: t.floor_gpus, in_use_gpus: inUse,
    borrowed_gpus: borrowed, lent_gpus: lent, pending_jobs: pending, running_jobs: running, balance: micro(t.balance_micro),
  };
}

function publicJob(j) {
  const { runtime_s, ...rest } = j;
  return rest;
}

function explainJson(j) {
  const now = simNow();
  const causes = [];
  if (j.state === 'pending' || j.state === 'accepted') {
    const use = usage();
    const t = tenantByName.get(j.tenant);
    const free = TOTAL_GPUS - allocated();
    const ahead = byState('pending').filter((x) => x.id < j.id && x.priority >= j.priority).length;
    const wholeFree = hosts.filter((h) => h.free === GPUS_PER_HOST).length * GPUS_PER_HOST;
    const largestHost = Math.max(...hosts.map((h) => h.free));
    if (j.gpus > free) causes.push({ kind: 'capacity', detail: `needs ${j.gpus} GPUs; ${free} of ${TOTAL_GPUS} are free`, shortfall: j.gpus - free, resolvable: true });
    else if (j.gpus >= GPUS_PER_HOST && j.gpus > wholeFree) causes.push({ kind: 'fragmentation', detail: `needs ${Math.ceil(j.gpus / 8)} whole hosts; free GPUs are spread over partly used hosts (${wholeFree} GPUs on empty hosts)`, shortfall: j.gpus - wholeFree, resolvable: true });
    else if (j.gpus < GPUS_PER_HOST && j.gpus > largestHost) causes.push({ kind: 'fragmentation', detail: `needs ${j.gpus} GPUs on one host; the emptiest host has ${largestHost} free`, shortfall: j.gpus - largestHost, resolvable: true });
    if (use.get(j.tenant) + j.gpus > t.floor_gpus) causes.push({ kind: 'quota', detail: `tenant ${j.tenant} uses ${use.get(j.tenant)} GPUs over a floor of ${t.floor_gpus}; borrowing needs idle floor elsewhere`, shortfall: use.get(j.tenant) + j.gpus - t.floor_gpus, resolvable: true });
    if (ahead > 0) causes.push({ kind: 'ordering', detail: `${ahead} job${ahead === 1 ? '' : 's'} of equal or higher priority ahead in the queue`, shortfall: 0, resolvable: true });
    if (causes.length === 0) causes.push({ kind: 'cycle', detail: 'fits now; waiting for the next scheduling cycle', shortfall: 0, resolvable: true });
  }
  const waitP50 = 120 + causes.length * 600 + Math.floor(j.gpus * 40 * (0.8 + rand() * 0.4));
  return {
    job_id: j.id,
    state: j.state,
    now,
    causes,
    start_estimate: j.state === 'pending' || j.state === 'accepted' ? { p50: now + waitP50, p90: now + Math.round(waitP50 * 2.6), samples: 20 } : null,
  };
}

const JOB_FIELDS = new Set(['name', 'tenant', 'gpus', 'gpu_milli', 'gpu_model', 'priority', 'estimated_runtime_s', 'runtime_s', 'topology', 'single_node', 'idempotency_key']);
const intIn = (body, field, lo, hi) => {
  const v = body[field];
  if (!Number.isInteger(v) || v < lo || v > hi) throw bad(`field '${field}' must be an integer from ${lo} to ${hi.toLocaleString('en-US')}`, field);
  return v;
};

function submit(body, headerKey) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('the body must be a JSON object');
  for (const k of Object.keys(body)) if (!JOB_FIELDS.has(k)) throw bad(`unknown field '${k}'`, k);
  if (typeof body.tenant !== 'string' || body.tenant === '') throw bad("field 'tenant' is required", 'tenant');
  if (!tenantByName.has(body.tenant)) throw new HttpError(404, 'not_found', `tenant '${body.tenant}' not found`, 'tenant');
  if (body.gpu_milli !== undefined) throw bad("field 'gpu_milli' is not supported by the mock", 'gpu_milli');
  const gpus = intIn(body, 'gpus', 1, 100000);
  const est = intIn(body, 'estimated_runtime_s', 1, 31536000);
  const runtime = body.runtime_s === undefined ? est : intIn(body, 'runtime_s', 1, 31536000);
  const priority = body.priority === undefined ? 0 : intIn(body, 'priority', -1000, 1000);
  if (body.name !== undefined && (typeof body.name !== 'string' || body.name.length > 128)) throw bad("field 'name' must be a string of at most 128 characters", 'name');
  const key = body.idempotency_key ?? headerKey;
  const canonical = JSON.stringify({ ...body, idempotency_key: undefined });
  if (key !== undefined) {
    const seen = idempotency.get(key);
    if (seen) {
      if (seen.body !== canonical) throw new HttpError(409, 'conflict', 'idempotency key reused with a different body', 'idempotency_key');
      return [200, publicJob(jobs.get(seen.id))];
    }
  }
  const gpuModel = body.gpu_model === undefined ? ['H100'] : [body.gpu_model].flat();
  const job = newJob({ tenant: body.tenant, gpus, estimated_runtime_s: est, runtime_s: runtime, name: body.name ?? '', source: 'api', state: 'accepted', priority, gpu_model: gpuModel });
  if (key !== undefined) idempotency.set(key, { id: job.id, body: canonical });
  return [201, publicJob(job)];
}

function listJobs(q) {
  const state = q.get('state') || '';
  const tenant = q.get('tenant') || '';
  const limitText = q.get('limit') ?? '100';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000) throw bad("field 'limit' must be an integer from 1 to 1000", 'limit');
  if (state && !['accepted', 'pending', 'running', 'succeeded', 'cancelled', 'failed'].includes(state)) throw bad(`field 'state' must be one of accepted, pending, running, succeeded, cancelled, failed`, 'state');
  const token = q.get('page_token') || '';
  let offset = 0;
  if (token) {
    const m = /^o(\d+)$/.exec(Buffer.from(token, 'base64url').toString());
    if (!m) throw bad("field 'page_token' is not a token this server issued", 'page_token');
    offset = Number(m[1]);
  }
  const all = [...jobs.values()].filter((j) => (!state || j.state === state) && (!tenant || j.tenant === tenant)).sort((a, b) => b.id - a.id);
  const page = all.slice(offset, offset + limit);
  const next = offset + limit < all.length ? Buffer.from(`o${offset + limit}`).toString('base64url') : '';
  return { jobs: page.map(publicJob), next_page_token: next };
}

function reportHtml(name, title, rows) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#1e293b}h1{font-size:20px}table{border-collapse:collapse}
td,th{border:1px solid #e4e7ec;padding:6px 12px;text-align:right}th{background:#f8fafc}td:first-child,th:first-child{text-align:left}</style></head>
<body><h1>${title}</h1><p>Simulation report <code>${name}</code> (canned by the mock server).</p>
<table><tr><th>policy</th><th>mean wait (s)</th><th>p99 wait (s)</th><th>allocation</th></tr>
${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('\n')}</table>
<p id="js">scripts: off</p><script>document.getElementById('js').textContent='scripts: on (rendered ' + new Date().toISOString() + ')';</script>
</body></html>`;
}
const REPORTS = {
  colocate: reportHtml('colocate', 'Colocation: inference next to training', [['none', 412, 3810, '71.2%'], ['pack', 301, 2950, '78.9%'], ['spread', 344, 3122, '76.4%']]),
  fill: reportHtml('fill', 'Backfill policies on the Alibaba trace', [['fifo', 905, 9120, '68.0%'], ['easy', 388, 4410, '80.3%'], ['conservative', 455, 5020, '79.1%']]),
  market: reportHtml('market', 'Market: prices under contention', [['fixed', 520, 6200, '74.5%'], ['auction', 470, 5100, '81.7%']]),
};

function openapi() {
  return { openapi: '3.0.3', info: { title: 'tidal serve (mock)', version: '0' }, paths: Object.fromEntries(['/v1/cluster', '/v1/cluster/nodes', '/v1/cluster/topology', '/v1/jobs', '/v1/jobs/{id}', '/v1/jobs/{id}/explain', '/v1/jobs/{id}/cancel', '/v1/tenants', '/v1/tenants/{name}', '/v1/tenants/{name}/statement', '/v1/prices', '/v1/prices/history', '/v1/reports', '/v1/whoami'].map((p) => [p, {}])) };
}

/** The authenticated routes: [status, json] or throws HttpError. */
function route(method, path, q, body, req) {
  const jobMatch = /^\/v1\/jobs\/(\d+)(\/explain|\/cancel)?$/.exec(path);
  const tenantMatch = /^\/v1\/tenants\/([^/]+)(\/statement)?$/.exec(path);
  const only = (m) => {
    if (method !== m) throw new HttpError(405, 'invalid_argument', `${method} is not allowed on ${path}`);
  };
  if (path === '/v1/cluster') return only('GET'), [200, clusterJson()];
  if (path === '/v1/cluster/topology') return only('GET'), [200, topologyJson()];
  if (path === '/v1/cluster/nodes') {
    only('GET');
    return [200, { nodes: hosts.map((h) => ({ name: h.name, gpu_model: 'H100', gpus: GPUS_PER_HOST, gpus_free: h.free, domains: [h.spine.name, h.leaf.name] })) }];
  }
  if (path === '/v1/jobs') {
    if (method === 'POST') return submit(body(), req.headers['idempotency-key']);
    only('GET');
    return [200, listJobs(q)];
  }
  if (jobMatch) {
    const j = jobs.get(Number(jobMatch[1]));
    if (!j) throw new HttpError(404, 'not_found', `job ${jobMatch[1]} not found`);
    if (jobMatch[2] === '/explain') return only('GET'), [200, explainJson(j)];
    if (jobMatch[2] === '/cancel' || method === 'DELETE') {
      if (jobMatch[2] === '/cancel') only('POST');
      if (!['succeeded', 'cancelled', 'failed'].includes(j.state)) j.cancel_requested = true;
      return [202, publicJob(j)];
    }
    only('GET');
    return [200, publicJob(j)];
  }
  if (path === '/v1/tenants') {
    only('GET');
    const use = usage();
    return [200, { tenants: tenants.map((t) => tenantJson(t, use)) }];
  }
  if (tenantMatch) {
    only('GET');
    const t = tenantByName.get(decodeURIComponent(tenantMatch[1]));
    if (!t) throw new HttpError(404, 'not_found', `tenant '${tenantMatch[1]}' not found`);
    if (!tenantMatch[2]) return [200, tenantJson(t, usage())];
    return [200, { entries: [{ id: 1, at: SIM_START, amount: micro(t.balance_micro), balance_after: micro(t.balance_micro), kind: 'snapshot', counterparty: 'market', memo: 'mock ledger' }] }];
  }
  if (path === '/v1/prices') {
    only('GET');
    return [200, { prices: prices.map((p) => ({ gpu_model: p.gpu_model, tier: p.tier, per_gpu_hour: micro(p.micro) })) }];
  }
  if (path === '/v1/prices/history') {
    only('GET');
    const model = q.get('gpu_model');
    const tier = q.get('tier');
    if (!model) throw bad("field 'gpu_model' is required", 'gpu_model');
    if (!tier) throw bad("field 'tier' is required", 'tier');
    const p = prices.find((x) => x.gpu_model === model && x.tier === tier);
    if (!p) throw new HttpError(404, 'not_found', `no price for ${model}/${tier}`);
    return [200, { points: p.history.map((h) => ({ at: h.at, per_gpu_hour: micro(h.micro) })) }];
  }
  if (path === '/v1/reports') {
    only('GET');
    return [200, { reports: Object.keys(REPORTS).map((name) => ({ name, url: `/reports/${name}/report.html` })) }];
  }
  if (path === '/v1/whoami') return only('GET'), [200, { id: 'dev00001', role: 'admin', tenant: null, name: 'dev' }];
  throw new HttpError(404, 'not_found', `no such endpoint: ${method} ${path}`);
}

// --------------------------------------------------------------- server --

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.woff2': 'font/woff2' };

function send(res, status, json, extra = {}) {
  const text = JSON.stringify(json);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text), ...extra });
  res.end(text);
}
const sendError = (res, e) => {
  const extra = e.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {};
  send(res, e.status, { error: { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) } }, extra);
};

async function serveStatic(res, path) {
  const rel = normalize(decodeURIComponent(path)).replace(/^([/\\])+/, '');
  let file = join(opts.dist, rel);
  if (!file.startsWith(opts.dist + sep) && file !== opts.dist) return send(res, 404, { error: { code: 'not_found', message: 'not found' } });
  try {
    if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
  } catch {
    file = join(opts.dist, 'index.html'); // single page app: unknown paths get the page
  }
  try {
    const data = await readFile(file);
    const immutable = file.includes(`${sep}assets${sep}`);
    res.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream', 'Cache-Control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache' });
    res.end(data);
  } catch {
    res.writeHead(503, { 'Content-Type': 'text/plain' });
    res.end(`web/dist is not built (looked in ${opts.dist}); run npm run build in web/\n`);
  }
}

const server = createServer((req, res) => {
  const started = Date.now();
  const url = new URL(req.url, 'http://mock');
  const path = url.pathname;
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size <= 65536) chunks.push(c);
  });
  req.on('end', async () => {
    try {
      if (opts.log) res.on('finish', () => console.log(`${req.method} ${req.url} ${res.statusCode} ${Date.now() - started}ms`));
      if (path === '/healthz') return send(res, 200, { ok: true });
      if (path === '/metrics') {
        res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
        return res.end(`tidal_gpus ${TOTAL_GPUS}\ntidal_gpus_allocated ${allocated()}\ntidal_cycles_total ${cycles}\n`);
      }
      if (path === '/v1/openapi.json') return send(res, 200, openapi());
      const api = path.startsWith('/v1/') || path === '/v1';
      const report = path.startsWith('/reports/');
      if (!api && !report) return await serveStatic(res, path);
      if (req.headers.authorization !== `Bearer ${opts.token}`) {
        throw new HttpError(401, 'unauthenticated', req.headers.authorization ? 'the token is not valid' : 'missing Authorization: Bearer token');
      }
      if (opts.fail.some((p) => path.startsWith(p))) throw new HttpError(503, 'unavailable', `mock failure injected for ${path} (--fail)`);
      if (report) {
        const m = /^\/reports\/([^/]+)\/report\.html$/.exec(path);
        if (!m || !REPORTS[m[1]]) throw new HttpError(404, 'not_found', `no report at ${path}`);
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
        return res.end(REPORTS[m[1]]);
      }
      const body = () => {
        if (size > 65536) throw new HttpError(413, 'payload_too_large', 'bodies are at most 64 KiB');
        if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'unsupported_media_type', 'send Content-Type: application/json');
        try {
          return JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch (e) {
          throw bad(`the body is not JSON (${e.message})`);
        }
      };
      const [status, json] = route(req.method, path, url.searchParams, body, req);
      send(res, status, json);
    } catch (e) {
      if (e instanceof HttpError) sendError(res, e);
      else {
        console.error(e);
        sendError(res, new HttpError(500, 'internal', 'mock server error'));
      }
    }
  });
});

server.listen(opts.port, opts.host, () => {
  console.log(`mock tidal serve: ${hosts.length} hosts, ${TOTAL_GPUS} GPUs, ${tenants.length} tenants, speed ${opts.speed}x`);
  console.log(`dashboard: http://${opts.host}:${opts.port}/#token=${opts.token}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
